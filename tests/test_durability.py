"""Nothing received is lost to a crash: `hippobot chat` killed mid-stream, started again, absorbs what it had read.

Real subprocesses, the real bundled model, the real database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from bot.config import Settings

LINES = ["My dentist is Dr. Okafor on Elm Street", "I moved to Porto in May",
         "Tell me a long story about a lighthouse keeper and the sea"]


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOBOT_")}
    e.update(HIPPOBOT_DATABASE_URL=db_url, HIPPOBOT_DATA_DIR=str(tmp_path / "data"),
             HIPPOBOT_MODELS_DIR=str(Settings(_env_file=None).model_cache_dir), HIPPOBOT_MAX_NEW_TOKENS="200",
             HIPPOBOT_SEED="3", PYTHONUNBUFFERED="1")
    return e


def start_chat(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bot.cli", "chat", "--user", "ana"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, bufsize=1)


def wait_for_replies(chat: subprocess.Popen[str], n: int, timeout: float = 300) -> str:
    """Read stdout until the bot has started its n-th reply (and written a little of it)."""
    assert chat.stdout is not None
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ch = chat.stdout.read(1)
        if not ch:
            break
        seen += ch
        if seen.count("hippobot: ") >= n and len(seen.rsplit("hippobot: ", 1)[-1]) >= 3:
            return seen
    raise AssertionError(f"no {n}th reply began: {seen!r}")


async def counts(db_url: str) -> tuple[int, int, int]:
    conn = await asyncpg.connect(db_url)
    try:
        row = await conn.fetchrow(
            """SELECT (SELECT count(*) FROM messages WHERE NOT is_bot) AS people,
                      (SELECT count(*) FROM messages WHERE NOT is_bot AND absorbed_at IS NULL) AS unabsorbed,
                      (SELECT count(*) FROM episodes) AS episodes""")
        return row["people"], row["unabsorbed"], row["episodes"]
    finally:
        await conn.close()


@pytest.mark.model
async def test_kill_9_mid_stream_loses_nothing_it_had_read(env: dict[str, str], db_url: str) -> None:
    chat = start_chat(env)
    assert chat.stdin is not None
    try:
        for line in LINES:
            chat.stdin.write(line + "\n")
        chat.stdin.flush()
        wait_for_replies(chat, len(LINES))  # the last reply is streaming now
        chat.send_signal(signal.SIGKILL)
        chat.wait(timeout=30)
    finally:
        if chat.poll() is None:
            chat.kill()
    people, unabsorbed, _ = await counts(db_url)
    assert people == len(LINES)  # every line it had read was stored before it was answered
    assert unabsorbed >= 1  # the streaming turn never reached its memory write

    again = subprocess.run([sys.executable, "-m", "bot.cli", "chat", "--user", "ana"], input="", env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "absorbing" in again.stderr
    people, unabsorbed, episodes = await counts(db_url)
    assert (people, unabsorbed) == (len(LINES), 0)
    assert episodes == len(LINES)


@pytest.mark.model
async def test_sigterm_drains_and_exits_cleanly(env: dict[str, str], db_url: str) -> None:
    chat = start_chat(env)
    assert chat.stdin is not None
    try:
        chat.stdin.write(LINES[0] + "\n")
        chat.stdin.flush()
        wait_for_replies(chat, 1)
        chat.send_signal(signal.SIGTERM)
        code = chat.wait(timeout=120)
    finally:
        if chat.poll() is None:
            chat.kill()
    assert code == 128 + signal.SIGTERM
    assert chat.stderr is not None and "Traceback" not in chat.stderr.read()
    people, unabsorbed, episodes = await counts(db_url)
    assert (people, unabsorbed, episodes) == (1, 0, 1)  # the cancelled turn was still absorbed
