"""What the bot holds about one person (memory/mine.py), against real PostgreSQL: their own words wherever they
said them, what others said about them only where the asking audience may see it, never another scope."""

from __future__ import annotations

import argparse
import io
import json
from datetime import UTC, datetime

import pytest

from bot import mine_cli
from bot.app import App
from bot.brain import IncomingTurn
from memory.errors import InvalidInput, ScopeError
from memory.mine import EPISODE, FACT, MESSAGE, Holdings, HeldItem, MemoryOfPerson, Source, export_documents
from memory.sources import SourceRef

GUILD, OTHER = "g1", "g2"
NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)


async def say(
    app: App, person: str, text: str, *, scope: str = GUILD, channel: str = "general", restricted: bool = False
) -> int:
    reply = await app.brain.respond(
        IncomingTurn(
            scope, "discord", channel, person, f"name-{person}", text, visible_in=channel if restricted else None
        )
    )
    await reply.complete()
    return reply.message.id


@pytest.fixture
async def talked(app: App) -> App:
    await say(app, "ana", "I play the trumpet")
    await say(app, "ana", "My sister lives in Lisbon")
    await say(app, "ana", "I keep the staff rota in a blue binder", channel="staff", restricted=True)
    await say(app, "ben", "I play the cello")
    await say(app, "ana", "I collect old maps", scope=OTHER)
    await app.brain.drain()
    return app


async def about_ana_by_ben(app: App, channel: str, restricted: bool) -> None:
    """Ben says something about Ana that becomes an edge on Ana's own node (as consolidation can make)."""
    message = await say(app, "ben", f"someone said a thing in {channel}", channel=channel, restricted=restricted)
    await app.brain.drain()
    pool = app.db.pool
    ana = await pool.fetchval(
        """INSERT INTO kg_nodes (scope, owner, name, display, kind, created_at)
           VALUES ($1, '', 'user:ana', 'name-ana', 'person', now())
           ON CONFLICT (scope, owner, name) DO UPDATE SET display = excluded.display RETURNING id""",
        GUILD,
    )
    thing = await pool.fetchval(
        """INSERT INTO kg_nodes (scope, owner, name, display, kind, created_at)
           VALUES ($1, '', $2, $2, 'entity', now()) RETURNING id""",
        GUILD,
        f"secret-{channel}",
    )
    edge = await pool.fetchval(
        """INSERT INTO kg_edges (scope, source_id, relation, target_id, confidence, first_seen, last_seen)
           VALUES ($1, $2, 'like', $3, 0.9, now(), now()) RETURNING id""",
        GUILD,
        ana,
        thing,
    )
    await pool.execute(
        "INSERT INTO kg_edge_sources (edge_id, message_id, speaker_id, visible_in) VALUES ($1, $2, 'ben', $3)",
        edge,
        message,
        channel if restricted else None,
    )


def texts(items: list[HeldItem] | tuple[HeldItem, ...]) -> str:
    return "\n".join(i.text for i in items)


async def test_it_lists_the_persons_facts_episodes_and_messages(talked: App) -> None:
    held = await MemoryOfPerson(talked.db.pool).gather(GUILD, "ana", visible_channel="general")
    assert "name-ana plays trumpet" in texts(held.facts)
    assert "trumpet" in texts(held.episodes) and "Lisbon" in texts(held.episodes)
    assert len(held.messages) == 3, "the three messages Ana said in this server, not the bot's replies"
    assert all(s.own for i in held.items() for s in i.sources)


async def test_it_holds_nothing_of_another_person(talked: App) -> None:
    held = await MemoryOfPerson(talked.db.pool).gather(GUILD, "ana", visible_channel="general")
    assert "cello" not in json.dumps([i.text for i in held.items()])


async def test_it_never_crosses_a_scope(talked: App) -> None:
    held = await MemoryOfPerson(talked.db.pool).gather(GUILD, "ana", visible_channel="general")
    assert "maps" not in json.dumps([i.text for i in held.items()])
    other = await MemoryOfPerson(talked.db.pool).gather(OTHER, "ana", visible_channel="general")
    assert [m.text for m in other.messages] == ["I collect old maps"]


async def test_their_own_words_in_a_restricted_channel_are_shown_to_them_and_marked(talked: App) -> None:
    held = await MemoryOfPerson(talked.db.pool).gather(GUILD, "ana", visible_channel="general")
    rota = [i for i in held.items() if "rota" in i.text]
    assert {i.kind for i in rota} >= {MESSAGE, EPISODE}
    assert all(i.restricted for i in rota)


async def test_what_others_said_about_them_in_a_restricted_channel_shows_only_in_its_audience(talked: App) -> None:
    await about_ana_by_ben(talked, "staff", restricted=True)
    await about_ana_by_ben(talked, "general", restricted=False)
    mine = MemoryOfPerson(talked.db.pool)
    from_general = await mine.gather(GUILD, "ana", visible_channel="general")
    assert "secret-general" in texts(from_general.facts), "said about her in public"
    assert "secret-staff" not in texts(from_general.facts), "said about her by someone else, in #staff"
    from_staff = await mine.gather(GUILD, "ana", visible_channel="staff")
    fact = next(f for f in from_staff.facts if "secret-staff" in f.text)
    assert [s.own for s in fact.sources] == [False] and fact.restricted


async def test_an_edge_they_stated_lists_only_the_sources_the_audience_may_see(talked: App) -> None:
    pool = talked.db.pool
    bens = await say(talked, "ben", "ana plays it too, I heard", channel="staff", restricted=True)
    edge = await pool.fetchval(
        "SELECT e.id FROM kg_edges e JOIN kg_nodes t ON t.id = e.target_id WHERE e.scope = $1 AND t.name = 'trumpet'",
        GUILD,
    )
    # a second source on Ana's edge, as merging near-duplicates gives it (semantic.merge_near_duplicates)
    await pool.execute(
        "INSERT INTO kg_edge_sources (edge_id, message_id, speaker_id, visible_in) VALUES ($1, $2, 'ben', 'staff')",
        edge,
        bens,
    )
    mine = MemoryOfPerson(pool)
    [public] = [f for f in (await mine.gather(GUILD, "ana", visible_channel="general")).facts if "trumpet" in f.text]
    assert [s.own for s in public.sources] == [True], "ben's #staff message is not listed"
    [inside] = [f for f in (await mine.gather(GUILD, "ana", visible_channel="staff")).facts if "trumpet" in f.text]
    assert sorted(s.own for s in inside.sources) == [False, True]


async def test_the_listing_does_not_repeat_a_message_its_episode_shows(talked: App) -> None:
    held = await MemoryOfPerson(talked.db.pool).gather(GUILD, "ana", visible_channel="general")
    listed = held.listing()
    assert len([i for i in listed if "trumpet" in i.text and i.kind in (EPISODE, MESSAGE)]) == 1
    assert len(held.items()) > len(listed), "the export keeps both"


async def test_episodes_and_messages_are_most_recent_first(talked: App) -> None:
    held = await MemoryOfPerson(talked.db.pool).gather(GUILD, "ana", visible_channel="general")
    for group in (held.episodes, held.messages):
        times = [i.created_at for i in group]
        assert times == sorted(times, reverse=True)


async def test_someone_the_bot_never_heard_holds_nothing(talked: App) -> None:
    held = await MemoryOfPerson(talked.db.pool).gather(GUILD, "zed", visible_channel="general")
    assert held.empty and held.listing() == []


async def test_a_missing_scope_or_person_is_a_clear_error(talked: App) -> None:
    mine = MemoryOfPerson(talked.db.pool)
    with pytest.raises(ScopeError):
        await mine.gather("", "ana", visible_channel=None)
    with pytest.raises(InvalidInput):
        await mine.gather(GUILD, " ", visible_channel=None)


async def test_the_export_is_versioned_json_with_every_item(talked: App) -> None:
    held = await MemoryOfPerson(talked.db.pool).gather(GUILD, "ana", visible_channel="general", opted_out=False)
    [doc] = export_documents(held, NOW, link=lambda ref: f"https://x/{ref.channel_id}/{ref.external_id}")
    data = json.loads(doc)
    assert (data["format"], data["version"], data["scope"], data["person_id"]) == (
        "hippobot-memory-export",
        1,
        GUILD,
        "ana",
    )
    assert data["generated_at"] == NOW.isoformat() and data["opted_out"] is False
    assert len(data["items"]) == len(held.items()) and {i["kind"] for i in data["items"]} == {FACT, EPISODE, MESSAGE}
    source = data["items"][0]["sources"][0]
    assert source["link"] == f"https://x/{source['channel_id']}/{source['message_id']}"


def test_a_large_export_is_split_into_parts_that_each_fit() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    ref = Source(SourceRef(1, "e1", "c1", "discord"), when, True)
    items = tuple(HeldItem(MESSAGE, f"message {n} " + "x" * 900, when, (ref,), False, n) for n in range(100))
    held = Holdings("g1", "ana", messages=items)
    docs = export_documents(held, NOW, limit_bytes=20_000)
    assert len(docs) > 1 and all(len(d) <= 20_000 for d in docs)
    parsed = [json.loads(d) for d in docs]
    assert [p["part"] for p in parsed] == list(range(1, len(docs) + 1)) and {p["parts"] for p in parsed} == {len(docs)}
    assert [i["id"] for p in parsed for i in p["items"]] == list(range(100)), "every item once, in order"


def test_an_empty_export_is_still_a_document() -> None:
    [doc] = export_documents(Holdings("dm:1", "1"), NOW)
    assert json.loads(doc)["items"] == [] and json.loads(doc)["scope"] == "dm:1"


async def test_the_command_line_lists_and_exports_one_persons_memory(
    talked: App, capsys: pytest.CaptureFixture[str]
) -> None:
    def ask(person: str, as_json: bool) -> argparse.Namespace:
        return argparse.Namespace(person=person, scope=GUILD, channel=None, json=as_json)

    out = io.StringIO()
    assert await mine_cli.run(talked.settings, ask("name-ana", False), talked, out) == 0
    listing = out.getvalue()
    assert "ana (name-ana, matched by display name) in scope g1" in listing and "trumpet" in listing
    assert "[restricted]" in listing and "cello" not in listing and "maps" not in listing
    out = io.StringIO()
    assert await mine_cli.run(talked.settings, ask("ana", True), talked, out) == 0
    data = json.loads(out.getvalue())
    assert data["scope"] == GUILD and data["person_id"] == "ana" and len(data["items"]) >= 5
    assert await mine_cli.run(talked.settings, ask("nobody", False), talked, io.StringIO()) == 2
    assert "no person 'nobody'" in capsys.readouterr().err


async def test_the_command_lines_count_of_messages_says_how_many_it_lists(talked: App) -> None:
    # "6 message(s)" headed a list of 3: a message an episode shows is not listed again, and the header said not.
    out = io.StringIO()
    args = argparse.Namespace(person="ana", scope=GUILD, channel=None, json=False)
    assert await mine_cli.run(talked.settings, args, talked, out) == 0
    head, *lines = out.getvalue().splitlines()
    listed = sum(1 for line in lines if " message" in line.split(":", 1)[0])
    assert f"3 message(s) ({listed} listed; the others are in their episodes)" in head and listed < 3


async def test_the_command_line_names_the_asking_channel_by_its_name_as_places_does(talked: App) -> None:
    """A new user's probe: `mine --channel '#mods'` (and `persona --channel '#mods'`) took the name for an id
    nobody used, so what others said about the person there was left out without a word; `places` and now
    `recall` read '#mods' as the channel the history calls mods."""
    await about_ana_by_ben(talked, "staff", restricted=True)
    await talked.db.pool.execute("UPDATE messages SET channel_name = 'staff-room' WHERE channel_id = 'staff'")
    out = io.StringIO()
    asked = argparse.Namespace(person="ana", scope=GUILD, channel="#staff-room", json=False)
    assert await mine_cli.run(talked.settings, asked, talked, out) == 0
    assert "secret-staff" in out.getvalue()


async def test_the_command_line_shows_no_bidirectional_controls(talked: App) -> None:
    """P13: `mine` printed what was stored with its right-to-left override, which reorders what follows it."""
    await say(talked, "ana", "my helmet is \u202egreen")
    await talked.brain.drain()
    out = io.StringIO()
    args = argparse.Namespace(person="ana", scope=GUILD, channel=None, json=False)
    assert await mine_cli.run(talked.settings, args, talked, out) == 0
    assert "my helmet is green" in out.getvalue() and "\u202e" not in out.getvalue()
