"""Year 9999 refused as itself, not only where converting it to UTC happens to overflow.

tests/test_hostile.py's year-9999 case carries an offset (-05:00), so the
OverflowError handler in memory/importer.py refuses it even without the year
check in memory/fields.py; these cases fail without that check.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.app import App
from memory.conversation import NewMessage
from memory.errors import ImportFileError, InvalidInput
from memory.importer import parse_import_file
from tests.test_cli import env, run_cli  # noqa: F401  (the fixture)

GOOD = {"id": "1", "channel": "general", "author": "ana", "timestamp": "2026-10-01T10:00:00Z", "text": "hello"}


@pytest.mark.parametrize("timestamp", ["9999-12-31T23:59:59Z", "9999-01-01T00:00:00+00:00", "0001-01-01T00:00:00Z"])
def test_a_record_in_year_9999_or_1_in_utc_is_named_by_line(tmp_path: Path, timestamp: str) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(
        json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "id": "2", "timestamp": timestamp}) + "\n", encoding="utf-8"
    )
    with pytest.raises(ImportFileError) as info:
        parse_import_file(path, max_chars=8000)
    assert [n for n, _ in info.value.problems] == [2], info.value.problems
    assert "outside 1970-2200" in str(info.value)


async def test_the_store_refuses_a_message_in_year_9999(app: App) -> None:
    message = NewMessage(
        scope="g1",
        source="console",
        external_id="m1",
        channel_id="c",
        author_id="a",
        author_name="ana",
        content="hello",
        created_at=datetime(9999, 12, 31, 23, 59, tzinfo=UTC),
    )
    with pytest.raises(InvalidInput, match="the message's time in the year 9999"):
        await app.conversations.add(message)
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages") == 0


def test_importing_year_9999_exits_1_with_one_line(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps({**GOOD, "timestamp": "9999-12-31T23:59:59Z"}) + "\n", encoding="utf-8")
    result = run_cli(["import", str(path), "--scope", "g1"], env)
    assert result.returncode == 1 and "outside 1970-2200" in result.stderr and "Traceback" not in result.stderr, (
        result.stderr
    )


@pytest.mark.parametrize("command", [["recall", "hi"], ["dream"], ["chat"], ["import", "h.jsonl"]])
@pytest.mark.parametrize("now", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2200-12-31T23:00:00-05:00"])
def test_a_now_outside_1970_2200_is_a_usage_error(
    command: list[str], now: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32.20: --now is bounded as an import's timestamps are, by the parser, before anything starts
    (the parser alone: without the bound, main() would open the default data directory)."""
    from bot.cli import _parser

    with pytest.raises(SystemExit) as info:
        _parser().parse_args([*command, "--now", now])
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"argument --now: {now!r} is outside the years 1970-2200" in err, err


def test_a_now_inside_1970_2200_is_taken() -> None:
    from bot.cli import _parser

    args = _parser().parse_args(["recall", "hi", "--now", "2200-12-31T23:59:59Z"])
    assert args.now == datetime(2200, 12, 31, 23, 59, 59, tzinfo=UTC)


@pytest.mark.parametrize("when", ["3000 years ago", "in december 9999", "in may 0000"])
async def test_recalling_a_time_outside_the_calendar_recalls_without_a_time(
    app: App, tmp_path: Path, when: str
) -> None:
    """Issue 32.20: what `hippobot recall` and a chat turn run; it raised OverflowError / ValueError."""
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps({**GOOD, "text": "I moved to Porto with my sister"}) + "\n", encoding="utf-8")
    await app.importer.run(path, "g1")
    bundle = await app.brain.context(f"where did I move {when}?", "g1", k=3)
    assert any("Porto" in hit.episode.content for hit in bundle.episodes)
