"""An archetype's match statistics count only messages that are still remembered (issue 32.13): forgetting a
message, a person or a channel takes its matches out of ``match_count`` and ``avg_similarity``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from dream.governance import ApproverPolicy, Governance
from memory.archetypes import MatchRecord
from memory.conversation import ConversationStore, NewMessage
from memory.db import create_pool, load_migrations, migrate
from memory.embed import MiniLMEmbedder
from memory.provenance import Provenance
from tests.test_archetypes import router_for

NAME = "simple_continuation"


async def stats(pool: asyncpg.Pool) -> tuple[int, float | None]:
    row = await pool.fetchrow(
        "SELECT match_count, avg_similarity FROM context_archetypes WHERE archetype_name = $1", NAME
    )
    return row["match_count"], row["avg_similarity"]


async def matched(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder, said: list[tuple[str, str, str]]
) -> list[tuple[int, float]]:
    """Store and classify (author, channel, text) messages of g1; (message id, similarity) of those routed
    to simple_continuation."""
    router = router_for(pool, embedder)
    await router.refresh()
    conversations = ConversationStore(pool)
    now = datetime.now(UTC)
    records = []
    for i, (author, channel, text) in enumerate(said):
        m = await conversations.add(NewMessage("g1", "console", f"m{i}", channel, author, author, text, now))
        records.append(MatchRecord("g1", m.id, router.classify(await embedder.embed(text)), now))
    await router.store.record_matches(records)
    routed = [(r.message_id, r.plan.similarity) for r in records if r.plan.archetype == NAME]
    assert len(routed) == sum(1 for *_, text in said if text in THANKS), "the thanks are routed there"
    return routed


THANKS = ("thanks!", "ok great", "got it, thanks", "nice, sounds good")


async def test_forgetting_a_message_or_a_person_takes_their_matches_out_of_the_statistics(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    routed = await matched(
        pool,
        embedder,
        [
            ("u-ana", "c1", THANKS[0]),
            ("u-zed", "c1", THANKS[1]),
            ("u-zed", "c1", THANKS[2]),
            ("u-ana", "c1", THANKS[3]),
        ],
    )
    assert (await stats(pool))[0] == 4
    provenance = provenance_on(pool)
    await provenance.forget_message("g1", routed[0][0])
    count, mean = await stats(pool)
    assert count == 3 and mean == pytest.approx(sum(s for _, s in routed[1:]) / 3, abs=1e-5)
    await provenance.forget_author("g1", "u-zed")
    count, mean = await stats(pool)
    assert count == 1 and mean == pytest.approx(routed[3][1], abs=1e-5)
    await provenance.forget_author("g1", "u-ana")
    assert await stats(pool) == (0, None)


async def test_forgetting_a_channel_takes_its_matches_out_of_the_statistics(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    routed = await matched(
        pool, embedder, [("u-ana", "c1", THANKS[0]), ("u-ana", "c2", THANKS[1]), ("u-ana", "c2", THANKS[2])]
    )
    await provenance_on(pool).forget_channel("console", "c2", scope="g1")
    count, mean = await stats(pool)
    assert count == 1 and mean == pytest.approx(routed[0][1], abs=1e-5)


async def test_a_match_logged_again_after_an_edit_counts_once(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    router = router_for(pool, embedder)
    await router.refresh()
    [(message_id, similarity)] = await matched(pool, embedder, [("u-ana", "c1", THANKS[0])])
    async with pool.acquire() as conn, conn.transaction():  # what Absorption.edited does
        await conn.execute("DELETE FROM archetype_matches WHERE message_id = $1", message_id)
        plan = router.classify(await embedder.embed(THANKS[0]))
        await router.store.record_matches([MatchRecord("g1", message_id, plan, datetime.now(UTC))], conn)
    count, mean = await stats(pool)
    assert count == 1 and mean == pytest.approx(similarity, abs=1e-5)


async def test_the_migration_recounts_statistics_that_still_held_forgotten_matches(
    empty_db_url: str, embedder: MiniLMEmbedder
) -> None:
    before = [m for m in load_migrations() if m.name < "021"]
    await migrate(empty_db_url, before)
    pool = await create_pool(empty_db_url)
    try:
        routed = await matched(pool, embedder, [("u-ana", "c1", THANKS[0]), ("u-zed", "c1", THANKS[1])])
        await pool.execute("DELETE FROM messages WHERE id = $1", routed[1][0])  # forgotten before the fix
        assert (await stats(pool))[0] == 2
        await migrate(empty_db_url)
        count, mean = await stats(pool)
        assert count == 1 and mean == pytest.approx(routed[0][1], abs=1e-5)
    finally:
        await pool.close()


def provenance_on(pool: asyncpg.Pool, layers: tuple = ()) -> Provenance:
    """Forgetting as the app wires it, with governance (which owns the proposals and votes) and these layers."""
    return Provenance(pool, layers, proposals=Governance(pool, ApproverPolicy(frozenset()), ttl=timedelta(hours=1)))
