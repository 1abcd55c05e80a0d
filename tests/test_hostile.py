"""Hostile input gets one clear line and an exit status, never a traceback, and loses nothing.

Every case of the trust issue's opening list: NUL in ids, a DiscordChatExporter
file whose channel is a string, JSON nested 100,000 deep, a lone surrogate,
years 1 and 9999, 3,000-character ids and scopes, a non-boolean "bot", and
in the console an invalid UTF-8 line, `/approve ²` and an approve number past
a bigint, after which the console goes on to the next line.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.app import App
from bot.cli import main
from bot.console import Console, ConsoleIdentity
from memory.errors import ImportFileError, ScopeError
from memory.importer import parse_import_file
from tests.fakes import ScriptedLLM
from tests.test_cli import env, run_cli  # noqa: F401  (the fixture)

GOOD = {"id": "1", "channel": "general", "author": "ana", "timestamp": "2026-10-01T10:00:00Z", "text": "hello"}
DEEP = "[" * 100_000 + "]" * 100_000


def jsonl(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


BAD_RECORDS = {
    "NUL in id": ({**GOOD, "id": "a\x00b"}, "control character"),
    "NUL in author": ({**GOOD, "author": "an\x00a"}, "control character"),
    "NUL in channel": ({**GOOD, "channel": "gen\x00eral"}, "control character"),
    "NUL in author object": ({**GOOD, "author": {"id": "7\x00", "name": "ana"}}, "control character"),
    "3,000-character channel": ({**GOOD, "channel": "c" * 3000}, "the limit is 200"),
    "3,000-character id": ({**GOOD, "id": "9" * 3000}, "the limit is 200"),
    "year 1": ({**GOOD, "timestamp": "0001-01-01T00:00:00Z"}, "outside 1970-2200"),
    "year 9999": ({**GOOD, "timestamp": "9999-12-31T23:59:59-05:00"}, "out"),
    "bot as a string": ({**GOOD, "bot": "false"}, '"bot" must be true or false'),
    "text a number": ({**GOOD, "text": 5}, "text must be a string"),
    "author a list": ({**GOOD, "author": ["ana"]}, "author must be a non-empty string"),
    "lone surrogate in id": ({**GOOD, "id": "\ud800"}, "lone surrogate"),
}


@pytest.mark.parametrize("case", BAD_RECORDS, ids=list(BAD_RECORDS))
def test_a_bad_record_is_named_by_line_and_nothing_else_happens(tmp_path: Path, case: str) -> None:
    record, why = BAD_RECORDS[case]
    with pytest.raises(ImportFileError) as info:
        parse_import_file(jsonl(tmp_path, GOOD, record), max_chars=8000)
    assert [n for n, _ in info.value.problems] == [2], info.value.problems
    assert why in str(info.value)


@pytest.mark.parametrize(("content", "why"), [
    (DEEP, "nested too deeply"),
    ('{"a":' * 60_000 + "1" + "}" * 60_000, "nested too deeply"),
    (json.dumps({"channel": "general", "messages": [{"id": "1", "author": {"id": "7"}, "timestamp": "2026-01-01T00:00:00Z",
                                                   "content": "hi"}]}), None),
    (json.dumps({"channel": "gen\x00", "messages": []}), "control character"),
    (json.dumps({"channel": {"id": "1"}, "messages": [{"id": "1", "type": ["x"], "author": {"id": "7"},
                                                      "timestamp": "2026-01-01T00:00:00Z", "content": "hi"}]}), None),
])
def test_hostile_files(tmp_path: Path, content: str, why: str | None) -> None:
    path = tmp_path / "f.json"
    path.write_text(content, encoding="utf-8")
    if why is None:  # accepted: a string channel is the channel's id, an odd message type is a message
        messages, _ = parse_import_file(path, max_chars=8000)
        assert messages[0].channel_id in ("general", "1")
        return
    with pytest.raises(ImportFileError, match=why):
        parse_import_file(path, max_chars=8000)


def test_a_lone_surrogate_in_text_is_repaired_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({**GOOD, "text": "caf\ud800e \x00ok"}) + "\n", encoding="utf-8")
    [message], _ = parse_import_file(path, max_chars=8000)
    assert message.text == "caf?e ok"
    message.text.encode("utf-8")  # storable


async def test_a_fixed_file_imports_every_good_record(app: App, tmp_path: Path) -> None:
    bad = jsonl(tmp_path, GOOD, {**GOOD, "id": "2", "bot": "false"}, {**GOOD, "id": "3", "text": "third"})
    with pytest.raises(ImportFileError):
        await app.importer.run(bad, "g1")
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages") == 0, "all or nothing"
    fixed = jsonl(tmp_path, GOOD, {**GOOD, "id": "2", "bot": False}, {**GOOD, "id": "3", "text": "third"})
    report = await app.importer.run(fixed, "g1")
    assert report.imported == 3


@pytest.mark.parametrize("scope", ["s" * 3000, "a\x00b", "tab\there", "\ud800", "  "])
def test_a_bad_scope_is_a_scope_error_everywhere(scope: str) -> None:
    from memory.conversation import require_scope

    with pytest.raises(ScopeError):
        require_scope(scope)


@pytest.mark.parametrize("argv", [
    ["import", "x.jsonl", "--scope", "s" * 3000],
    ["recall", "hi", "--scope", "a\x01b"],
    ["chat", "--scope", "x" * 201],
    ["dream", "--scope", " "],
    ["chat", "--user", "u" * 3000],
    ["recall", "hi", "--channel", "c\x00"],
])
def test_bad_options_are_usage_errors_before_anything_starts(argv: list[str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("hippobot ") and err.count("\n") == 1 and "Traceback" not in err


def test_recall_queries_with_hostile_lines_name_the_line(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    for content, why in ((DEEP + "\n", "line 1: JSON nested too deeply"),
                         (json.dumps({"text": "hi", "scope": "s" * 3000}) + "\n", "line 1: \"scope\" is 3,000"),
                         ('{"text": "ok"}\n' + json.dumps({"text": "x", "scope": "a\x00"}) + "\n", "line 2:")):
        path = tmp_path / "q.jsonl"
        path.write_text(content, encoding="utf-8")
        result = run_cli(["recall", "--queries", str(path)], env)
        assert result.returncode == 2 and why in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_a_hostile_import_file_exits_1_with_one_line(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    path = jsonl(tmp_path, {**GOOD, "channel": "c\x00"})
    result = run_cli(["import", str(path), "--scope", "g1"], env)
    assert result.returncode == 1 and "control character" in result.stderr and "Traceback" not in result.stderr


async def test_the_console_goes_on_after_hostile_commands(app: App, llm: ScriptedLLM) -> None:
    lines = "/approve ²\n/approve 99999999999999999999999\n/approve #12345678901234\n/reject\nhello there\n"
    out, err = io.StringIO(), io.StringIO()
    console = Console(app.brain, ConsoleIdentity("ana", "console", "g1"), io.StringIO(lines), out, err,
                      interactive=False, governance=app.governance, dream=app.dream, approver_role="hippobot-approver")
    assert await console.run() == 0
    text = out.getvalue()
    assert text.count("usage: /approve N") == 2 and "usage: /reject N" in text
    assert "no proposal" in (text + err.getvalue()).lower() or "12345678901234" in err.getvalue()
    assert f"hippobot: {llm.reply}" in text, "the next line is still answered"
    assert "Traceback" not in err.getvalue()


@pytest.mark.model
def test_hippobot_chat_survives_invalid_utf8_and_bad_approvals(env: dict[str, str]) -> None:  # noqa: F811
    stdin = b"\xff\xfe my cat is called Miso\n/approve \xc2\xb2\n/approve 99999999999999999999999\nstill here?\n"
    result = subprocess.run([sys.executable, "-m", "bot.cli", "chat"], input=stdin, env=env, capture_output=True,
                            timeout=300)
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0 and "Traceback" not in err, err
    assert out.count("usage: /approve N") == 2
    assert out.count("hippobot: ") == 2, out  # both messages answered, the undecodable one included
