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
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.app import App
from bot.cli import main
from bot.console import Console, ConsoleIdentity, format_bundle
from memory.conversation import NewMessage
from memory.errors import ImportFileError, InvalidInput, ScopeError
from memory.fields import clean_name, clean_text
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
    "NUL in reply_to": ({**GOOD, "reply_to": "9\x00"}, "control character"),
    "2200 at -05:00 is 2201 in UTC": ({**GOOD, "timestamp": "2200-12-31T23:59:59-05:00"}, "year 2201"),
    "a 5,000-digit id": (
        '{"id": ' + "9" * 5000 + ', "channel": "c", "author": "a", "timestamp": "2026-10-01T10:00:00Z", "text": "t"}',
        "a number in it is too long",
    ),
}


@pytest.mark.parametrize("case", BAD_RECORDS, ids=list(BAD_RECORDS))
def test_a_bad_record_is_named_by_line_and_nothing_else_happens(tmp_path: Path, case: str) -> None:
    record, why = BAD_RECORDS[case]
    with pytest.raises(ImportFileError) as info:
        parse_import_file(jsonl(tmp_path, GOOD, record), max_chars=8000)
    assert [n for n, _ in info.value.problems] == [2], info.value.problems
    assert why in str(info.value)


DCE_MESSAGE = {"id": "1", "author": {"id": "7"}, "timestamp": "2026-01-01T00:00:00Z", "content": "hi"}


def dce(channel: object, *messages: object) -> str:
    return json.dumps({"channel": channel, "messages": list(messages or [DCE_MESSAGE])}, indent=2)


HOSTILE_FILES = {
    "JSON Lines nested 100,000 deep": (DEEP, "nested too deeply"),
    "an export nested 60,000 deep": ('{"a":' * 60_000 + "1" + "}" * 60_000, "nested too deeply"),
    "an export with a 5,000-digit number": (
        dce({"id": "1"}, {**DCE_MESSAGE, "id": int("9" * 40)}).replace("9" * 40, "9" * 5000),
        "f.json: nothing imported: a number in it is too long",
    ),
    "an export's channel true": (dce(True), "channel must be a non-empty string"),
    "an export's channel false": (dce(False), "channel must be a non-empty string"),  # was the file's name
    "an export's channel a list": (dce(["general"]), "channel must be a non-empty string"),
    "an export's channel with NUL": (dce("gen\x00"), "control character"),
    "an export's channel id of 3,000 characters": (dce({"id": "c" * 3000}), "the limit is 200"),
    "an export's author a string": (dce({"id": "1"}, {**DCE_MESSAGE, "author": "ana"}), "author must be an object"),
    "an export's reply id an object": (
        dce({"id": "1"}, {**DCE_MESSAGE, "reference": {"messageId": {"a": 1}}}),
        "reference.messageId must be",
    ),
    "an export with two messages under one id": (
        dce({"id": "1"}, DCE_MESSAGE, {**DCE_MESSAGE, "content": "bye"}),
        "message 2: id 1 in channel 1 is also the id of a different message [(]message 1[)]",
    ),
    "a missing file": (None, "f.json: nothing imported: cannot read"),
}


@pytest.mark.parametrize("case", HOSTILE_FILES, ids=list(HOSTILE_FILES))
def test_hostile_files_are_refused_with_a_reason(tmp_path: Path, case: str) -> None:
    content, why = HOSTILE_FILES[case]
    path = tmp_path / "f.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ImportFileError, match=why):
        parse_import_file(path, max_chars=8000)


@pytest.mark.parametrize(
    ("content", "channel"),
    [
        (dce("general"), "general"),  # a channel given as its name or id is that channel
        (dce({"id": "1"}, {**DCE_MESSAGE, "type": ["x"]}), "1"),  # an odd message type is still a message
        ("\ufeff" + dce({"id": "1"}), "1"),  # a byte-order mark, as Windows editors write
    ],
)
def test_unusual_but_meaningful_exports_are_accepted(tmp_path: Path, content: str, channel: str) -> None:
    path = tmp_path / "f.json"
    path.write_text(content, encoding="utf-8")
    messages, _ = parse_import_file(path, max_chars=8000)
    assert [m.channel_id for m in messages] == [channel]


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


def test_an_unknown_option_is_named_with_its_subcommands_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["recall", "hi", "--bogus"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "hippobot recall: error: unrecognized arguments: --bogus" in err
    assert "[--queries QUERIES]" in err and "{chat,import" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["import", "x.jsonl", "--scope", "s" * 3000],
        ["recall", "hi", "--scope", "a\x01b"],
        ["chat", "--scope", "x" * 201],
        ["dream", "--scope", " "],
        ["chat", "--user", "u" * 3000],
        ["recall", "hi", "--channel", "c\x00"],
        ["chat", "--user", "u" * 195],  # stored as "console:" + 195 characters: over the 200 the database allows
        ["chat", "--channel", "c" * 195],
        ["import", "x.jsonl", "--private-channel", "staff\x00"],
        ["recall", "   "],
        ["recall", "x" * 9000],
    ],
)
def test_bad_options_are_usage_errors_before_anything_starts(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("hippobot ") and err.count("\n") == 1 and "Traceback" not in err


QUERY_FILES = {
    "nested 100,000 deep": (DEEP + "\n", "line 1: JSON nested too deeply"),
    "a 3,000-character scope": (json.dumps({"text": "hi", "scope": "s" * 3000}) + "\n", 'line 1: "scope" is 3,000'),
    "NUL in a scope": ('{"text": "ok"}\n' + json.dumps({"text": "x", "scope": "a\x00"}) + "\n", "line 2: "),
    "a huge line": (
        '{"text": "ok"}\n' + json.dumps({"text": "x" * 100_000}) + "\n",
        "line 2: the text to recall is 100,000 characters long",
    ),
    "a 5,000-digit number": ('{"text": "ok", "k": ' + "1" * 5000 + "}\n", "line 1: a number in it is too long"),
    "an empty text": ('{"text": "\\u0000 "}\n', "line 1: the text to recall is empty"),
}


@pytest.mark.parametrize("case", QUERY_FILES, ids=list(QUERY_FILES))
def test_recall_queries_with_hostile_lines_name_the_line(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    content, why = QUERY_FILES[case]
    path = tmp_path / "q.jsonl"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    assert main(["recall", "--queries", str(path)]) == 2
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_recall_queries_name_every_bad_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"text": "ok"}\nnot json\n{"text": "ok"}\n{"scope": "g1"}\n', encoding="utf-8")
    assert main(["recall", "--queries", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 2: invalid JSON" in err and 'line 4: expected an object with a non-empty "text"' in err, err


def test_recall_queries_with_a_lone_surrogate_and_nul_print_their_results(
    env: dict[str, str],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"text": "caf\ud800e?"}) + "\n" + json.dumps({"text": "a\x00b"}) + "\n", encoding="utf-8"
    )
    assert main(["recall", "--queries", str(path)]) == 0
    texts = [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()]
    assert texts == ["caf?e?", "ab"]
    assert main(["recall", "hello", "--scope", "nosuch"]) == 0  # a typo'd scope answers, with a note
    assert "nothing is stored in scope 'nosuch' (a typo?)" in capsys.readouterr().err


def test_a_hostile_import_file_exits_1_with_one_line(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    path = jsonl(tmp_path, {**GOOD, "channel": "c\x00"})
    result = run_cli(["import", str(path), "--scope", "g1"], env)
    assert result.returncode == 1 and "control character" in result.stderr and "Traceback" not in result.stderr


async def test_the_console_goes_on_after_hostile_commands(app: App, llm: ScriptedLLM) -> None:
    lines = "/approve ²\n/approve 99999999999999999999999\n/approve #12345678901234\n/reject\n/recall\nhello there\n"
    out, err = io.StringIO(), io.StringIO()
    console = Console(
        app.brain,
        ConsoleIdentity("ana", "console", "g1"),
        io.StringIO(lines),
        out,
        err,
        interactive=False,
        governance=app.governance,
        dream=app.dream,
        approver_role="hippobot-approver",
    )
    assert await console.run() == 0
    text = out.getvalue()
    assert text.count("usage: /approve N") == 2 and "usage: /reject N" in text
    assert "usage: /recall <text>" in text and "empty" not in err.getvalue()
    assert "no proposal" in (text + err.getvalue()).lower() or "12345678901234" in err.getvalue()
    assert f"hippobot: {llm.reply}" in text, "the next line is still answered"
    assert "Traceback" not in err.getvalue()


@pytest.mark.model
@pytest.mark.slow
def test_hippobot_chat_survives_invalid_utf8_and_bad_approvals(env: dict[str, str]) -> None:  # noqa: F811
    stdin = b"\xff\xfe my cat is called Miso\n/approve \xc2\xb2\n/approve 99999999999999999999999\nstill here?\n"
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "chat"], input=stdin, env=env, capture_output=True, timeout=300
    )
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0 and "Traceback" not in err, err
    assert out.count("usage: /approve N") == 2
    assert out.count("hippobot: ") == 2, out  # both messages answered, the undecodable one included


async def test_a_misspelt_private_channel_imports_nothing(app: App, tmp_path: Path) -> None:
    path = jsonl(tmp_path, GOOD, {**GOOD, "id": "2", "channel": "staff", "text": "the vault code is 4-8-15"})
    with pytest.raises(InvalidInput, match="private channel stafff: no message .* is in it"):
        await app.importer.run(path, "g1", private_channels=["stafff"])
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages") == 0, "staff would have been public"


KEEPABLE = NewMessage(
    scope="g1",
    source="console",
    external_id="m1",
    channel_id="c",
    author_id="a",
    author_name="ana",
    content="hello",
    created_at=datetime(2026, 10, 1, tzinfo=UTC),
)


@pytest.mark.parametrize(
    ("message", "why"),
    [
        (replace(KEEPABLE, channel_id="c" * 3000), "the channel id is 3,000 characters long"),
        (replace(KEEPABLE, author_id="a\x00"), "the author id contains a control character"),
        (replace(KEEPABLE, external_id="\ud800"), "the message id is not valid text"),
        (replace(KEEPABLE, created_at=datetime(1, 1, 1, tzinfo=UTC)), "the message's time in the year 1"),
    ],
    ids=["channel_id", "author_id", "external_id", "created_at"],
)
async def test_the_store_refuses_what_it_cannot_keep(app: App, message: NewMessage, why: str) -> None:
    """A message with one value the store cannot keep (of its field's type: an over-long id, a control character,
    a lone surrogate, the year 1) is refused, saying why, and nothing is stored."""
    with pytest.raises(InvalidInput, match=why):
        await app.conversations.add(message)
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages") == 0


async def test_the_store_repairs_text_and_names(app: App) -> None:
    stored = await app.conversations.add(
        NewMessage(
            scope="g1",
            source="console",
            external_id="m1",
            channel_id="c",
            author_id="a",
            author_name="an\ta\x00",
            content="caf\ud800e \x00ok",
            created_at=datetime(2026, 10, 1, tzinfo=UTC),
        )
    )
    assert (stored.content, stored.author_name) == ("caf?e ok", "an a")
    # a name is looked up as typed: its bidirectional controls go (P13: "cara\u202e" was not found as "cara")
    assert clean_name("cara\u202e") == "cara" and clean_name("\u2066bo\u2069") == "bo"
    # a terminal's escape sequences and bell would act when the text is printed back (recall, places, persona)
    stored = await app.conversations.add(
        NewMessage(
            scope="g1",
            source="console",
            external_id="m2",
            channel_id="c",
            author_id="a",
            author_name="ana",
            content="my colour is \x1b[41mteal\x07\x9b2J\tand\r\nmore",
            created_at=datetime(2026, 10, 1, tzinfo=UTC),
        )
    )
    # the escape sequences go whole (P7: "\x1b[31mmy" left "[31mmy", and a topic word "mmy"); the bell is marked
    assert stored.content == "my colour is teal\ufffd\tand\r\nmore"
    assert clean_text("\x1b]0;title\x07hi \x1b[1;31mred\x1b[0m \x1bc!") == "hi red !"


async def test_recall_lists_the_ids_a_person_can_find(app: App, tmp_path: Path) -> None:
    await app.importer.run(jsonl(tmp_path, {**GOOD, "id": "m-77", "text": "my cat is called Miso"}), "g1")
    bundle = await app.brain.context("what is my cat called?", "g1", k=3)
    assert "[#general/m-77]" in format_bundle(bundle)
