"""An import interrupted and resumed writes the episodes an uninterrupted import writes (found by the new-user
probe: a resumed import of 600 messages wrote 8 more). The import's write gate weighs a message's novelty among
the messages imported with it; the re-run measured it among only those the interruption left unabsorbed, so a
line said before the interruption and again after it looked new the second time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.app import App
from memory.absorption import AbsorbHints

LINES = [
    "the bakery on Elm sells rye bread now",
    "we watched the match at the pub last night",
    "the train to Leeds was late again this morning",
    "my cousin started a pottery class on Mondays",
    "the heating in the office broke down today",
    "the library extended its opening hours till nine",
    "found a great recipe for lentil soup with cumin",
    "the new bus route skips the market square",
    "our team finally shipped the billing migration",
    "it rained all weekend so we stayed in and played chess",
    "the dentist moved the appointment to Thursday",
    "the garden centre has tomato seedlings on sale",
    "my laptop battery only lasts two hours now",
    "the museum opens a Roman coins exhibition next month",
    "the neighbours are painting their fence green",
    "the cinema shows old westerns on Sunday afternoons",
    "bought a second hand bike with a basket",
    "the swimming pool closes for repairs in June",
    "the choir needs more tenors for the spring concert",
    "the coffee machine at work makes awful espresso",
]
# Said before the interruption and again after it: near-duplicates of the batch, so the gate weighs them low.
REPEATED = [
    "the bakery on Elm sells rye bread now!",
    "the heating in the office broke down today, again",
    "the garden centre has tomato seedlings on sale",
    "the coffee machine at work makes awful espresso",
]


def history(tmp_path: Path) -> Path:
    texts = LINES + REPEATED  # the repeats come last: after the interruption
    start = datetime(2026, 3, 1, 9, tzinfo=UTC)
    rows = [
        {
            "id": str(i + 1),
            "channel": "general",
            "author": ("ana", "ben", "cy")[i % 3],
            "timestamp": (start + timedelta(minutes=i)).isoformat(),
            "text": text,
        }
        for i, text in enumerate(texts)
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


class Killed(Exception):
    """A kill -9 in the middle of an import (a test cannot take its own process down)."""


async def episode_texts(app: App, scope: str) -> list[str]:
    rows = await app.db.pool.fetch("SELECT content FROM episodes WHERE scope = $1 ORDER BY content", scope)
    return [r["content"] for r in rows]


async def killed_part_way(app: App, path: Path, scope: str, monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """Import ``path`` into ``scope``, killed once ``after`` messages were absorbed (the rest stay unabsorbed)."""
    absorber = app.importer._absorber
    absorb = absorber.absorb
    calls = 0

    async def absorb_until_killed(message_id: int, hints: AbsorbHints | None = None) -> bool:
        nonlocal calls
        calls += 1
        if calls > after:
            raise Killed
        return await absorb(message_id, hints)

    monkeypatch.setattr(absorber, "absorb", absorb_until_killed)
    with pytest.raises(Killed):
        await app.importer.run(path, scope)
    monkeypatch.undo()


async def import_interrupted(app: App, path: Path, scope: str, monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """Import ``path`` into ``scope``, killed after ``after`` messages were absorbed, then run again."""
    await killed_part_way(app, path, scope, monkeypatch, after)
    report = await app.importer.run(path, scope)
    assert report.resumed > 0 and await app.conversations.count_unabsorbed() == 0


@pytest.mark.parametrize("after", [1, len(LINES) // 2, len(LINES) + 1])
async def test_an_import_interrupted_anywhere_writes_the_episodes_of_one_run_in_one_go(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: int
) -> None:
    path = history(tmp_path)
    await app.importer.run(path, "one-go")
    await import_interrupted(app, path, "interrupted", monkeypatch, after=after)
    whole = await episode_texts(app, "one-go")
    assert whole, "the gate admits some of this history"
    assert await episode_texts(app, "interrupted") == whole


async def test_an_interrupted_import_absorbed_at_the_next_start_writes_the_episodes_of_one_run(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not run again: the next `hippobot chat` or `run` absorbs what the kill left (App.absorb_backlog), and
    weighs each message among the messages its import stored, as the import would have."""
    path = history(tmp_path)
    await app.importer.run(path, "one-go")
    await killed_part_way(app, path, "interrupted", monkeypatch, after=len(LINES) // 2)
    assert await app.absorb_backlog() == len(LINES + REPEATED) - len(LINES) // 2
    assert await episode_texts(app, "interrupted") == await episode_texts(app, "one-go")
