"""Consolidation over weeks (issue 30.1): episodes the graph took over go, their facts stay and stay forgettable."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.app import App
from tests.conftest import admit_every_import
from tests.test_brain import graph

T0 = datetime(2027, 3, 2, 12, 0, tzinfo=UTC)  # after the wall clock, which the test app absorbs at
CELLO = ["I play the cello in the Leeds Philharmonic.", "I still play the cello in the Leeds Philharmonic."]
EDGE = """SELECT e.id, e.evidence_count FROM kg_edges e JOIN kg_nodes t ON t.id = e.target_id
          WHERE e.relation = 'play' AND t.name = 'cello'"""


def history(app: App, path: Path, lines: list[tuple[int, str]]) -> Path:
    """``lines`` (day, text) by Ana as an import file; every line becomes an episode (gate open)."""
    admit_every_import(app)
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"m{i}",
                    "channel": "100",
                    "author": {"id": "7", "name": "Ana"},
                    "timestamp": (T0 + timedelta(days=day)).isoformat().replace("+00:00", "Z"),
                    "text": text,
                }
            )
            + "\n"
            for i, (day, text) in enumerate(lines)
        )
    )
    return path


async def test_a_fact_said_twice_outlives_its_episodes_and_forgetting_its_messages_still_deletes_it(
    app: App, tmp_path: Path
) -> None:
    pool = app.db.pool
    await app.importer.run(history(app, tmp_path / "h.jsonl", [(0, CELLO[0]), (5, CELLO[1])]), "g1")
    ids = [r["id"] for r in await pool.fetch("SELECT id FROM messages WHERE scope = 'g1' ORDER BY created_at")]
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE message_id = ANY($1::bigint[])", ids) == 2
    assert (await pool.fetchrow(EDGE))["evidence_count"] == 2
    first = await app.dream.run(T0 + timedelta(days=6), scope="g1")
    assert first.steps["knowledge_graph_consolidation"].counts["episodes_consolidated"] == 2, first.render()
    later = await app.dream.run(T0 + timedelta(days=6 + 15), scope="g1")
    assert later.steps["episodic_decay"].counts["consolidated"] == 2, later.render()
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE message_id = ANY($1::bigint[])", ids) == 0
    facts = await graph(app).facts_for(
        "g1", "what does Ana play?", author_id=None, depth=1, now=T0 + timedelta(days=22)
    )
    assert any(f.relation == "play" and f.object_name == "cello" for f in facts), "the fact outlived its episodes"
    await app.provenance.forget_message("g1", ids[0])
    assert (await pool.fetchrow(EDGE))["evidence_count"] == 1
    await app.provenance.forget_message("g1", ids[1])
    assert await pool.fetchrow(EDGE) is None, "forgetting the source messages deleted the consolidated fact"


async def test_an_episode_whose_fact_was_said_once_stays_after_the_dream(app: App, tmp_path: Path) -> None:
    pool = app.db.pool
    await app.importer.run(history(app, tmp_path / "h.jsonl", [(0, CELLO[0])]), "g1")
    await app.dream.run(T0 + timedelta(days=1), scope="g1")
    report = await app.dream.run(T0 + timedelta(days=20), scope="g1")
    assert report.steps["episodic_decay"].counts["consolidated"] == 0
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE scope = 'g1'") == 1, "its only evidence stays"


async def test_replaying_an_episode_rehearses_the_facts_it_states(app: App, tmp_path: Path) -> None:
    pool = app.db.pool
    await app.importer.run(history(app, tmp_path / "h.jsonl", [(0, CELLO[0])]), "g1")
    before = await pool.fetchval(
        "SELECT e.reps FROM kg_edges e JOIN kg_nodes t ON t.id = e.target_id WHERE t.name = 'cello'"
    )
    report = await app.dream.run(T0 + timedelta(days=1), scope="g1")
    assert report.steps["episodic_replay"].counts["replayed"] == 1
    assert report.steps["knowledge_graph_consolidation"].counts["rehearsed"] >= 1, report.render()
    after = await pool.fetchval(
        "SELECT e.reps FROM kg_edges e JOIN kg_nodes t ON t.id = e.target_id WHERE t.name = 'cello'"
    )
    assert after == before + 1, "replay reviewed the fact its episode states (FSRS)"


def test_a_seed_gives_the_same_history_and_dev_and_heldout_seeds_differ() -> None:
    from bench.months_data import DEV_SEEDS, HELDOUT_SEEDS, generate

    assert not set(DEV_SEEDS) & set(HELDOUT_SEEDS)
    a, b = generate(DEV_SEEDS[0]), generate(DEV_SEEDS[0])
    assert a.messages == b.messages and [q.evidence for q in a.questions] == [q.evidence for q in b.questions]
    assert generate(HELDOUT_SEEDS[0]).messages != a.messages
    said = {m["id"]: m for m in a.messages}
    for q in a.questions:  # every evidence message is the person's own and says the answer
        assert q.evidence and all(
            q.answer in said[i]["text"] and said[i]["author"]["name"] == q.person for i in q.evidence
        ), q
    assert {q.category for q in a.questions} == {"repeated", "confirmed", "once", "contradicted"}
