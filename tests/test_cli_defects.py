"""Defects a new user met at the command line (issue 32): settings refused in the words a person sets them."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.app import App
from bot.cli import _parser, quiet_discord_voice
from bot.config import Settings, settings_problems

BAD = {
    "HIPPOBOT_DREAM_HOUR": "25",
    "HIPPOBOT_TEMPERATURE": "hot",
    "HIPPOBOT_ENGINE": "gpt",
    "HIPPOBOT_DREAM_TIMEZONE": "Mars/Base",
    "HIPPOBOT_DISCORD_ALLOWED_CHANNELS": "123,general",
    "HIPPOBOT_SEED": "x",
    "HIPPOBOT_LLM_URL": "ftp://models.example",
}


@pytest.fixture
def bad_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    for name, value in BAD.items():
        monkeypatch.setenv(name, value)


def test_a_bad_setting_is_named_by_its_variable_with_what_it_accepts(bad_environment: None) -> None:  # issue 32.11
    with pytest.raises(ValidationError) as caught:
        Settings()
    said = settings_problems(caught.value)
    assert said.splitlines() == [  # in the order pydantic checks them; one line each
        "  HIPPOBOT_DISCORD_ALLOWED_CHANNELS='123,general': 'general' is not a channel id (channel ids are numbers, "
        "separated by commas)",
        "  HIPPOBOT_ENGINE='gpt': expected one of auto, llamacpp, transformers, openai",
        "  HIPPOBOT_LLM_URL='ftp://models.example': must start with http:// or https://, e.g. http://localhost:8080/v1",
        "  HIPPOBOT_TEMPERATURE='hot': expected a number from 0 to 2",
        "  HIPPOBOT_SEED='x': expected a whole number, or unset",
        "  HIPPOBOT_DREAM_HOUR='25': expected a whole number from 0 to 23",
        "  HIPPOBOT_DREAM_TIMEZONE='Mars/Base': unknown time zone (use an IANA name such as Europe/Berlin or UTC)",
    ]
    assert "pydantic" not in said and "http" not in said.replace("http://", "").replace("https://", "")


def test_the_command_line_says_it_so_before_anything_starts(
    bad_environment: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    assert main(["migrate"]) == 2
    err = capsys.readouterr().err
    assert "HIPPOBOT_DREAM_HOUR='25': expected a whole number from 0 to 23" in err
    assert "dream_hour" not in err and "errors.pydantic.dev" not in err and "type=" not in err


def test_an_ask_line_now_outside_the_calendar_is_refused_and_a_lower_case_z_is_utc(tmp_path: Path) -> None:
    """`hippobot ask` bounds a line's "now" as --now is bounded (1970-2200), and reads "z" as UTC (issue 32.20,
    32.22)."""
    from datetime import UTC, datetime

    from bot.ask_cli import read_lines
    from bot.config import Settings
    from memory.clock import parse_instant

    assert parse_instant("2024-01-02T03:04:05z") == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"text": "hi", "now": "9999-12-31T23:59:59Z"}\n{"text": "ok", "now": "2024-01-02T00:00:00z"}\n')
    with pytest.raises(ValueError, match="line 1"):
        read_lines(queries, Settings(_env_file=None))
    queries.write_text('{"text": "ok", "now": "2024-01-02T00:00:00z"}\n')
    assert read_lines(queries, Settings(_env_file=None))[0].now == datetime(2024, 1, 2, tzinfo=UTC)


def test_docs_settings_is_generated_from_the_settings_own_descriptions() -> None:  # issue 31.3
    from bot.config import settings_markdown

    undescribed = [name for name, field in Settings.model_fields.items() if not (field.description or "").strip()]
    assert not undescribed, f"settings without a description: {undescribed}"
    page = (Path(__file__).resolve().parents[1] / "docs" / "settings.md").read_text(encoding="utf-8")
    assert page == settings_markdown(), "docs/settings.md is stale: run `python -m bot.config > docs/settings.md`"
    for name in Settings.model_fields:
        assert f"| `HIPPOBOT_{name.upper()}` |" in page


def test_the_readme_lists_every_command_the_cli_has() -> None:
    # `hippobot mine` was in --help and docs/commands.md but not in the README's command list.
    [sub] = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    block = readme.split("## Commands", 1)[1].split("```")[1]
    listed = {line.split()[1] for line in block.splitlines() if line.startswith("hippobot ")}
    assert set(sub.choices) <= listed


def test_run_does_not_warn_that_voice_is_unsupported(caplog: pytest.LogCaptureFixture) -> None:
    # `hippobot run` opened with two WARNING lines: PyNaCl and davey, which only voice needs, are not installed.
    quiet_discord_voice()
    log = logging.getLogger("discord.client")
    with caplog.at_level(logging.WARNING):
        log.warning("PyNaCl is not installed, voice will NOT be supported")
        log.warning("Shard ID %s heartbeat blocked for more than %s seconds.", None, 10)
    assert [r.getMessage() for r in caplog.records] == ["Shard ID None heartbeat blocked for more than 10 seconds."]


async def test_recall_from_a_channel_named_as_places_names_it_sees_that_channels_memories(
    app: App, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new user's probe: after importing a DiscordChatExporter export of #mods (id 555) as private,
    `hippobot recall ... --channel '#mods'` took '#mods' for an id nobody used and showed nothing of it, as if
    asked in public, while `places --channel '#mods'` found the channel; an unknown name is now refused."""
    import json

    from bot import cli
    from tests.conftest import make_settings

    export = tmp_path / "mods.json"
    export.write_text(
        json.dumps(
            {
                "guild": {"id": "900", "name": "G"},
                "channel": {"id": "555", "name": "mods"},
                "messages": [
                    {
                        "id": "7001",
                        "type": "Default",
                        "timestamp": "2026-11-21T09:00:00Z",
                        "content": "The moderator rota: Kim covers Tuesdays",
                        "author": {"id": "42", "name": "kim", "isBot": False},
                    }
                ],
            }
        )
    )
    await app.importer.run(export, "g1", private_channels=["555"])
    capsys.readouterr()
    settings = make_settings(db_url, tmp_path)
    asked = argparse.Namespace(
        text="who covers tuesdays?", queries=None, k=None, scope="g1", channel="#mods", user="you", json=True, now=None
    )
    assert await cli._recall(settings, asked) == 0
    assert "Kim covers Tuesdays" in capsys.readouterr().out
    assert await cli._recall(settings, argparse.Namespace(**{**vars(asked), "channel": "#nowhere"})) == 2
    assert "--channel #nowhere: no channel of that id or name" in capsys.readouterr().err
    # a numbered channel's mention is shown by its name in a terminal (P9: a place line read "<#555>")
    from bot.console import channels_named

    assert await app.conversations.channel_names("g1") == {"555": "mods"}
    assert channels_named("place [] <#555>: about rota; <#9>", {"555": "mods"}) == "place [] #mods: about rota; <#9>"


async def test_recall_as_a_user_of_the_history_finds_their_facts(
    app: App, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """P9: `recall "where do I work?" --user ana` found none of ana's imported facts: --user is the history's person
    of that name, as in chat and ask (``bot.console.console_person``)."""
    from bot import cli
    from tests.conftest import make_settings
    from tests.test_importer import write_jsonl

    said = {"channel": "general", "author": {"id": "42", "name": "kim"}, "timestamp": "2026-11-21T09:00:00Z"}
    await app.importer.run(
        write_jsonl(tmp_path / "h.jsonl", [{**said, "id": "1", "text": "I work at the harbour office."}]), "g1"
    )
    capsys.readouterr()
    settings = make_settings(db_url, tmp_path)
    asked = argparse.Namespace(
        text="where do I work?", queries=None, k=None, scope="g1", channel=None, user="kim", json=False, now=None
    )
    assert await cli._recall(settings, asked) == 0
    shown = capsys.readouterr().out
    assert "[user] kim works at harbour office" in shown, shown


def test_every_argument_of_every_command_says_what_it_is() -> None:
    """`hippobot import --help` listed FILE and `recall --help` TEXT with no word on what they are (a new
    user's probe)."""
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    silent = [
        f"{name} {action.dest}"
        for name, sub in commands.choices.items()
        for action in sub._actions
        if not action.help and not isinstance(action, argparse._HelpAction)
    ]
    assert silent == []
