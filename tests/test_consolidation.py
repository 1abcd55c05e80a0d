"""The dream's replay consolidates routed tuples into the graph; contradictions lower the old edge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.app import App
from memory.conversation import NewMessage, StoredMessage
from memory.extract import TripleExtractor
from memory.semantic import GateConfig, SemanticMemory
from tests.test_brain import graph

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


async def stored(app: App, text: str, *, author: str = "ana", at: datetime = T0, n: int = 0) -> StoredMessage:
    return await app.conversations.add(
        NewMessage("g1", "console", f"c{abs(hash((text, author, n)))}", "c1", f"u-{author}", author, text, at)
    )


def strict(app: App) -> SemanticMemory:
    """A gate nothing passes: every tuple is routed to episodic memory."""
    return SemanticMemory(app.db.pool, TripleExtractor(), app.embedder, GateConfig(threshold=10.0))


def open_gate(app: App) -> SemanticMemory:
    return SemanticMemory(app.db.pool, TripleExtractor(), app.embedder, GateConfig(enabled=False))


LISBON = """SELECT e.id, e.evidence_count, e.confidence, e.contradicted_at FROM kg_edges e
            JOIN kg_nodes t ON t.id = e.target_id WHERE e.relation = 'live_in' AND t.name = $1"""


async def test_a_routed_tuple_is_admitted_once_a_second_message_supports_it(app: App) -> None:
    semantic, pool = strict(app), app.db.pool
    first = await stored(app, "My sister lives in Lisbon")
    assert {d.action for d in await semantic.absorb(first, T0)} == {"route_to_episodic"}
    counts = await semantic.consolidate(T0 + timedelta(hours=8))
    assert counts["admitted"] == 0 and counts["waiting"] == 2, "one message is not enough"
    assert await pool.fetchval("SELECT count(*) FROM kg_edges") == 0
    second = await stored(app, "My sister lives in Lisbon, she loves it there", at=T0 + timedelta(days=1))
    await semantic.absorb(second, T0 + timedelta(days=1))
    counts = await semantic.consolidate(T0 + timedelta(days=1, hours=8))
    assert counts["admitted"] == 2 and counts["waiting"] == 0  # (sister, live_in, lisbon) and (ana, has, sister)
    edge = await pool.fetchrow(LISBON, "lisbon")
    assert edge["evidence_count"] == 2
    assert await pool.fetchval("SELECT count(*) FROM kg_edge_sources WHERE edge_id = $1", edge["id"]) == 2
    facts = await graph(app).facts_for(
        "g1", "where does my sister live?", author_id="u-ana", depth=2, now=T0 + timedelta(days=2)
    )
    assert any(f.relation == "live_in" and f.object_name == "lisbon" for f in facts), "recallable once admitted"
    again = await semantic.consolidate(T0 + timedelta(days=2))
    assert again["routed_reviewed"] == 0, "a consolidated decision is not read again"
    await app.provenance.forget_message("g1", first.id)
    assert (await pool.fetchrow(LISBON, "lisbon"))["evidence_count"] == 1, "the other message still supports it"
    await app.provenance.forget_message("g1", second.id)
    assert await pool.fetchval("SELECT count(*) FROM kg_edges") == 0, "forgetting the sources forgets the fact"


async def test_a_relation_the_graph_knows_well_is_fast_tracked(app: App) -> None:
    gate_off = open_gate(app)
    for i, (who, city) in enumerate(
        [("ben", "Oslo"), ("chloe", "Lima"), ("dev", "Seoul"), ("emil", "Kyoto"), ("fatima", "Dublin")]
    ):
        await gate_off.absorb(await stored(app, f"I live in {city}", author=who, n=i), T0)
    semantic = strict(app)
    await semantic.absorb(await stored(app, "I live in Toronto", author="goran"), T0)
    counts = await semantic.consolidate(T0 + timedelta(hours=8))
    assert counts["fast_tracked"] == 1 and counts["admitted"] == 0
    assert (await app.db.pool.fetchrow(LISBON, "toronto"))["evidence_count"] == 1
    unknown = await semantic.consolidate(T0 + timedelta(hours=9), fast_track=100)
    assert unknown["routed_reviewed"] == 0


async def test_a_routed_tuple_whose_edge_exists_by_now_joins_it(app: App) -> None:
    await strict(app).absorb(await stored(app, "I live in Lisbon"), T0)
    await open_gate(app).absorb(await stored(app, "I live in Lisbon, near the river", n=1), T0 + timedelta(hours=1))
    counts = await strict(app).consolidate(T0 + timedelta(hours=8))
    assert counts["joined_existing"] == 1 and counts["admitted"] == 0
    assert (await app.db.pool.fetchrow(LISBON, "lisbon"))["evidence_count"] == 2


async def test_a_newer_value_of_a_one_valued_relation_lowers_the_old_edge(app: App) -> None:
    semantic, pool = open_gate(app), app.db.pool
    await semantic.absorb(await stored(app, "I live in Lisbon"), T0)
    before = (await pool.fetchrow(LISBON, "lisbon"))["confidence"]
    await semantic.absorb(await stored(app, "I live in Porto now", at=T0 + timedelta(days=30)), T0 + timedelta(days=30))
    old, new = await pool.fetchrow(LISBON, "lisbon"), await pool.fetchrow(LISBON, "porto")
    assert old is not None, "contradicted, not deleted"
    factor = await pool.fetchval("SELECT kg_contradicted_factor()")
    assert 0 < factor < 1 and abs(old["confidence"] - before * factor) < 1e-6 and old["contradicted_at"] is not None
    assert new["contradicted_at"] is None and new["confidence"] == before


async def test_a_negation_lowers_the_claim_it_denies_unless_that_has_far_more_evidence(app: App) -> None:
    semantic, pool = open_gate(app), app.db.pool
    jazz = """SELECT e.relation, e.confidence, e.contradicted_at FROM kg_edges e JOIN kg_nodes t
              ON t.id = e.target_id WHERE t.name = 'jazz' ORDER BY e.relation"""
    for i in range(3):
        await semantic.absorb(await stored(app, "I like jazz", n=i), T0 + timedelta(hours=i))
    await semantic.absorb(await stored(app, "I do not like jazz", at=T0 + timedelta(days=1)), T0 + timedelta(days=1))
    rows = {r["relation"]: r for r in await pool.fetch(jazz)}
    assert rows["like"]["contradicted_at"] is None, "three times said outweighs one denial"
    assert rows["not_like"]["contradicted_at"] is not None


async def test_the_dream_reports_the_consolidation_step(app: App) -> None:
    report = await app.dream.run(T0)
    step = report.steps["knowledge_graph_consolidation"]
    assert step.error is None and {"routed_reviewed", "admitted", "contradictions"} <= set(step.counts)


STABILITY = """SELECT e.stability FROM kg_edges e JOIN kg_nodes t ON t.id = e.target_id
               WHERE t.name = $1 AND e.relation = $2"""


async def test_fsrs_ratings_come_from_what_happened(app: App) -> None:
    """GhostKG's ratings: "remember this" is Easy, a hedge Hard, a plain statement Good, a contradiction Again."""
    semantic, pool = open_gate(app), app.db.pool
    await semantic.absorb(await stored(app, "I like chess"), T0)
    await semantic.absorb(await stored(app, "I like sushi. Remember this!", n=1), T0)
    await semantic.absorb(await stored(app, "I think I like opera", n=2), T0)
    good, easy, hard = [await pool.fetchval(STABILITY, name, "like") for name in ("chess", "sushi", "opera")]
    assert easy > good > hard
    await semantic.absorb(
        await stored(app, "I do not like chess", at=T0 + timedelta(days=2), n=3), T0 + timedelta(days=2)
    )
    assert await pool.fetchval(STABILITY, "chess", "like") < good, "the contradicted edge lapsed (Again)"


async def test_pinning_a_message_pins_its_facts_with_an_easy_review(app: App) -> None:
    semantic, pool = open_gate(app), app.db.pool
    message = await stored(app, "I work as a nurse")
    await semantic.absorb(message, T0)
    before = await pool.fetchval("SELECT stability FROM kg_edges WHERE relation = 'work_as'")
    assert await semantic.pin("g1", message.id, T0 + timedelta(days=3)) == 1
    row = await pool.fetchrow("SELECT pinned, stability FROM kg_edges WHERE relation = 'work_as'")
    assert row["pinned"] and row["stability"] > before
    assert await semantic.pin("g1", message.id, T0 + timedelta(days=3)) == 0, "already pinned"
    assert await semantic.pin("other-guild", message.id, T0) == 0, "never across scopes"
    assert await semantic.prune(T0 + timedelta(days=2000), min_retrievability=0.99, min_confidence=1.0) == 0
