"""`hippobot forget`: a channel, a person or a message of an imported history, with what was derived from them;
and an import that would leave a channel's old messages public while marking its new ones private."""

from __future__ import annotations

import argparse
import json
import io
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from bot import forget_cli
from bot.app import App
from memory.embed import MiniLMEmbedder
from memory.errors import InvalidInput
from tests.fakes import ScriptedLLM
from tests.test_importer import write_jsonl

ROWS = [
    {
        "id": "1",
        "channel": "100",
        "channel_name": "python-help",
        "author": {"id": "7", "name": "ana"},
        "timestamp": "2026-10-01T10:00:00Z",
        "text": "my virtualenv ignores the packages I installed with pip",
    },
    {
        "id": "2",
        "channel": "100",
        "channel_name": "python-help",
        "author": {"id": "8", "name": "bo"},
        "timestamp": "2026-10-01T10:01:00Z",
        "text": "activate it first, then run pip install again inside it",
    },
    {
        "id": "3",
        "channel": "200",
        "channel_name": "staff",
        "author": {"id": "8", "name": "bo"},
        "timestamp": "2026-10-01T10:02:00Z",
        "text": "the webhook token for the mod bot lives in the vault entry",
    },
    {
        "id": "4",
        "channel": "300",
        "channel_name": "baking",
        "author": {"id": "9", "name": "ana"},
        "timestamp": "2026-10-01T10:03:00Z",
        "text": "my sourdough starter smells like acetone, is it dead?",
    },
]


def history_file(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    """An export file holding ``rows``, one JSON object a line (test_importer's writer)."""
    return write_jsonl(path, list(rows))


def args(**kw: object) -> argparse.Namespace:
    base = {"scope": "g1", "channel": None, "person": None, "message": None, "yes": False}
    return argparse.Namespace(**{**base, **kw})


async def forget(app: App, **kw: object) -> tuple[int, str]:
    out = io.StringIO()
    code = await forget_cli.run(app.settings, args(**kw), app, out)
    return code, out.getvalue()


async def count(app: App, where: str = "true") -> int:
    return await app.db.pool.fetchval(f"SELECT count(*) FROM messages WHERE scope = 'g1' AND {where}")


async def test_forget_names_a_channel_person_or_message_and_asks_first(
    app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await app.importer.run(history_file(tmp_path / "h.jsonl", ROWS), "g1")
    await app.importer.run(history_file(tmp_path / "h.jsonl", ROWS), "g2")  # another server keeps its copy
    # a name two people share is refused with both ids; an id settles it
    code, _ = await forget(app, person="ana")
    assert code == 2 and "fits several in scope 'g1': 7 (ana), 9 (ana)" in capsys.readouterr().err
    code, said = await forget(app, channel="#python-help")
    assert code == 0 and "would forget channel #python-help (100)" in said and "2 message(s)" in said
    assert await count(app) == 4  # nothing happens without --yes
    code, said = await forget(app, channel="#Python-Help", yes=True)
    assert code == 0 and "forgot channel" in said and "messages 2" in said
    assert await count(app, "channel_id = '100'") == 0
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages WHERE scope = 'g2'") == 4
    assert await app.db.pool.fetchval("SELECT count(*) FROM places WHERE scope = 'g1' AND channel_id = '100'") == 0
    code, said = await forget(app, person="9", yes=True)
    assert code == 0 and await count(app, "author_id = '9'") == 0
    code, said = await forget(app, message="3", yes=True)
    assert code == 0 and await count(app) == 0
    code, _ = await forget(app, message="3", yes=True)
    assert code == 2 and "no message '3'" in capsys.readouterr().err


async def test_a_channel_imported_as_public_is_not_made_private_halfway(app: App, tmp_path: Path) -> None:
    path = history_file(tmp_path / "h.jsonl", ROWS)
    await app.importer.run(path, "g1")
    more = history_file(tmp_path / "more.jsonl", [*ROWS, {**ROWS[2], "id": "5", "text": "rotate that token monthly"}])
    with pytest.raises(InvalidInput, match="forget it first .*--channel 200.*nothing imported"):
        await app.importer.run(more, "g1", private_channels=["200"])
    assert await count(app) == 4 and await count(app, "visible_in IS NOT NULL") == 0
    code, _ = await forget(app, channel="staff", yes=True)
    assert code == 0
    await app.importer.run(more, "g1", private_channels=["200"])
    assert await count(app, "channel_id = '200' AND visible_in = '200'") == 2
    # imported as private once, it stays private when a later file forgets to say so
    later = history_file(tmp_path / "later.jsonl", [{**ROWS[2], "id": "6", "text": "the vault is at vault.example"}])
    await app.importer.run(later, "g1")
    assert await count(app, "external_id = '6' AND visible_in = '200'") == 1


async def test_what_was_forgotten_is_not_brought_back_by_importing_it_again(app: App, tmp_path: Path) -> None:
    path = history_file(tmp_path / "h.jsonl", ROWS)
    await app.importer.run(path, "g1")
    assert (await forget(app, person="8", yes=True))[0] == 0  # bo: messages 2 and 3
    assert (await forget(app, message="4", yes=True))[0] == 0
    later = {**ROWS[1], "id": "9", "timestamp": "2099-01-01T00:00:00Z", "text": "bo again, after being forgotten"}
    report = await app.importer.run(history_file(tmp_path / "again.jsonl", [*ROWS, later]), "g1")
    assert (report.imported, report.already_present, report.skipped_forgotten) == (1, 1, 3), report
    assert "3 forgotten before (not brought back)" in str(report)
    assert sorted(await app.db.pool.fetchval("SELECT array_agg(external_id) FROM messages WHERE scope = 'g1'")) == [
        "1",
        "9",
    ]  # bo's new words are new
    # the tombstones keep no id of what was forgotten, and another server's copy is untouched
    assert await app.db.pool.fetchval("SELECT bool_and(digest ~ '^[0-9a-f]{64}$') FROM forgotten")
    from tests.test_forgetting import traces

    assert await traces(app, "webhook token") == {} and await traces(app, "acetone") == {}
    assert (await app.importer.run(path, "g2")).imported == 4


async def test_a_name_two_people_share_is_refused_with_their_ids_and_an_id_picks_one(  # issue 32.18
    app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime

    from memory.conversation import ConversationStore, NewMessage

    dara = {
        "id": "5",
        "channel": "100",
        "channel_name": "python-help",
        "author": {"id": "1004", "name": "dara"},
        "timestamp": "2026-10-01T10:05:00Z",
        "text": "my pip cache fills the whole disk on the build box",
    }
    await app.importer.run(history_file(tmp_path / "h.jsonl", [*ROWS, dara]), "g1")
    await ConversationStore(app.db.pool).add(
        NewMessage(  # and `hippobot chat --user dara` in the same scope
            scope="g1",
            source="console",
            external_id="c1",
            channel_id="console:general",
            author_id="console:dara",
            author_name="dara",
            content="I am the other dara, from the console",
            created_at=datetime(2026, 10, 2, tzinfo=UTC),
        )
    )
    for name, yes in (("dara", True), ("DARA", False)):  # the issue's `forget --person dara --yes`
        code, said = await forget(app, person=name, yes=yes)
        err = capsys.readouterr().err
        assert code == 2 and said == "", err
        assert "fits several in scope 'g1': 1004 (dara), console:dara (dara); name one by their id" in err
    assert await count(app) == 6  # nothing was forgotten
    code, said = await forget(app, person="1004", yes=True)  # the id names one
    assert code == 0 and said.startswith("forgot person 1004 (dara, matched by id) in scope g1"), said
    assert await count(app, "author_id = '1004'") == 0 and await count(app, "author_id = 'console:dara'") == 1
    code, said = await forget(app, person="dara")  # the one left: the console's dara
    assert code == 0 and "would forget person console:dara (dara, matched by console name)" in said, said
    code, said = await forget(app, person="Bo")  # a display name one person has
    assert code == 0 and "would forget person 8 (bo, matched by display name)" in said and "2 message(s)" in said


async def test_a_person_is_found_by_id_username_or_display_name_and_told_which(  # issue 32.8
    app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    export = {
        "guild": {"id": "500", "name": "Climbing club"},
        "channel": {"id": "600", "name": "general"},
        "messages": [
            {
                "id": "1001",
                "type": "Default",
                "timestamp": "2026-09-01T08:00:00+00:00",
                "content": "the north wall is wet again, bring chalk",
                "author": {"id": "1004", "name": "lea_climbs", "nickname": "Léa", "isBot": False},
            },
            {
                "id": "1002",
                "type": "Default",
                "timestamp": "2026-09-01T08:01:00+00:00",
                "content": "thanks for the warning",
                "author": {"id": "1005", "name": "tom", "isBot": False},
            },
        ],
    }
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    await app.importer.run(path, "500")
    for person, how in (
        ("lea_climbs", "username"),
        ("LEA_CLIMBS", "username"),
        ("Léa", "display name"),
        ("1004", "id"),
    ):
        code, said = await forget(app, scope="500", person=person)
        assert code == 0 and said.startswith(
            f"would forget person 1004 (Léa, matched by {how}) in scope 500: 1 message(s)"
        ), (person, said)
    code, _ = await forget(app, scope="500", person="lea")
    assert code == 2 and "by id, console name, display name or username" in capsys.readouterr().err
    code, said = await forget(app, scope="500", person="lea_climbs", yes=True)
    assert code == 0 and "forgot person 1004 (Léa, matched by username)" in said
    assert await app.db.pool.fetchval("SELECT array_agg(author_id) FROM messages WHERE scope = '500'") == ["1005"]


async def test_an_id_names_one_person_and_says_who_else_goes_by_it(app: App, tmp_path: Path) -> None:
    """P8: "carla" was the id of one person (JSON Lines) and the username of another (a Discord export);
    forget --person carla forgot the first and said nothing of the second."""
    rows = [
        {**ROWS[0], "id": "50", "author": {"id": "carla", "name": "carla"}, "text": "I run the cooking channel"},
        {**ROWS[0], "id": "51", "author": {"id": "9003", "name": "Carla"}, "text": "I'm the other Carla here"},
    ]
    await app.importer.run(history_file(tmp_path / "h.jsonl", rows), "g1")
    for yes in (False, True):
        code, said = await forget(app, person="carla", yes=yes)
        assert (
            code == 0
            and "person carla (carla, matched by id); not 9003 (Carla), also called 'carla' (name them by their id"
            in said
        )
    assert await count(app, "author_id = 'carla'") == 0 and await count(app, "author_id = '9003'") == 1


async def test_a_message_is_found_by_the_label_the_console_shows(app: App, tmp_path: Path) -> None:
    # `hippobot chat` and `recall` show a console message as "#N" (the store's id) and an imported one as
    # "CHANNEL/ID"; forget --message took only the bare id, so "#N" was refused, and "N" found another message.
    await app.importer.run(history_file(tmp_path / "h.jsonl", ROWS), "g1")
    stored = await app.db.pool.fetchval("SELECT id FROM messages WHERE scope = 'g1' AND external_id = '4'")
    code, said = await forget(app, message=f"#{stored}", yes=True)
    assert code == 0 and "300/4 by ana" in said and await count(app, "external_id = '4'") == 0
    code, said = await forget(app, message="100/2", yes=True)
    assert code == 0 and await count(app, "external_id = '2'") == 0 and await count(app) == 2


async def test_a_message_is_found_by_its_channels_name_as_recall_shows_it(app: App, tmp_path: Path) -> None:
    """recall shows an imported message of a named channel as '#trips/1001'; forget takes that label too."""
    path = tmp_path / "trips.json"
    message = {
        "id": "1001",
        "type": "Default",
        "timestamp": "2026-09-01T08:00:00+00:00",
        "content": "the hut is booked for the 14th",
        "author": {"id": "21", "name": "Greta", "isBot": False},
    }
    path.write_text(json.dumps({"channel": {"id": "901", "name": "trips"}, "messages": [message]}), encoding="utf-8")
    await app.importer.run(path, "g1")
    code, said = await forget(app, message="#Trips/1001", yes=True)
    assert code == 0 and "901/1001 by Greta" in said and await count(app) == 0


async def test_another_scopes_stored_message_is_not_found(
    app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await app.importer.run(history_file(tmp_path / "h.jsonl", ROWS), "g1")
    await app.importer.run(history_file(tmp_path / "h.jsonl", ROWS), "g2")
    theirs = await app.db.pool.fetchval("SELECT id FROM messages WHERE scope = 'g2' AND external_id = '4'")
    code, _ = await forget(app, message=f"#{theirs}", yes=True)
    assert code == 2 and f"no message '#{theirs}'" in capsys.readouterr().err
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages WHERE scope = 'g2'") == 4


async def test_a_persons_tombstone_is_dated_by_the_apps_clock(
    db_url: str, tmp_path: Path, embedder: MiniLMEmbedder, llm: ScriptedLLM
) -> None:
    """A person forgotten on the app's (simulated) 1 March 2026 is forgotten for what they said until then; what
    they said after it, still long before the wall clock's today, is new and imported."""
    from datetime import UTC, datetime

    from memory.clock import SimulatedClock
    from tests.conftest import close_or_explain, make_settings

    app = await App.open(
        make_settings(db_url, tmp_path),
        with_llm=True,
        llm=llm,
        embedder=embedder,
        clock=SimulatedClock(datetime(2026, 3, 1, tzinfo=UTC)),
    )
    try:
        early = [{**r, "timestamp": "2026-02-01T10:00:00Z"} for r in ROWS]
        await app.importer.run(history_file(tmp_path / "h.jsonl", early), "g1")
        assert (await forget(app, person="8", yes=True))[0] == 0  # bo, on the app's 1 March
        later = {**ROWS[1], "id": "9", "timestamp": "2026-04-01T00:00:00Z", "text": "bo again, in April"}
        report = await app.importer.run(history_file(tmp_path / "again.jsonl", [later]), "g1")
        assert report.imported == 1, report
    finally:
        await close_or_explain(app)
