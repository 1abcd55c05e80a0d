"""Every "now" comes from the injected Clock (memory/clock.py): no module reads the wall clock itself."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import numpy as np

from memory.conversation import ConversationStore, NewMessage
from memory.episodic import EpisodicStore, NewEpisode

T0 = datetime(2027, 3, 2, 12, 0, tzinfo=UTC)  # after the wall clock: a reading of it would show


def test_no_module_reads_the_wall_clock_but_the_clock() -> None:
    """Issue 31.1: datetime.now, utcnow, time.time and date.today stand for "now"; only memory/clock.py's
    SystemClock reads them (monotonic timers, which measure durations, are not "now")."""
    root = Path(__file__).resolve().parents[1]
    wall = re.compile(r"datetime\.now\(|\butcnow\(|\btime\.time\(|\bdate\.today\(|datetime\.today\(")
    found = [
        f"{path.relative_to(root)}:{n}"
        for d in ("bot", "memory", "dream")
        for path in (root / d).rglob("*.py")
        if path != root / "memory" / "clock.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if wall.search(line)
    ]
    assert found == []


async def test_pinning_reinforces_an_episode_at_the_given_now(pool: asyncpg.Pool) -> None:
    """/memory pin reinforces at the app's now, not the database server's: a pinned episode's clock is the
    decay's (dream.replay measures elapsed time from it)."""
    message = await ConversationStore(pool).add(
        NewMessage("g1", "import", "m1", "c1", "u1", "Ana", "my flat is on Elm Street", T0)
    )
    episodes = EpisodicStore(pool)
    vector = np.zeros(384, dtype=np.float32)
    vector[0] = 1.0
    await episodes.add_many([NewEpisode("g1", "c1", "u1", message.id, "Ana: my flat is on Elm Street", vector, T0)])
    later = T0 + timedelta(days=30)
    assert await episodes.pin("g1", message.id, later) == 1
    row = await pool.fetchrow("SELECT pinned, last_reinforced_at FROM episodes WHERE message_id = $1", message.id)
    assert row["pinned"] and row["last_reinforced_at"] == later
