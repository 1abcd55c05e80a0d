"""Import: JSON Lines and DiscordChatExporter, idempotent, all or nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bot.app import App
from tests.conftest import admit_every_import
from tests.fakes import ScriptedLLM
from memory.absorption import AbsorbHints
from memory.errors import ImportFileError
from memory.importer import parse_import_file
from memory.layers.base import AbsorbedTurn, BaseLayer
from memory.layers.episodes import EpisodesLayer

LINES: list[dict[str, Any]] = [
    {
        "id": "1",
        "channel": "general",
        "author": "ana",
        "timestamp": "2026-10-01T10:00:00Z",
        "text": "I moved to Porto last year",
    },
    {
        "id": "2",
        "channel": "general",
        "author": {"id": "77", "name": "ben"},
        "timestamp": "2026-10-01T10:01:00+00:00",
        "text": "nice, how do you like it?",
        "reply_to": "1",
    },
    {"id": "3", "channel": "general", "author": "ana", "timestamp": "2026-10-01T10:02:00", "text": "   "},
]


def write_jsonl(path: Path, rows: Sequence[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def episodes_layer(app: App) -> EpisodesLayer:
    layer = app.brain.layer("episodes")
    assert isinstance(layer, EpisodesLayer)
    return layer


def admit_everything(app: App) -> None:
    """Every imported message that tells something an episode (the production gate keeps fillers such as "nice"
    out, and a question is none: ben's "nice, how do you like it?" makes no episode; these tests are about what an import writes, not about the gate)."""
    admit_every_import(app)


async def test_jsonl_import_keeps_ids_and_timestamps_and_is_idempotent(app: App, tmp_path: Path) -> None:
    admit_everything(app)
    path = write_jsonl(tmp_path / "h.jsonl", LINES)
    first = await app.importer.run(path, "g1")
    # ben's "nice, how do you like it?" is kept in the log but asks, so it makes no episode
    assert (first.read, first.imported, first.skipped_empty, first.episodes) == (3, 2, 1, 1), "read: every line"
    second = await app.importer.run(path, "g1")
    assert (second.imported, second.already_present, second.episodes) == (0, 2, 0)
    pool = app.db.pool
    rows = await pool.fetch(
        "SELECT external_id, author_id, created_at, reply_to_external FROM messages ORDER BY external_id"
    )
    assert [r["external_id"] for r in rows] == ["1", "2"]
    assert rows[1]["author_id"] == "77" and rows[1]["reply_to_external"] == "1"
    assert rows[0]["created_at"].isoformat() == "2026-10-01T10:00:00+00:00"
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE scope = 'g1'") == 1
    assert await pool.fetchval("SELECT count(*) FROM archetype_matches") == 2
    matched = await pool.fetchval("SELECT min(matched_at) FROM archetype_matches")
    assert matched.isoformat() == "2026-10-01T10:00:00+00:00", "history keeps its own time"


async def test_the_same_file_in_another_scope_is_separate(app: App, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "h.jsonl", LINES)
    await app.importer.run(path, "g1")
    report = await app.importer.run(path, "g2")
    assert report.imported == 2


async def test_a_malformed_file_is_rejected_with_line_numbers_and_nothing_is_stored(app: App, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        [LINES[0], "{not json", {"id": "9", "channel": "c"}, {**LINES[0], "id": "10", "timestamp": "yesterday"}],
    )
    with pytest.raises(ImportFileError) as info:
        await app.importer.run(path, "g1")
    assert [n for n, _ in info.value.problems] == [2, 3, 4]
    assert "missing field(s): author, timestamp, text" in str(info.value)
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages") == 0


@pytest.mark.parametrize("content", [b"", b"\xff\xfe\x00garbage", b"[1, 2, 3]\n", b'"just a string"\n'])
def test_hostile_files_get_clear_errors(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(content)
    with pytest.raises(ImportFileError):
        parse_import_file(path, max_chars=8000)


def test_overlong_messages_are_reported(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "long.jsonl", [{**LINES[0], "text": "x" * 9000}])
    with pytest.raises(ImportFileError, match="line 1: text is 9,000 characters"):
        parse_import_file(path, max_chars=8000)


async def test_discord_chat_exporter_json(app: App, tmp_path: Path) -> None:
    export = {
        "guild": {"id": "500", "name": "Friends"},
        "channel": {"id": "600", "name": "general"},
        "messages": [
            {
                "id": "1001",
                "type": "Default",
                "timestamp": "2026-09-01T08:00:00.123+00:00",
                "content": "morning all",
                "author": {"id": "11", "name": "ana", "nickname": "Ana", "isBot": False},
            },
            {
                "id": "1002",
                "type": "GuildMemberJoin",
                "timestamp": "2026-09-01T08:01:00+00:00",
                "content": "",
                "author": {"id": "12", "name": "ben", "isBot": False},
            },
            {
                "id": "1003",
                "type": "Reply",
                "timestamp": "2026-09-01T08:02:00+00:00",
                "content": "morning Ana!",
                "author": {"id": "13", "name": "cy", "isBot": False},
                "reference": {"messageId": "1001"},
            },
        ],
    }
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    report = await app.importer.run(path, "500")
    assert (report.imported, report.skipped_empty, report.skipped_system) == (2, 0, 1)  # the join: a system message
    row = await app.db.pool.fetchrow(
        "SELECT channel_id, channel_name, author_name FROM messages WHERE external_id = '1001'"
    )
    assert (row["channel_id"], row["channel_name"], row["author_name"]) == ("600", "general", "Ana")


async def test_one_id_for_two_messages_is_refused_and_a_repeated_line_is_one_message(app: App, tmp_path: Path) -> None:
    clash = write_jsonl(tmp_path / "clash.jsonl", [LINES[0], {**LINES[0], "text": "something else entirely"}])
    with pytest.raises(
        ImportFileError, match="line 2: id 1 in channel general is also the id of a different message [(]line 1[)]"
    ):
        await app.importer.run(clash, "g1")
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages") == 0
    overlap = write_jsonl(tmp_path / "overlap.jsonl", [LINES[0], LINES[1], LINES[0]])  # exports that overlap
    report = await app.importer.run(overlap, "g1")
    assert (report.read, report.imported, report.repeated) == (3, 2, 1)
    assert str(report).startswith("read 3 message(s): imported 2,") and "1 repeated in the file" in str(report)


async def test_imported_messages_keep_their_channels_names(app: App, tmp_path: Path) -> None:
    """A named channel is its own name; a numbered one takes ``channel_name`` (cleaned), or has none."""
    base = {"author": "ana", "timestamp": "2026-10-01T10:00:00Z", "text": "hello"}
    path = write_jsonl(
        tmp_path / "h.jsonl",
        [
            {**base, "id": "1", "channel": "python-help"},
            {**base, "id": "2", "channel": "123", "channel_name": "🐍 python\tchat"},
            {**base, "id": "3", "channel": "456"},
            {**base, "id": "4", "channel": "789", "channel_name": ""},
        ],
    )
    await app.importer.run(path, "g1")
    rows = await app.db.pool.fetch("SELECT external_id, channel_name FROM messages ORDER BY external_id")
    assert [r["channel_name"] for r in rows] == ["python-help", "🐍 python chat", None, None]
    thread = {
        "guild": {"id": "500"},
        "channel": {
            "id": "601",
            "type": "GuildPublicThread",
            "category": "docker-help",
            "name": "ana's compose file won't start",
        },
        "messages": [
            {
                "id": "9",
                "timestamp": "2026-09-01T08:00:00+00:00",
                "content": "it exits with 137",
                "author": {"id": "11", "name": "ana"},
            }
        ],
    }
    (tmp_path / "thread.json").write_text(json.dumps(thread), encoding="utf-8")
    await app.importer.run(tmp_path / "thread.json", "g1")
    assert await app.db.pool.fetchval("SELECT channel_name FROM messages WHERE channel_id = '601'") == "docker-help", (
        "a thread is named by its parent: its title is its opener's words"
    )
    bad = write_jsonl(tmp_path / "bad.jsonl", [{**base, "id": "5", "channel": "1", "channel_name": 7}])
    with pytest.raises(ImportFileError, match="channel_name"):
        await app.importer.run(bad, "g1")
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages") == 5


async def test_imported_history_is_recalled(app: App, tmp_path: Path) -> None:
    await app.importer.run(write_jsonl(tmp_path / "h.jsonl", LINES), "g1")
    bundle = await app.brain.context("where do I live now?", "g1", k=3)
    assert bundle.episodes and "Porto" in bundle.episodes[0].episode.content


async def test_a_recalled_export_line_names_its_channel_by_the_exports_name(app: App, tmp_path: Path) -> None:
    """P7: the sources of a DiscordChatExporter import showed the channel as its id ("901/1001"); the export
    names it, so recall, ask and mine show '#trips/1001' and carry the name beside the id."""
    from bot.console import format_bundle
    from memory.mine import MemoryOfPerson

    export = {
        "guild": {"id": "900", "name": "G"},
        "channel": {"id": "901", "name": "trips"},
        "messages": [
            {
                "id": "1001",
                "type": "Default",
                "timestamp": "2026-09-01T08:00:00+00:00",
                "content": "I'm allergic to peanuts, so no satay for me at the hut",
                "author": {"id": "21", "name": "Greta", "isBot": False},
            }
        ],
    }
    path = tmp_path / "trips.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    await app.importer.run(path, "900")
    bundle = await app.brain.context("what is Greta allergic to?", "900", k=5)
    refs = [s for item in bundle.items() for s in item.sources]
    assert refs and all(s.channel_name == "trips" for s in refs)
    assert "[#trips/1001]" in format_bundle(bundle) and "901/" not in format_bundle(bundle)
    assert refs[0].as_dict()["channel_name"] == "trips"
    held = await MemoryOfPerson(app.db.pool).gather("900", "21", visible_channel=None)
    assert {s.ref.label() for item in held.facts for s in item.sources} == {"#trips/1001"}


async def test_import_absorbs_into_every_layer_and_marks_messages_absorbed(app: App, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "h.jsonl", LINES)
    await app.importer.run(path, "g1")
    pool = app.db.pool
    assert await app.conversations.count_unabsorbed() == 0, "nothing left for the next start to absorb"
    assert await pool.fetchval("SELECT count(*) FROM kg_edges WHERE scope = 'g1'") > 0, "Porto reached the graph"
    # Keys like live episodes: who said it, then what.
    key = await pool.fetchval(
        "SELECT embedding FROM episodes e JOIN messages m ON m.id = e.message_id WHERE m.external_id = '1'"
    )
    expected = await app.embedder.embed("ana: I moved to Porto last year")
    assert abs(float(np.dot(np.asarray(key.to_list()), expected)) - 1.0) < 1e-3


async def test_two_imports_of_one_file_at_once_write_it_once(app: App, tmp_path: Path) -> None:
    admit_everything(app)
    path = write_jsonl(tmp_path / "h.jsonl", LINES)
    reports = await asyncio.gather(app.importer.run(path, "g1"), app.importer.run(path, "g1"))
    assert sorted(r.imported for r in reports) == [0, 2]
    assert sorted(r.already_present for r in reports) == [0, 2]
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes") == 1  # ben's question makes none


async def test_a_private_channel_is_recalled_only_by_its_audience(app: App, tmp_path: Path) -> None:
    rows = [
        {
            "id": "s1",
            "channel": "staff",
            "author": "ana",
            "timestamp": "2026-10-01T10:00:00Z",
            "text": "the vault combination is 4-8-15",
        },
        {
            "id": "p1",
            "channel": "general",
            "author": "ben",
            "timestamp": "2026-10-01T10:01:00Z",
            "text": "I like my vault of old comics",
        },
    ]
    await app.importer.run(write_jsonl(tmp_path / "h.jsonl", rows), "g1", private_channels=["staff"])
    public = await app.brain.context("what is the vault combination?", "g1", k=5)
    assert all("4-8-15" not in i.text for i in public.items())
    staff = await app.brain.context("what is the vault combination?", "g1", k=5, channel_id="staff")
    assert any("4-8-15" in i.text for i in staff.items())


async def test_ask_in_an_imported_private_channel_recalls_what_that_channel_may_see(
    app: App, llm: ScriptedLLM, tmp_path: Path
) -> None:
    from bot import ask_cli

    rows = [
        {
            "id": "s1",
            "channel": "staff",
            "author": "ana",
            "timestamp": "2026-10-01T10:00:00Z",
            "text": "the vault combination is 4-8-15",
        },
        {
            "id": "p1",
            "channel": "general",
            "author": "ben",
            "timestamp": "2026-10-01T10:01:00Z",
            "text": "I like my vault of old comics",
        },
    ]
    await app.importer.run(write_jsonl(tmp_path / "h.jsonl", rows), "g1", private_channels=["staff"])
    llm.reply = "4-8-15."

    async def asked(channel: str | None) -> str:
        line = ask_cli.AskLine("what is the vault combination?", "g1", "dan", channel, None)
        return " ".join(m["text"] for m in (await ask_cli.answer(app, line))["memory"])

    assert "4-8-15" in await asked("staff"), "the imported channel, named as the history names it"
    assert "4-8-15" not in await asked("general") and "4-8-15" not in await asked(None)
    assert "4-8-15" not in await asked("stafff"), "a name the scope does not hold is the console's own channel"


async def test_a_line_of_ask_conversation_said_in_an_imported_private_channel_stays_in_that_channel(
    app: App, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """A new user's probe: `hippobot ask --conversation` with a line {"channel": "staff", ...}, staff imported as
    private, stored the line for the whole scope, and a question in #general recalled it."""
    from bot import ask_cli

    rows = [
        {
            "id": "s1",
            "channel": "staff",
            "author": "ana",
            "timestamp": "2026-10-01T10:00:00Z",
            "text": "staff meeting moved to Friday",
        }
    ]
    await app.importer.run(write_jsonl(tmp_path / "h.jsonl", rows), "g1", private_channels=["staff"])
    llm.reply = "Noted."
    said = ask_cli.AskLine("the vault combination is 4-8-15-16", "g1", "dana", "staff", None)
    await ask_cli.answer(app, said, conversation=True)
    await app.brain.drain()
    assert await app.db.pool.fetchval("SELECT visible_in FROM messages WHERE content LIKE '%4-8-15-16%'") == "staff"
    public = await app.brain.context("what is the vault combination?", "g1", k=5, channel_id="general")
    assert all("4-8-15-16" not in i.text for i in public.items())


async def test_what_the_import_gate_declines_stays_out_of_the_episodes_but_is_found_by_its_words(
    app: App, tmp_path: Path
) -> None:
    from memory.episodic import WriteGate

    rows = [
        {"id": str(i), "channel": "general", "author": "ana", "timestamp": f"2026-10-01T10:{i:02d}:00Z", "text": text}
        for i, text in enumerate(["ok", "lol", "My dentist Dr. Okafor moved to 14 Elm Street in Leeds", "haha yes"])
    ]
    episodes_layer(app).import_gate = WriteGate(tau=0.3)  # what the episodes layer admits of an import
    report = await app.importer.run(write_jsonl(tmp_path / "h.jsonl", rows), "g1")
    assert report.imported == 4 and report.episodes == 1
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages WHERE scope = 'g1' AND absorbed_at IS NULL") == 0
    contents = await app.db.pool.fetch("SELECT content FROM episodes WHERE scope = 'g1'")
    assert [r["content"] for r in contents] == ["ana: My dentist Dr. Okafor moved to 14 Elm Street in Leeds"]
    bundle = await app.brain.context("lol", "g1", k=5)
    found = {s.external_id for i in bundle.items(preamble=False) for s in i.sources}
    assert "1" in found  # "lol", declined by the gate, still found in the log by its word


async def test_a_big_import_leaves_fresh_planner_statistics(app: App, tmp_path: Path) -> None:
    from memory.importer import ANALYZE_AFTER

    assert ANALYZE_AFTER <= 200
    rows = [
        {
            "id": str(i),
            "channel": "general",
            "author": "ana",
            "timestamp": f"2026-10-01T10:{i // 60:02d}:{i % 60:02d}Z",
            "text": "ok",
        }
        for i in range(200)
    ]
    before = await app.db.pool.fetchval(
        "SELECT coalesce(last_analyze, 'epoch') FROM pg_stat_user_tables WHERE relname = 'kg_edges'"
    )
    await app.importer.run(write_jsonl(tmp_path / "big.jsonl", rows), "g1")
    await asyncio.sleep(0.5)  # the statistics collector reports asynchronously
    after = await app.db.pool.fetchval(
        "SELECT coalesce(last_analyze, 'epoch') FROM pg_stat_user_tables WHERE relname = 'kg_edges'"
    )
    assert after > before


@pytest.mark.parametrize(
    ("messages", "named"),
    [
        (
            {"1001": {"id": "1001", "timestamp": "2026-09-01T08:00:00+00:00", "content": "hi", "author": {"id": "11"}}},
            'its "messages" is an object',
        ),
        ("none", 'its "messages" is a string'),
        (None, 'its "messages" is null'),
    ],
)
@pytest.mark.parametrize("indent", [None, 2])
def test_an_export_whose_messages_is_not_a_list_is_named_as_the_export_it_is(
    tmp_path: Path, messages: object, named: str, indent: int | None
) -> None:
    """Issue 32.9: not read as JSON Lines ("line 1: missing field(s): id, author, ...")."""
    path = tmp_path / "export.json"
    path.write_text(
        json.dumps(
            {"guild": {"id": "500"}, "channel": {"id": "600", "name": "general"}, "messages": messages}, indent=indent
        ),
        encoding="utf-8",
    )
    with pytest.raises(ImportFileError) as info:
        parse_import_file(path, max_chars=8000)
    assert info.value.problems == [
        (0, f'a DiscordChatExporter export, but {named}: expected a list of messages ("messages": [...])')
    ]


def test_an_export_without_messages_is_named_as_the_export_it_is(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"guild": {"id": "500"}, "channel": {"id": "600"}, "messageCount": 0}), encoding="utf-8")
    with pytest.raises(ImportFileError, match='DiscordChatExporter export, but it has no "messages"'):
        parse_import_file(path, max_chars=8000)


def test_a_lower_case_z_and_a_null_bot_are_read(tmp_path: Path) -> None:
    """Issue 32.22: RFC 3339 allows "z" for UTC; JSON's null is "not said", so not a bot."""
    path = write_jsonl(tmp_path / "h.jsonl", [{**LINES[0], "timestamp": "2024-01-02T03:04:05z", "bot": None}])
    (message,), empty = parse_import_file(path, max_chars=8000)
    assert (message.created_at, message.is_bot, empty) == (datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), False, 0)


class Killed(Exception):
    """A kill -9 in the middle of an import (a test cannot take its own process down)."""


async def test_a_re_run_after_a_crash_mid_import_absorbs_what_the_crash_left(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32.21: the messages were stored, the crash came while absorbing them; the re-run finds them all
    "already present" and still absorbs those left unabsorbed, not leaving them to the next chat or run."""
    path = write_jsonl(tmp_path / "h.jsonl", LINES)
    absorber = app.importer._absorber
    assert absorber is not None
    absorb = absorber.absorb
    calls = 0

    async def crash_on_the_second(message_id: int, hints: AbsorbHints | None = None) -> bool:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise Killed  # the process dies here
        return await absorb(message_id, hints)

    monkeypatch.setattr(absorber, "absorb", crash_on_the_second)
    with pytest.raises(Killed):
        await app.importer.run(path, "g1")
    assert await app.conversations.count_unabsorbed() == 1
    monkeypatch.undo()

    report = await app.importer.run(path, "g1")
    assert (report.imported, report.already_present, report.resumed) == (0, 2, 1)
    assert "absorbed 1 message(s) an earlier, interrupted import left unabsorbed" in str(report)
    assert await app.conversations.count_unabsorbed() == 0


async def test_a_re_run_after_a_crash_counts_the_episodes_it_wrote_for_what_the_crash_left(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the new-user probe (kill -9 mid-import, then the same import again): the re-run absorbed 451
    messages and wrote their episodes, yet reported "wrote 0 episode(s)", counting only messages new to it."""
    admit_everything(app)
    path = write_jsonl(tmp_path / "h.jsonl", LINES)
    absorber = app.importer._absorber
    assert absorber is not None

    async def crash_at_once(message_id: int, hints: object = None) -> bool:
        raise Killed  # the process dies before ana's message is absorbed

    monkeypatch.setattr(absorber, "absorb", crash_at_once)
    with pytest.raises(Killed):
        await app.importer.run(path, "g1")
    monkeypatch.undo()

    report = await app.importer.run(path, "g1")
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes WHERE scope = 'g1'") == 1
    assert (report.imported, report.resumed, report.episodes) == (0, 2, 1)


async def test_an_import_leaves_a_live_turns_pending_absorption_to_the_live_turn(app: App, tmp_path: Path) -> None:
    """Only imported messages: a console or Discord message still waiting for its reply is absorbed by its own
    turn (which knows the reply's surprise and what reached the prompt), not by an import beside it."""
    from memory.conversation import NewMessage

    live = await app.conversations.add(
        NewMessage(
            scope="g1",
            source="console",
            external_id="m1",
            channel_id="console:general",
            author_id="console:ana",
            author_name="ana",
            content="my cat is called Miso",
            created_at=datetime(2026, 10, 2, tzinfo=UTC),
        )
    )
    await app.importer.run(write_jsonl(tmp_path / "h.jsonl", LINES), "g1")
    assert not await app.conversations.is_absorbed(live.id)
    assert await app.conversations.count_unabsorbed() == 1


async def test_an_imported_question_is_kept_in_the_log_but_makes_no_episode(app: App, tmp_path: Path) -> None:
    """A question states nothing to remember, imported or said live; a question that carries a statement does."""
    admit_everything(app)
    rows = [
        *LINES[:2],
        {
            "id": "4",
            "channel": "general",
            "author": "cleo",
            "timestamp": "2026-10-01T10:03:00Z",
            "text": "wait, where in Porto?",
        },
        {
            "id": "5",
            "channel": "general",
            "author": "dev",
            "timestamp": "2026-10-01T10:04:00Z",
            "text": "my brother recommended Piranesi, has anyone read it?",
        },
    ]
    report = await app.importer.run(write_jsonl(tmp_path / "q.jsonl", rows), "g1")
    assert report.imported == 4
    pool = app.db.pool
    assert await pool.fetchval("SELECT count(*) FROM messages WHERE content = 'wait, where in Porto?'") == 1
    episodes = {r["content"] for r in await pool.fetch("SELECT content FROM episodes WHERE scope = 'g1'")}
    assert not any("where in Porto" in e for e in episodes)
    assert any("Piranesi" in e for e in episodes)


async def test_someone_who_opted_out_is_not_remembered_from_an_imported_file(app: App, tmp_path: Path) -> None:
    """/memory optout stops the bot storing what the person says in the server: an import of the server's
    history must not store it either (only in that server: another scope imports them as usual)."""
    from memory.participation import ParticipationStore

    admit_everything(app)
    await ParticipationStore(app.db.pool).opt_out("g1", "77", datetime(2026, 11, 1, tzinfo=UTC))
    path = write_jsonl(tmp_path / "h.jsonl", LINES)
    report = await app.importer.run(path, "g1")
    assert (report.read, report.imported, report.skipped_opted_out) == (3, 1, 1)
    assert "1 by people who opted out of being remembered here" in str(report)
    pool = app.db.pool
    assert await pool.fetchval("SELECT count(*) FROM messages WHERE author_id = '77'") == 0
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE content LIKE '%how do you like it%'") == 0
    elsewhere = await app.importer.run(path, "g2")
    assert elsewhere.imported == 2 and elsewhere.skipped_opted_out == 0


async def test_an_import_remembers_only_through_the_layers_absorb(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31.1: the importer writes the message log and nothing a layer owns; with the episodes layer left out
    of absorption, an import stores and absorbs its messages and writes no episode."""
    admit_everything(app)
    absorber = app.importer._absorber
    monkeypatch.setattr(absorber, "layers", [x for x in absorber.layers if x.name != "episodes"])
    report = await app.importer.run(write_jsonl(tmp_path / "h.jsonl", LINES), "g1")
    assert (report.imported, report.episodes) == (2, 0)
    assert await app.conversations.count_unabsorbed() == 0
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes") == 0


class Recorder(BaseLayer):
    name = "recorder"

    def __init__(self) -> None:
        self.turns: list[AbsorbedTurn] = []

    async def absorb(self, turn: AbsorbedTurn) -> None:
        self.turns.append(turn)


async def test_each_imported_message_reaches_every_layer_once_with_its_novelty_among_the_batch(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A layer is given each imported person message once, as it is given a live one, with what only the import
    knows: how new the message is among the messages imported with it (a line said twice is not new)."""
    recorder = Recorder()
    absorber = app.importer._absorber
    monkeypatch.setattr(absorber, "layers", [*absorber.layers, recorder])
    said_twice = {"channel": "general", "author": "cy", "text": "the standup moved to nine thirty"}
    rows = [
        *LINES,
        {**said_twice, "id": "4", "timestamp": "2026-10-01T10:03:00Z"},
        {**said_twice, "id": "5", "timestamp": "2026-10-02T10:03:00Z"},
        {
            "id": "6",
            "channel": "general",
            "author": "bot",
            "bot": True,
            "timestamp": "2026-10-02T10:04:00Z",
            "text": "noted",
        },
    ]
    path = write_jsonl(tmp_path / "h.jsonl", rows)
    await app.importer.run(path, "g1")
    await app.importer.run(path, "g1")  # a re-import gives the layers nothing again
    by_id = {t.message.external_id: t for t in recorder.turns}
    assert sorted(by_id) == ["1", "2", "4", "5"] and len(recorder.turns) == 4, "person messages, once each"
    assert by_id["4"].batch_novelty == pytest.approx(0.0, abs=1e-3)
    assert by_id["1"].batch_novelty is not None and by_id["1"].batch_novelty > 0.2


async def test_an_imported_episode_keeps_its_message_and_its_channels_audience(app: App, tmp_path: Path) -> None:
    admit_everything(app)
    rows = [
        {
            "id": "s1",
            "channel": "staff",
            "author": "ana",
            "timestamp": "2026-10-01T10:00:00Z",
            "text": "the vault combination is 4-8-15",
        }
    ]
    await app.importer.run(write_jsonl(tmp_path / "h.jsonl", rows), "g1", private_channels=["staff"])
    row = await app.db.pool.fetchrow(
        "SELECT e.visible_in, m.external_id FROM episodes e JOIN messages m ON m.id = e.message_id"
    )
    assert (row["visible_in"], row["external_id"]) == ("staff", "s1")


async def test_an_imported_bot_message_stays_in_the_log_and_never_becomes_an_episode(app: App, tmp_path: Path) -> None:
    """The bot's own words are conversation, not what people said: imported ones are absorbed like live replies
    (never), so even an open gate makes no episode of them."""
    admit_every_import(app)
    rows = [
        LINES[0],
        {
            "id": "9",
            "channel": "general",
            "author": "hippo",
            "bot": True,
            "timestamp": "2026-10-01T10:05:00Z",
            "text": "Porto has the best custard tarts in Portugal",
        },
    ]
    report = await app.importer.run(write_jsonl(tmp_path / "h.jsonl", rows), "g1")
    assert (report.imported, report.episodes) == (2, 1)
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes WHERE content LIKE '%custard%'") == 0
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages WHERE content LIKE '%custard%'") == 1


async def test_a_private_channel_is_named_by_its_name_in_an_export_as_well_as_by_its_id(
    app: App, tmp_path: Path
) -> None:
    """A new user's probe: `import mods.json --private-channel mods` (a DiscordChatExporter export of #mods, id
    555) was refused as "no message is in it (its channels: 555)", though forget and places take #mods."""
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
    report = await app.importer.run(export, "g1", private_channels=["#MODS"])
    assert report.imported == 1
    assert await app.db.pool.fetchval("SELECT visible_in FROM messages WHERE external_id = '7001'") == "555"
