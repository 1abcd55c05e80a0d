"""Issue 32, items 2 and 3: the console shows the bot's own lines, and no wait is silent.

Library progress bars and warnings stay out of the chat; a command's input
is checked before the database and the models start; a first start says
what it is doing; leaving the chat says what it waits for.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.app import App
from bot.config import Settings
from bot.console import Console, ConsoleIdentity

NOBODY = "postgresql://hippobot@127.0.0.1:1/nothing"  # a database URL nobody answers at

# What `bot.cli.main` leaves configured for every command (here, `run` refusing for want of a token), then what
# a library does while a reply streams: transformers' "Loading weights" bar, re-enabled after an earlier
# load turned it off (bot/llm.py does), and a FutureWarning.
LIBRARY_NOISE = """
import sys, warnings
from bot import cli
cli.main(sys.argv[1:])
from transformers.utils import logging as hf_logging
hf_logging.enable_progress_bar()
for _ in hf_logging.tqdm(range(3), desc="Loading weights"):
    pass
warnings.warn("a library's FutureWarning", FutureWarning)
"""


def bare_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HIPPOBOT_", "TQDM_", "HF_HUB_DISABLE"))}
    env.update(
        HIPPOBOT_DATA_DIR=str(tmp_path / "data"),
        HIPPOBOT_MODELS_DIR=str(Settings(_env_file=None).model_cache_dir),
        **extra,
    )
    return env


def cli(args: list[str], env: dict[str, str], timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
def test_library_progress_bars_and_warnings_stay_out_of_the_console(tmp_path: Path) -> None:
    quiet = subprocess.run(
        [sys.executable, "-c", LIBRARY_NOISE, "run"],
        env=bare_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "HIPPOBOT_DISCORD_TOKEN" in quiet.stderr, quiet.stderr  # main ran and refused
    assert quiet.stdout == ""
    assert "Loading weights" not in quiet.stderr and "FutureWarning" not in quiet.stderr, quiet.stderr
    verbose = subprocess.run(
        [sys.executable, "-c", LIBRARY_NOISE, "-v", "run"],
        env=bare_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert verbose.stdout == "" and "Loading weights" not in verbose.stderr
    # with -v a library's warning is a log record like any other, not a raw dump
    assert "WARNING py.warnings: " in verbose.stderr and "FutureWarning" in verbose.stderr, verbose.stderr


@pytest.mark.slow
def test_import_checks_its_file_before_starting_the_database(tmp_path: Path) -> None:
    env = bare_env(tmp_path, HIPPOBOT_DATABASE_URL=NOBODY)
    missing = cli(["import", str(tmp_path / "nowhere.jsonl")], env)
    assert missing.returncode == 1 and "cannot read" in missing.stderr, missing.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    refused = cli(["import", str(empty)], env)
    assert refused.returncode == 1 and "no messages found" in refused.stderr, refused.stderr
    good = tmp_path / "one.jsonl"
    good.write_text(
        '{"id": "1", "channel": "c", "author": "ana", "timestamp": "2026-01-01T00:00:00Z", "text": "hi"}\n',
        encoding="utf-8",
    )
    private = cli(["import", str(good), "--private-channel", "mods"], env)
    assert private.returncode == 1 and "mods" in private.stderr and "its channels: c" in private.stderr
    for result in (missing, refused, private):
        assert "cannot reach the database" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_first_start_says_what_it_is_doing_on_stderr(tmp_path: Path) -> None:
    """The embedded database is created on the first start: a line per slow step, in order, on stderr (a pipe
    here, so a later start, creating nothing, stays quiet)."""
    env = bare_env(tmp_path)
    first = cli(["recall", "hello", "--json"], env)
    assert first.returncode == 0, first.stderr
    lines = [line for line in first.stderr.splitlines() if line.startswith("hippobot: ")]
    assert lines[0].startswith("hippobot: creating the database in ") and "first start" in lines[0], lines
    assert lines[1] == "hippobot: loading the embedding model...", lines
    assert first.stdout.startswith("{")  # stdout holds the answer only
    again = cli(["recall", "hello", "--json"], env)
    assert again.returncode == 0 and "creating the database" not in again.stderr, again.stderr


async def test_leaving_the_chat_says_what_it_waits_for(app: App) -> None:
    out, err = io.StringIO(), io.StringIO()
    console = Console(
        app.brain, ConsoleIdentity("ana", "console", "local"), io.StringIO("/quit\n"), out, err, interactive=False
    )
    assert await console.run() == 0
    assert "leaving: finishing this chat's memory writes" in err.getvalue()
    assert out.getvalue() == ""


async def test_a_line_typed_in_an_imported_restricted_channel_stays_in_that_channel(app: App, tmp_path: Path) -> None:
    """A probe: `hippobot chat --channel staff`, staff imported as a private channel, stored what was typed for
    the whole scope, and a question in a public channel recalled it."""
    import json

    from bot.console import console_identity
    from tests.fakes import ScriptedLLM

    history = tmp_path / "h.jsonl"
    history.write_text(
        json.dumps(
            {
                "id": "s1",
                "channel": "staff",
                "author": "ana",
                "timestamp": "2026-10-01T10:00:00Z",
                "text": "staff meeting moved",
            }
        )
        + "\n"
    )
    await app.importer.run(history, "g1", private_channels=["staff"])
    assert isinstance(app.brain.llm, ScriptedLLM)
    app.brain.llm.reply = "Noted."
    me = await console_identity(app.conversations, ConsoleIdentity(user="ana", channel="staff", scope="g1"))
    assert me.channel_id == "staff" and me.visible_in == "staff"
    console = Console(app.brain, me, io.StringIO(), io.StringIO(), io.StringIO(), interactive=False)
    await console._chat("the vault combination is 4-8-15")
    await app.brain.drain()
    stored = await app.db.pool.fetchrow("SELECT visible_in FROM messages WHERE content LIKE '%4-8-15%'")
    assert stored is not None and stored["visible_in"] == "staff"
    public = await app.brain.context("what is the vault combination?", "g1", k=5, channel_id="general")
    assert all("4-8-15" not in i.text for i in public.items())
    staff = await app.brain.context("what is the vault combination?", "g1", k=5, channel_id="staff")
    assert any("4-8-15" in i.text for i in staff.items())
    # a channel of the console's own stays public, as before
    mine = await console_identity(app.conversations, ConsoleIdentity(user="ana", channel="lounge", scope="g1"))
    assert mine.channel_id == "console:lounge" and mine.visible_in is None


async def test_the_persona_command_the_readme_lists_shows_the_persona(app: App) -> None:
    """A new user's probe: the README lists /persona among the chat's commands, and the chat answered
    "unknown command /persona"."""
    out = io.StringIO()
    console = Console(
        app.brain,
        ConsoleIdentity("ana", "console", "local"),
        io.StringIO("/persona\n/quit\n"),
        out,
        io.StringIO(),
        interactive=False,
    )
    assert await console.run() == 0
    assert "unknown command" not in out.getvalue()
    assert "Persona of local" in out.getvalue() and "Snapshot: " in out.getvalue()
