"""A persona's version numbers only rise (issue 32.12): forgetting rebuilds the state as the next version after
the newest one it withdrew, and the history says a forgetting happened and which versions it withdrew."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.app import App
from memory.clock import SimulatedClock
from memory.persona.state import Belief, PersonaState, confidence
from tests.test_persona import FILLER, NOW, STRONG_FOR, persona_app, say


async def test_forgetting_rebuilds_the_persona_as_a_later_version_and_says_so(app: App) -> None:
    layer = await persona_app(app)
    async with app.db.pool.acquire() as conn, conn.transaction():  # version 1, shaped by no message
        await layer.store.lock(conn, "g1", None)
        await layer.store.write(
            conn,
            "g1",
            None,
            PersonaState(
                interaction_count=30, last_reflection_at=30, beliefs={"tea": Belief(0.3, confidence(4), 4, 30, [])}
            ),
            "test: a settled view",
            NOW,
        )
    await say(app, *STRONG_FOR, author="zed")
    await say(app, *FILLER[:2], author="ana")
    before = await layer.store.current("g1", None)
    assert before is not None and before.version == 6

    await app.provenance.forget_author("g1", "u-zed")
    after = await layer.store.current("g1", None)
    assert after is not None and after.version == 7, "the rebuild is the next version, not version 2"
    assert "forgetting 3 message(s)" in after.reason and "versions 2-6 withdrawn" in after.reason
    assert [v.version for v in await layer.store.history("g1", None)] == [7, 1]

    await say(app, FILLER[2], author="ana")
    latest = await layer.store.current("g1", None)
    assert latest is not None and latest.version == 8


async def test_a_restricted_persona_rebuilt_from_the_public_one_keeps_counting_up(app: App) -> None:
    layer = await persona_app(app)
    await say(app, *STRONG_FOR, author="zed")
    await say(
        app,
        "ok, the mods channel is quiet today",
        "see you all tomorrow",
        author="mo",
        channel="mods",
        visible_in="mods",
    )
    inside = await layer.store.current("g1", "mods")
    assert inside is not None and inside.version == 2
    await app.provenance.forget_author("g1", "u-zed")
    rebuilt = await layer.store.current("g1", "mods")
    assert rebuilt is not None and rebuilt.version == 3 and "versions 1-2 withdrawn" in rebuilt.reason
    public = await layer.store.current("g1", None)
    assert public is not None and public.version == 4 and "forgetting 3 message(s)" in public.reason


async def test_the_rebuild_after_forgetting_is_dated_by_the_apps_clock(app: App) -> None:
    layer = await persona_app(app)
    assert layer.clock is app.clock, "the app injects its one clock"
    await say(app, *STRONG_FOR, author="zed")
    later = SimulatedClock(datetime(2031, 1, 1, tzinfo=UTC))
    layer.clock = later
    await app.provenance.forget_author("g1", "u-zed")
    dated = await app.db.pool.fetchval(
        "SELECT created_at FROM persona_versions WHERE scope = 'g1' ORDER BY version DESC LIMIT 1"
    )
    assert dated == later.now()
