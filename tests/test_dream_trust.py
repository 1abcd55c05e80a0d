"""What the dream posts to the server: only what every reader of the dream channel may see, and nothing of a
forgotten message (issue 32, items 16 and 17)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.app import App
from dream.governance import Proposal, Voter
from memory.conversation import NewMessage
from tests.conftest import admit_every_import
from tests.dream_data import NOW, month_of_history
from tests.test_forgetting import traces

APPROVER = Voter("u-mod", "mod", frozenset({"hippobot-approver"}))

# A moderators' theme, said in #mods only, in a word nobody else uses.
MODS_WORD = "grimwald"
MODS = [  # requests, as a moderators' channel makes them (a theme must be a kind of request)
    "should we ban grimwald for the raid spam in voice?",
    "grimwald posted the raid invite link again in three channels, do we remove it?",
    "can someone mute grimwald before the raid starts tonight",
    "grimwald's alt accounts joined for another raid, who bans them?",
    "what do we do about the grimwald raid in the welcome channel at 2am",
    "we need a rule about raids like grimwald's",
    "grimwald appealed his ban from the raid last week, who answers him?",
    "should I log every grimwald raid message for the report?",
    "grimwald raided the art channel with bots again, how do we stop it",
]
# One person's made-up word, said in public under two ids (their import id and their console id).
PERSON_WORD = "florp"
PERSON_IDS = ("1004", "console:quill")
PERSON = [  # asking for help with it (a theme must be a kind of request)
    "my florp keeps wobbling when I tighten the florp screws, what am I doing wrong?",
    "does anyone know how to oil a squeaky florp?",
    "the florp spring snapped again this morning, where do I get a new one?",
    "I need a replacement florp gasket, where do you buy one?",
    "my florp makes a grinding noise when it spins, is that the bearing?",
    "how tight should the bolts on a florp be?",
    "why does the florp leak oil all over the bench?",  # a request: only requests are clustered (round 6)
    "best glue for a cracked florp housing?",
]


class Recorder:
    """A dream channel that keeps what it was given."""

    def __init__(self) -> None:
        self.digests: list[str] = []

    async def post_proposal(self, proposal: Proposal) -> str | None:
        return None

    async def post_digest(self, text: str, chart: Path | None) -> None:
        self.digests.append(text)


@pytest.fixture(autouse=True)
def every_imported_message_is_an_episode(app: App) -> None:
    admit_every_import(app)


def history_with(path: Path, lines: list[str], *, channel: str, authors: tuple[str, ...]) -> Path:
    """The synthetic month, plus ``lines`` said in ``channel`` by ``authors`` in turn, one every other day."""
    month = month_of_history(path.with_suffix(".month.jsonl"))
    rows = [json.loads(line) for line in month.read_text(encoding="utf-8").splitlines()]
    for i, text in enumerate(lines):
        author = authors[i % len(authors)]
        rows.append(
            {
                "id": f"x{i}",
                "channel": channel,
                "author": {"id": author, "name": "quill"},
                "timestamp": (NOW - timedelta(days=2 + 2 * i, hours=3)).isoformat(),
                "text": text,
            }
        )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def wording(p: Proposal) -> str:
    """Every text of a proposal a reader of the dream channel sees, the evidence included."""
    return "\n".join([p.title, p.rationale, p.render(), json.dumps(p.payload), json.dumps(p.evidence)]).lower()


@pytest.mark.slow
async def test_a_restricted_channels_words_never_reach_the_dream_channel(app: App, tmp_path: Path) -> None:
    path = history_with(tmp_path / "club.jsonl", MODS, channel="mods", authors=("ana", "ben", "cy"))
    await app.importer.run(path, "g2")  # the same history with #mods public: there the theme is proposed
    await app.importer.run(path, "g1", private_channels=["mods"])
    public = await app.dream.run(NOW, scope="g2")
    assert public.status == "ok"
    assert any(MODS_WORD in wording(p) for p in await app.governance.list(scope="g2")), (
        "where #mods is public its theme is a proposal (else this test shows nothing)"
    )

    recorder = Recorder()
    app.dream.services.channel = recorder
    report = await app.dream.run(NOW, scope="g1")
    assert report.status == "ok", report.render()
    proposals = await app.governance.list(scope="g1")
    assert proposals, "the public month still yields its proposals"
    mods_ids = {
        r["id"] for r in await app.db.pool.fetch("SELECT id FROM messages WHERE scope = 'g1' AND channel_id = 'mods'")
    }
    assert len(mods_ids) == len(MODS)
    for p in proposals:
        assert MODS_WORD not in wording(p), p.render()
        assert not set(p.payload["examples"]) & set(MODS), p.render()
        sources = {
            r["message_id"]
            for r in await app.db.pool.fetch("SELECT message_id FROM proposal_sources WHERE proposal_id = $1", p.id)
        }
        assert not sources & mods_ids, f"proposal #{p.id} draws on #mods messages"
    assert MODS_WORD not in report.render().lower()
    assert MODS_WORD not in recorder.digests[0].lower()
    stored = await app.db.pool.fetchval("SELECT report FROM dream_runs WHERE id = $1", report.run_id)
    assert MODS_WORD not in json.dumps(stored).lower()
    # the digest does not count #mods either (the same history, #mods public there)
    assert report.steps["digest"].counts["messages"] < public.steps["digest"].counts["messages"]


async def test_forgetting_a_person_forgets_the_proposal_named_after_their_word(app: App, tmp_path: Path) -> None:
    path = history_with(tmp_path / "club.jsonl", PERSON, channel="general", authors=PERSON_IDS)
    await app.importer.run(path, "g1")
    # one person's topic (under two ids) is proposed only where a theme of two people's is enough
    app.dream.services.config = replace(app.dream.services.config, theme_people=2)
    report = await app.dream.run(NOW)
    assert report.status == "ok", report.render()
    named = [p for p in await app.governance.list(scope="g1") if PERSON_WORD in p.payload["name"]]
    assert len(named) == 1, [p.payload["name"] for p in await app.governance.list(scope="g1")]
    before = named[0]
    assert PERSON_WORD in before.payload["description"] and PERSON_WORD in before.evidence["terms"]
    stored = await app.db.pool.fetchval("SELECT report FROM dream_runs WHERE id = $1", report.run_id)
    assert PERSON_WORD in json.dumps(stored), "the run's report named the proposal"

    reports = [await app.provenance.forget_author("g1", author) for author in PERSON_IDS]  # both of their ids
    assert sum(r.counts["proposal_names_redacted"] for r in reports) == 1
    assert "1 proposal name(s) redacted" in str(reports[0])

    after = await app.governance.get(before.id)
    assert PERSON_WORD not in wording(after), after.render()
    assert after.payload["name"] == f"redacted_{before.id}" and after.evidence["wording_redacted"] is True
    assert after.post_pending, "the redacted proposal is posted again (edited in place in Discord)"
    stored = await app.db.pool.fetchval("SELECT report FROM dream_runs WHERE id = $1", report.run_id)
    assert PERSON_WORD not in json.dumps(stored)
    assert f"redacted_{before.id}" in json.dumps(stored)
    assert await traces(app, PERSON_WORD) == {}, "no table holds the word"


async def test_a_forgotten_source_of_the_wording_redacts_it_and_the_archetype_and_reports_it_named(
    app: App,
) -> None:
    now = datetime.now(UTC)
    pool = app.db.pool
    texts = ["is the wobblecrank oiled?", "the wobblecrank squeaks", "who fixed the gate?"]
    said = [
        await app.conversations.add(NewMessage("g1", "console", f"w{i}", "c1", f"u{i}", "ana", text, now))
        for i, text in enumerate(texts)
    ]
    run_id = await pool.fetchval("INSERT INTO dream_runs (trigger, scope) VALUES ('manual', 'g1') RETURNING id")
    payload = {
        "name": "wobblecrank_oiling",
        "description": "Messages about wobblecrank oiling (wobblecrank, gate)",
        "examples": texts[:2],
        "context_turns": 5,
        "context_vectors": 5,
        "similarity_threshold": 0.7,
        "triple_depth": 1,
    }
    p = await app.governance.propose(
        "new_archetype",
        "new archetype 'wobblecrank_oiling'",
        payload,
        "- They share a theme: wobblecrank, oil, gate (cohesion 0.80).",
        {"terms": ["wobblecrank", "oil", "gate"]},
        centroid=None,
        now=now,
        scope="g1",
        dream_run_id=run_id,
        sources=[(said[0].id, texts[0]), (said[1].id, texts[1]), (said[2].id, None)],
        worded_by=[said[0].id, said[1].id],
    )
    await pool.execute(
        "UPDATE dream_runs SET report = $2::jsonb WHERE id = $1",
        run_id,
        {"archetype_analysis": {"notes": [f"proposal #{p.id}: wobblecrank_oiling (3 messages)"]}},
    )
    applied = (await app.governance.vote(p.id, APPROVER, True, now=now)).proposal
    assert applied.status == "applied"

    await app.provenance.forget_message("g1", said[2].id)  # holds none of its words: the wording stays
    assert (await app.governance.get(p.id)).payload["name"] == "wobblecrank_oiling"

    await app.provenance.forget_message("g1", said[0].id)
    after = await app.governance.get(p.id)
    # the wording goes; the example quoted from the message still here stays (its own words, not derived)
    derived = [
        after.title,
        after.payload["name"],
        after.payload["description"],
        after.rationale,
        json.dumps(after.evidence),
    ]
    assert not any(w in t for t in derived for w in ("wobblecrank", "oil", "gate")), derived
    assert after.payload["examples"] == [texts[1]]
    assert after.title == f"new archetype 'redacted_{p.id}'"
    assert after.rationale == "- They share a theme: [redacted], [redacted], [redacted] (cohesion 0.80)."
    archetype = await pool.fetchrow("SELECT archetype_name, description FROM context_archetypes WHERE scope = 'g1'")
    assert archetype["archetype_name"] == f"redacted_{p.id}" and "wobblecrank" not in archetype["description"]
    report = await pool.fetchval("SELECT report FROM dream_runs WHERE id = $1", run_id)
    assert report == {"archetype_analysis": {"notes": [f"proposal #{p.id}: redacted_{p.id} (3 messages)"]}}
    assert {
        r["message_id"]
        for r in await pool.fetch("SELECT message_id FROM proposal_sources WHERE proposal_id = $1", p.id)
    } == {said[1].id}, "provenance stays"
    # a proposal made from a message forgotten in the meantime is stored with its wording redacted
    late = await app.governance.propose(
        "new_archetype",
        "new archetype 'wobblecrank_talk'",
        {**payload, "name": "wobblecrank_talk"},
        "- They share a theme: wobblecrank.",
        {"terms": ["wobblecrank"]},
        centroid=None,
        now=now,
        scope="g1",
        sources=[(said[0].id, texts[0]), (said[1].id, texts[1])],
        worded_by=[said[0].id],
    )
    assert late.payload["name"] == f"redacted_{late.id}" and "wobblecrank" not in late.rationale + late.title


async def test_a_wording_that_messages_left_still_hold_is_kept(app: App) -> None:
    """P8: forgetting one of four people renamed the approved "git_advice" to "redacted_1" and blanked its theme
    words, though the examples left, others', hold them. Only what the forgotten messages alone said goes."""
    now = datetime.now(UTC)
    texts = ["any git advice for a rebase?", "git advice please: undo a commit", "more git advice: stash or branch?"]
    said = [
        await app.conversations.add(NewMessage("g1", "console", f"g{i}", "c1", f"u{i}", f"p{i}", text, now))
        for i, text in enumerate(texts)
    ]
    payload = {
        "name": "git_advice",
        "description": "Messages asking for git advice",
        "examples": texts,
        "context_turns": 5,
        "context_vectors": 5,
        "similarity_threshold": 0.7,
        "triple_depth": 1,
    }
    p = await app.governance.propose(
        "new_archetype",
        "new archetype 'git_advice'",
        payload,
        "- They share a theme: git, advice (cohesion 0.80).",
        {"terms": ["git", "advice"]},
        centroid=None,
        now=now,
        scope="g1",
        sources=[(m.id, m.content) for m in said],
        worded_by=[m.id for m in said],
    )
    report = await app.provenance.forget_author("g1", "u0")
    assert report.counts["proposal_names_redacted"] == 0 and report.counts["proposals_redacted"] == 1
    kept = await app.governance.get(p.id)
    assert kept.payload["name"] == "git_advice" and kept.evidence["terms"] == ["git", "advice"], kept.render()
    assert kept.payload["examples"] == texts[1:]
    # P8: the rationale's counts were of the day it was made, and said nothing of what was forgotten since
    assert "Since then 1 message it drew on was forgotten (counted above)." in kept.render(), kept.render()
    await app.provenance.forget_author("g1", "u1")
    last = await app.provenance.forget_author("g1", "u2")  # no message holds the wording now
    assert last.counts["proposal_names_redacted"] == 1
    assert (await app.governance.get(p.id)).payload["name"] == f"redacted_{p.id}"
