"""Archetype routing (seed 003) on the real database and the real MiniLM."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import asyncpg
import numpy as np
import pytest

from bot.config import Settings
from memory.archetypes import ArchetypeRouter, ArchetypeStore, MatchRecord
from memory.conversation import ConversationStore, NewMessage
from memory.embed import MiniLMEmbedder
from memory.errors import InvalidInput

# Paraphrases that are not among any archetype's examples.
HELD_OUT = {
    "technical_debugging": [
        "my python script dies with a KeyError, no idea why",
        "the unit tests fail after I upgraded the library",
        "I get a null pointer exception when the page loads",
        "this SQL query returns a syntax error",
    ],
    "preference_exploration": [
        "which books do I enjoy reading?",
        "what sort of food am I into?",
        "what are the things I like doing on weekends?",
    ],
    "simple_continuation": ["thank you so much", "okay, makes sense", "great, cheers", "cool cool"],
    "memory_recall": [
        "what did I tell you about my sister last time?",
        "do you remember what we discussed yesterday?",
        "earlier you said something about my job, what was it?",
    ],
    "personal_facts": [
        "what's my cat's name?",
        "where does my sister live?",
        "what instrument does my daughter play?",
    ],
    "general_question": [
        "how do vaccines train the immune system?",
        "can you explain how photosynthesis works?",
        "what is the capital of Australia?",
    ],
}


def router_for(pool: asyncpg.Pool, embedder: MiniLMEmbedder, **kw: float) -> ArchetypeRouter:
    settings = Settings(_env_file=None)
    return ArchetypeRouter(
        ArchetypeStore(pool),
        embedder,
        settings.default_plan,
        min_similarity=kw.get("min_similarity", settings.archetype_min_similarity),
        refresh_seconds=kw.get("refresh_seconds", 3600),
    )


async def test_held_out_paraphrases_route_to_their_archetype(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    router = router_for(pool, embedder)
    await router.refresh()
    texts = [t for ts in HELD_OUT.values() for t in ts]
    expected = [name for name, ts in HELD_OUT.items() for _ in ts]
    vectors = await embedder.embed_many(texts)
    got = [router.classify(v).archetype for v in vectors]
    misses = [(t, e, g) for t, e, g in zip(texts, expected, got) if e != g]
    assert not misses, misses


async def test_first_load_computes_and_caches_centroids(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    assert await pool.fetchval("SELECT count(*) FROM context_archetypes WHERE centroid_embedding IS NULL") == 7
    await router_for(pool, embedder).refresh()
    assert await pool.fetchval("SELECT count(*) FROM context_archetypes WHERE centroid_embedding IS NULL") == 0


async def test_editing_examples_invalidates_and_recomputes_the_centroid(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    router = router_for(pool, embedder)
    await router.refresh()
    before = (
        await pool.fetchval(
            "SELECT centroid_embedding FROM context_archetypes WHERE archetype_name = 'general_question'"
        )
    ).to_numpy()
    await router.store.set_examples(
        "general_question", ["Tell me about the history of Rome", "Who built the pyramids?"]
    )
    assert (
        await pool.fetchval(
            "SELECT centroid_embedding FROM context_archetypes WHERE archetype_name = 'general_question'"
        )
        is None
    ), "the trigger drops the cached centroid"
    await router.refresh()
    after = (
        await pool.fetchval(
            "SELECT centroid_embedding FROM context_archetypes WHERE archetype_name = 'general_question'"
        )
    ).to_numpy()
    expected = (await embedder.embed_many(["Tell me about the history of Rome", "Who built the pyramids?"])).mean(0)
    expected /= np.linalg.norm(expected)
    assert float(after @ expected) > 0.999
    assert float(before @ after) < 0.95


async def test_a_change_in_the_table_reaches_a_running_router_without_waiting_for_the_poll(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    router = router_for(pool, embedder, refresh_seconds=3600)
    await router.start(pool)
    try:
        assert "simple_continuation" in [a.name for a in router.archetypes]
        await pool.execute("UPDATE context_archetypes SET active = false WHERE archetype_name = 'simple_continuation'")
        for _ in range(50):
            if "simple_continuation" not in [a.name for a in router.archetypes]:
                break
            await asyncio.sleep(0.1)
        assert "simple_continuation" not in [a.name for a in router.archetypes]
    finally:
        await router.stop()


async def test_a_router_whose_listening_connection_is_cut_listens_again(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    """Another process's approval reaches this one's cache by NOTIFY: a cut connection (a server restart) must not
    leave it deaf until the poll, neither to what changed while it was cut nor to what changes after."""
    router = router_for(pool, embedder, refresh_seconds=3600)
    await router.start(pool)

    async def heard(name: str, active: bool) -> bool:
        for _ in range(50):
            if (name in [a.name for a in router.archetypes]) == active:
                return True
            await asyncio.sleep(0.1)
        return False

    try:
        assert router._listener is not None
        await pool.execute("SELECT pg_terminate_backend($1)", router._listener.get_server_pid())
        await pool.execute("UPDATE context_archetypes SET active = false WHERE archetype_name = 'simple_continuation'")
        assert await heard("simple_continuation", False), "the change made while it was cut"
        await pool.execute("UPDATE context_archetypes SET active = false WHERE archetype_name = 'general_question'")
        assert await heard("general_question", False), "and the next one, by NOTIFY"
    finally:
        await router.stop()


async def test_a_failed_listen_again_is_one_line_and_is_retried(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """LISTEN on a fresh connection can fail in ways asyncpg does not call a connection error (a CI run saw
    InternalClientError while the server shut down): that is one warning line, no traceback, and a retry."""
    router = router_for(pool, embedder, refresh_seconds=3600)
    await router.start(pool)
    real_listen = router._listen
    failures: list[int] = []

    async def flaky_listen() -> None:
        if not failures:
            failures.append(1)
            raise asyncpg.exceptions.InternalClientError("cannot switch to state 11; another operation is in progress")
        await real_listen()

    monkeypatch.setattr(router, "_listen", flaky_listen)
    monkeypatch.setattr("memory.archetypes.LISTEN_RETRY_S", 0.2)
    try:
        assert router._listener is not None
        await pool.execute("SELECT pg_terminate_backend($1)", router._listener.get_server_pid())
        for _ in range(100):
            if failures and router._listener is not None and not router._listener_lost:
                break
            await asyncio.sleep(0.1)
        assert failures and router._listener is not None and not router._listener_lost
        warnings = [r for r in caplog.records if "LISTEN failed" in r.getMessage()]
        assert len(warnings) == 1 and warnings[0].exc_info is None
    finally:
        await router.stop()


@pytest.mark.parametrize(
    "error, level",
    [
        (OSError("connect call failed ('127.0.0.1', 5432)"), "WARNING"),  # the database is unreachable
        (ValueError("centroid has 3 dimensions,\nexpected 384"), "ERROR"),  # a broken refresh (a bug)
    ],
    ids=["unreachable", "broken"],
)
async def test_a_failed_refresh_says_why_in_one_line(
    pool: asyncpg.Pool,
    embedder: MiniLMEmbedder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    error: Exception,
    level: str,
) -> None:
    """A refresh that fails keeps the cache and logs one line with the error's class and message (its lines
    joined), not only its class; an unreachable database is expected and gets no traceback, an unexpected error
    (a bug) keeps its traceback after that line."""
    router = router_for(pool, embedder, refresh_seconds=3600)
    await router.start(pool)
    cached = len(router.archetypes)
    attempts: list[int] = []

    async def failing_refresh() -> None:
        attempts.append(1)
        raise error

    monkeypatch.setattr(router, "refresh", failing_refresh)
    try:
        router._on_notify()
        for _ in range(50):
            if attempts:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.1)  # the failure is logged right after the attempt
        [line] = [r for r in caplog.records if "archetype refresh failed" in r.getMessage()]
        message = " ".join(str(error).split())
        assert f"{type(error).__name__}: {message}" in line.getMessage() and "\n" not in line.getMessage()
        assert line.levelname == level and bool(line.exc_info) == (level == "ERROR")
        assert len(router.archetypes) == cached
    finally:
        await router.stop()


async def test_stop_returns_when_a_change_arrives_as_it_stops(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    """A NOTIFY landing in the same tick as stop() (an approval right before shutdown) once swallowed the
    refresh loop's cancel (asyncio.wait_for on 3.11), and stop() waited forever: the CI run that never ended."""
    router = router_for(pool, embedder, refresh_seconds=3600)
    await router.start(pool)
    await asyncio.sleep(0.05)  # the loop is waiting for a change
    asyncio.get_running_loop().call_soon(router._on_notify)  # the change lands in the tick stop() cancels in
    stopping = asyncio.create_task(router.stop())
    done, _ = await asyncio.wait([stopping], timeout=10)
    assert done, "stop() hung"


@pytest.mark.parametrize(
    "column, value",
    [
        ("context_turns", 0),
        ("context_turns", 21),
        ("context_vectors", 16),
        ("similarity_threshold", 0.95),
        ("similarity_threshold", 0.4),
        ("triple_depth", 4),
        ("memory_words", -1),
        ("memory_words", 4001),
    ],
)
async def test_check_constraints_refuse_out_of_range_plans(pool: asyncpg.Pool, column: str, value: float) -> None:
    with pytest.raises(asyncpg.CheckViolationError):
        await pool.execute(
            f"UPDATE context_archetypes SET {column} = $1 WHERE archetype_name = 'general_question'", value
        )


async def test_an_archetypes_word_budget_reaches_its_plan(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    router = router_for(pool, embedder)
    await router.refresh()
    vector = await embedder.embed("what instrument does my daughter play?")
    assert router.classify(vector).memory_words is None  # seeded archetypes leave it to memory's default
    name = router.classify(vector).archetype
    assert name is not None
    await pool.execute("UPDATE context_archetypes SET memory_words = 120 WHERE archetype_name = $1", name)
    await router.refresh()
    assert router.classify(vector).memory_words == 120
    assert (await ArchetypeStore(pool).get(name)).memory_words == 120


async def test_low_similarity_uses_the_default_plan_but_logs_the_best(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    router = router_for(pool, embedder, min_similarity=0.99)
    await router.refresh()
    plan = router.classify(await embedder.embed("thanks a lot"))
    assert plan.used_default and plan.archetype is None
    assert plan.best_archetype == "simple_continuation" and plan.archetype_id is not None
    assert plan.turns == Settings(_env_file=None).default_context_turns


async def test_matches_are_logged_and_fold_into_statistics(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    router = router_for(pool, embedder)
    await router.refresh()
    conversations = ConversationStore(pool)
    now = datetime.now(UTC)
    records = []
    for i, text in enumerate(["thanks!", "ok great", "what is a black hole?"]):
        m = await conversations.add(NewMessage("g1", "console", f"m{i}", "c", "u", "u", text, now))
        records.append(MatchRecord("g1", m.id, router.classify(await embedder.embed(text)), now))
    await router.store.record_matches(records)
    assert await pool.fetchval("SELECT count(*) FROM archetype_matches") == 3
    row = await pool.fetchrow(
        "SELECT match_count, avg_similarity FROM context_archetypes WHERE archetype_name = 'simple_continuation'"
    )
    sims = [r.plan.similarity for r in records if r.plan.archetype == "simple_continuation"]
    assert row["match_count"] == len(sims) == 2
    assert row["avg_similarity"] == pytest.approx(sum(sims) / 2, abs=1e-5)


# --- per-server archetypes and overrides ------------------------------------------------------------


async def test_a_guild_override_switches_an_archetype_off_there_only(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    router = router_for(pool, embedder)
    store = router.store
    switched = await store.set_override("g1", "simple_continuation", False, "u-admin")
    assert switched.active is False and switched.override_by == "u-admin"
    await router.refresh()
    thanks = await embedder.embed("thanks a lot")
    assert router.classify(thanks, "g1").archetype != "simple_continuation"
    assert router.classify(thanks, "g2").archetype == "simple_continuation"
    assert router.classify(thanks).archetype == "simple_continuation"
    in_g1 = {a.name: a for a in await store.list_archetypes(scope="g1")}
    assert in_g1["simple_continuation"].active is False
    assert "simple_continuation" not in {a.name for a in await store.list_archetypes(scope="g1", active_only=True)}
    assert (await store.get("simple_continuation")).active is True, "the global row is unchanged"
    row = await pool.fetchrow("SELECT scope, active, set_by FROM archetype_overrides")
    assert tuple(row) == ("g1", False, "u-admin")
    with pytest.raises(InvalidInput, match="unknown archetype"):
        await store.set_override("g1", "no_such_thing", False, "u-admin")


async def test_a_guild_can_switch_on_what_the_owner_switched_off(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    router = router_for(pool, embedder)
    await router.store.set_active("simple_continuation", False)
    await router.store.set_override("g1", "simple_continuation", True, "u-admin")
    await router.refresh()
    thanks = await embedder.embed("thanks a lot")
    assert router.classify(thanks, "g1").archetype == "simple_continuation"
    assert router.classify(thanks, "g2").archetype != "simple_continuation"
    assert "simple_continuation" in {a.name for a in router.archetypes_in("g1")}


async def test_a_guilds_own_archetype_shadows_the_global_one_of_that_name(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    await pool.execute(
        """INSERT INTO context_archetypes (archetype_name, description, example_messages, context_turns,
               context_vectors, similarity_threshold, triple_depth, scope)
           SELECT archetype_name, description, example_messages, 3, 1, 0.8, 0, 'g1'
           FROM context_archetypes WHERE archetype_name = 'general_question' AND scope IS NULL"""
    )
    router = router_for(pool, embedder)
    await router.refresh()
    question = await embedder.embed("how do volcanoes erupt?")
    mine, theirs = router.classify(question, "g1"), router.classify(question, "g2")
    assert mine.archetype == theirs.archetype == "general_question"
    assert (mine.turns, mine.triple_depth) == (3, 0) and (theirs.turns, theirs.triple_depth) != (3, 0)
    assert [a.name for a in router.archetypes_in("g1")].count("general_question") == 1
    assert (await router.store.get("general_question", scope="g1")).scope == "g1"
    assert (await router.store.get("general_question")).scope is None
    # an override in g1 switches its own archetype, not the global one
    await router.store.set_override("g1", "general_question", False, "u-admin")
    own_id = (await router.store.get("general_question", scope="g1")).id
    assert await pool.fetchval("SELECT archetype_id FROM archetype_overrides") == own_id


async def test_an_override_reaches_a_running_router_without_waiting_for_the_poll(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    router = router_for(pool, embedder, refresh_seconds=3600)
    await router.start(pool)
    try:
        await router.store.set_override("g1", "simple_continuation", False, "u-admin")
        for _ in range(50):
            if "simple_continuation" not in [a.name for a in router.archetypes_in("g1")]:
                break
            await asyncio.sleep(0.1)
        assert "simple_continuation" not in [a.name for a in router.archetypes_in("g1")]
        assert "simple_continuation" in [a.name for a in router.archetypes]
    finally:
        await router.stop()
