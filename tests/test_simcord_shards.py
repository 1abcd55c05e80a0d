"""More than one process (issue 29.5): two `hippobot run` processes as two shards of one bot on one PostgreSQL,
driven through SimCord.

Shard 0 is the bot SimCord's plugin runs (`simcord_env`): the bot class `hippobot run` starts, with
``shard_ids=[0], shard_count=2``, on the test app. Shard 1 is a second bot of that class on a second App (its
own pool, models and scheduler on the same test database, as a second process has). SimCord runs one bot per
event loop, so shard 1 is attached to the same simulated Discord by hand (``attach_shard``), through SimCord's
own ShardRouter and FakeHTTPClient: which shard gets an event (a guild's goes to shard ``(guild_id >> 22) %
count``, a DM's to shard 0) is SimCord's routing, as Discord's, not ours. SimCord's settling covers shard 0's
work only; shard 1's is waited for through its event tasks and its memory writer (``Shard.settle``). The two
processes share one event loop here, but not a connection: advisory locks and NOTIFY work between them as
between two processes. ``attach_shard`` uses SimCord internals (``simcord._dpy_internals``, its ShardRouter),
which is why pyproject pins simcord to one version.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import discord
import pytest
import simcord
from pydantic import SecretStr, ValidationError
from simcord import _dpy_internals
from simcord.backend import serializers
from simcord.gateway import ShardRouter
from simcord.http import FakeHTTPClient

from bot.app import App
from bot.config import Settings, settings_problems
from bot.discord.client import DiscordSetupError, HippoBot, run_discord, shard_lock_keys
from bot.discord.dream import DreamCog
from dream.governance import Proposal
from memory.db import session_locks
from memory.embed import MiniLMEmbedder
from memory.layers.episodes import EpisodesLayer
from tests.conftest import close_or_explain, layer_of, make_settings
from tests.fakes import ScriptedLLM
from tests.simcord_support import SimBase, dream_cog_of

pytestmark = pytest.mark.simcord(settle_timeout=60)

SHARDS = 2
REPLY_0, REPLY_1 = "Shard zero here.", "Shard one here."


# --- the settings ------------------------------------------------------------------------------------------


def shard_settings(**env: str) -> Settings | str:
    """Settings from HIPPOBOT_* values as a person sets them, or what ``hippobot`` would say is wrong."""
    values: dict[str, Any] = {name.lower(): value for name, value in env.items()}  # each a str pydantic coerces
    try:
        return Settings(_env_file=None, **values)
    except ValidationError as exc:
        return settings_problems(exc)


def test_shard_ids_must_lie_below_the_shard_count() -> None:
    assert "shard 2 is not below HIPPOBOT_SHARD_COUNT=2" in str(shard_settings(shard_ids="0,2", shard_count="2"))
    assert "needs HIPPOBOT_SHARD_COUNT" in str(shard_settings(shard_ids="1"))
    assert "'x' is not a shard id" in str(shard_settings(shard_ids="0,x", shard_count="2"))
    assert "named twice" in str(shard_settings(shard_ids="1,1", shard_count="2"))
    ok = shard_settings(shard_ids="1, 0", shard_count="2")
    assert isinstance(ok, Settings) and (ok.shard_ids, ok.shard_count) == ([0, 1], 2)


async def test_the_bot_runs_the_configured_shards_and_unset_is_as_before(app: App) -> None:
    two = HippoBot(app, app.settings.model_copy(update={"shard_ids": [1], "shard_count": 2}))
    assert (two.shard_ids, two.shard_count) == ([1], 2)
    alone = HippoBot(app, app.settings)
    assert (alone.shard_ids, alone.shard_count) == (None, None), "unset: discord.py asks Discord, as before"


def shard_settings_of(app: App, ids: list[int] | None, count: int | None) -> Settings:
    return app.settings.model_copy(
        update={"discord_token": SecretStr("a-token"), "shard_ids": ids, "shard_count": count}
    )


async def test_no_two_processes_on_one_database_run_the_same_shard(app: App, pool: asyncpg.Pool) -> None:
    def held_by_one(ids: list[int] | None, count: int | None) -> Any:
        exclusive, shared = shard_lock_keys(shard_settings_of(app, ids, count))
        return session_locks(pool, exclusive=exclusive, shared=shared)  # the process already running

    async def second_may_run(ids: list[int] | None, count: int | None) -> bool:
        exclusive, shared = shard_lock_keys(shard_settings_of(app, ids, count))
        async with session_locks(app.db.pool, exclusive=exclusive, shared=shared) as ours:
            return ours

    async with held_by_one([0], 2) as running:
        assert running
        assert not await second_may_run([0], 2), "shard 0 twice"
        assert not await second_may_run([1, 0], 2), "shard 0 twice, among others"
        assert not await second_may_run(None, None), "a process running every shard"
        assert not await second_may_run(None, 2), "the count alone: every shard"
        assert await second_may_run([1], 2), "the other shard"
    async with held_by_one(None, None) as running:
        assert running
        assert not await second_may_run([1], 2)
    assert await second_may_run(None, None), "free again once the first stopped"


async def test_hippobot_run_refuses_a_shard_another_process_runs(
    app: App, pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.discord import client as client_module

    async def open_app(settings: Settings, **kw: Any) -> App:
        return app

    started: list[Any] = []

    async def start(self: HippoBot, token: str, **kw: Any) -> None:
        started.append(self.shard_ids)

    monkeypatch.setattr(client_module.App, "open", open_app)
    monkeypatch.setattr(client_module.HippoBot, "start", start)
    settings = shard_settings_of(app, [1], 2)
    exclusive, shared = shard_lock_keys(settings)
    async with session_locks(pool, exclusive=exclusive, shared=shared):
        with pytest.raises(DiscordSetupError, match=r"already runs shard\(s\) 1 of this bot"):
            await run_discord(settings)
    assert started == [] and app.closed, "never connected, and the app is closed on the way out"


# --- two shards on one simulated Discord and one database ---------------------------------------------------


def sharded(app: App, shard: int) -> HippoBot:
    """The bot `hippobot run` starts with HIPPOBOT_SHARD_IDS=<shard> and HIPPOBOT_SHARD_COUNT=2."""
    return HippoBot(
        app,
        app.settings.model_copy(
            update={"discord_edit_interval": 0.2, "discord_rate_limit": 0, "shard_ids": [shard], "shard_count": SHARDS}
        ),
    )


@pytest.fixture
def simcord_bot(app: App, llm: ScriptedLLM) -> HippoBot:
    llm.reply = REPLY_0
    return sharded(app, 0)


@dataclass
class Shard:
    """The second process: its app, its bot, and the tasks its gateway events started."""

    app: App
    bot: HippoBot
    llm: ScriptedLLM
    feed: Callable[[str, Any], None] | None = None
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    async def settle(self) -> None:
        """Every event handler this shard started has finished, and so has its memory writer."""
        for _ in range(100):
            waiting = {t for t in self.tasks if not t.done()}
            if not waiting:
                await self.app.brain.drain()
                if not any(not t.done() for t in self.tasks):
                    return
            else:
                await asyncio.wait(waiting, timeout=60)
        raise AssertionError("shard 1 never settled")

    @property
    def cog(self) -> DreamCog:
        return dream_cog_of(self.bot)


async def attach_shard(env: simcord.Env, shard: Shard) -> None:
    """Connect ``shard.bot`` to ``env``'s Discord as SimCord connects its own bot, without SimCord's ownership
    of its work: it runs in a context of its own, on the real clock."""
    bot, backend, loop = shard.bot, env.backend, asyncio.get_running_loop()
    _dpy_internals.install_http(bot, FakeHTTPClient(backend, loop))
    _dpy_internals.set_guild_ready_timeout(bot, 0.0)
    state = _dpy_internals.get_state(bot)
    state.shard_count, state.shard_ids = SHARDS, list(bot.shard_ids or ())  # discord.py sets them on connect
    router = ShardRouter(backend, state, bot.dispatch, SHARDS, tuple(state.shard_ids))
    own = contextvars.Context()
    if env._webhook_adapter is not None:  # interaction responses travel through it
        own.run(_dpy_internals.set_webhook_adapter, env._webhook_adapter)

    def feed(event: str, payload: Any) -> None:
        before = asyncio.all_tasks(loop)
        own.copy().run(router.feed, event, payload)
        shard.tasks |= asyncio.all_tasks(loop) - before

    async def connect() -> None:
        await bot.login("simcord.fake.token")  # runs setup_hook: the cogs, the scheduler
        _dpy_internals.install_shards(bot, router.shards)
        for shard_id in router.shard_ids:
            router.identify(shard_id)
        for guild in list(backend.guilds.values()):  # the servers that exist already, as a GUILD_CREATE each
            feed("GUILD_CREATE", serializers.guild_create_payload(backend, guild))

    backend.subscribers.append(feed)
    shard.feed = feed
    await loop.create_task(connect(), context=own.copy())
    await asyncio.wait_for(bot.wait_until_ready(), 30)
    await shard.settle()


async def detach_shard(env: simcord.Env, shard: Shard) -> None:
    if shard.feed in env.backend.subscribers:
        env.backend.subscribers.remove(shard.feed)
    await shard.settle()
    try:
        await shard.bot.close()  # closes its app too
    finally:
        await close_or_explain(shard.app)  # idempotent; closes it if the bot could not


@dataclass
class Sim(SimBase):
    one: Shard
    guild0: simcord.GuildHandle  # served by shard 0 (the env's bot)
    guild1: simcord.GuildHandle  # served by shard 1
    general0: simcord.ChannelHandle
    general1: simcord.ChannelHandle
    dreams0: simcord.ChannelHandle
    dreams1: simcord.ChannelHandle
    ana0: simcord.MemberActor
    ana1: simcord.MemberActor

    async def settle_both(self) -> None:
        for _ in range(2):  # one shard's work may be what the other reacts to
            await self.settle()
            await self.one.settle()

    async def tell(self, who: simcord.MemberActor, channel: simcord.ChannelHandle, text: str) -> discord.Message:
        sent = await who.send(channel, f"{self.me.mention} {text}")
        await self.settle_both()
        return sent

    def replies(self, channel: simcord.ChannelHandle) -> list[str]:
        return [m.content for m in self.bot_messages(channel)]


@pytest.fixture
async def sim(
    simcord_env: simcord.Env, simcord_bot: HippoBot, app: App, db_url: str, tmp_path: Path, embedder: MiniLMEmbedder
) -> AsyncIterator[Sim]:
    env = simcord_env
    llm1 = ScriptedLLM(REPLY_1)
    # the second process: its own App (pool, models, scheduler, archetype cache) on the same database
    app1 = await App.open(make_settings(db_url, tmp_path / "shard1"), with_llm=True, llm=llm1, embedder=embedder)
    one = Shard(app1, sharded(app1, 1), llm1)
    try:
        await attach_shard(env, one)
        guild0, guild1 = env.create_guild("Shard Zero Hall", shard_id=0), env.create_guild("Shard One Hall", shard_id=1)
        chans = [g.create_text_channel(name) for g in (guild0, guild1) for name in ("general", "dreams")]
        ana0 = guild0.add_member(env.create_user("ana0"))
        ana1 = guild1.add_member(env.create_user("ana1"))
        await simcord_bot.tree.sync()
        s = Sim(env, simcord_bot, app, one, guild0, guild1, chans[0], chans[2], chans[1], chans[3], ana0, ana1)
        await s.settle_both()
        assert one.bot.get_guild(guild1.id) is not None and one.bot.get_guild(guild0.id) is None
        assert simcord_bot.get_guild(guild0.id) is not None and simcord_bot.get_guild(guild1.id) is None
        yield s
        await s.settle_both()
    finally:
        await detach_shard(env, one)


async def test_a_message_is_answered_and_absorbed_once_by_its_servers_shard(sim: Sim) -> None:
    told0 = await sim.tell(sim.ana0, sim.general0, "my cat is called Miso")
    told1 = await sim.tell(sim.ana1, sim.general1, "my dog is called Rex")
    assert sim.replies(sim.general0) == [REPLY_0], "shard 0's server: answered once, by shard 0"
    assert sim.replies(sim.general1) == [REPLY_1], "shard 1's server: answered once, by shard 1"
    for told in (told0, told1):
        rows = await sim.pool.fetch(
            "SELECT is_bot, absorbed_at FROM messages WHERE external_id = $1 OR "
            "derived_from_id = (SELECT id FROM messages WHERE external_id = $1)",
            str(told.id),
        )
        assert sorted(r["is_bot"] for r in rows) == [False, True], "the message and its one reply, stored once"
        assert [r["absorbed_at"] is not None for r in rows if not r["is_bot"]] == [True]
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes") == 2, "one episode each"
    assert await sim.pool.fetchval("SELECT count(*) FROM archetype_matches") == 2


async def test_a_dm_is_answered_once_by_shard_zero(sim: Sim) -> None:
    await sim.ana1.send_dm("I collect old maps")
    await sim.settle_both()
    replies = [m.content for m in sim.ana1.user.dm_channel.history() if m.author.id == sim.me.id]
    assert replies == [REPLY_0], "Discord sends DMs to shard 0 only"
    assert (
        await sim.pool.fetchval("SELECT count(*) FROM messages WHERE scope = $1 AND NOT is_bot", f"dm:{sim.ana1.id}")
        == 1
    )


async def test_two_shards_starting_together_absorb_the_backlog_once(sim: Sim, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.brain import IncomingTurn

    for n in range(6):  # what the last run stored and never absorbed (both processes were killed)
        await sim.app.brain.receive(
            IncomingTurn(
                scope=str(sim.guild0.id),
                source="discord",
                channel_id=str(sim.general0.id),
                author_id="7",
                author_name="Flo",
                text=f"note {n}: my bike is green",
                external_id=str(9000 + n),
            )
        )
    absorbed: Counter[int] = Counter()
    for app in (sim.app, sim.one.app):  # count what each process's episodes layer is asked to absorb
        layer = layer_of(app, "episodes", EpisodesLayer)
        original = layer.absorb

        async def counted(turn: Any, _original: Any = original) -> Any:
            absorbed[turn.message.id] += 1
            return await _original(turn)

        monkeypatch.setattr(layer, "absorb", counted)
    first, second = await asyncio.gather(sim.app.absorb_backlog(), sim.one.app.absorb_backlog())
    assert first + second == 6, (first, second)
    assert len(absorbed) == 6 and set(absorbed.values()) == {1}, "each message absorbed by one process, once"
    assert await sim.app.conversations.count_unabsorbed() == 0
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes") == 6


async def propose(app: App, scope: str | None, name: str, example: str) -> Proposal:
    return await app.governance.propose(
        "new_archetype",
        f"new archetype '{name}'",
        {
            "name": name,
            "description": "Planning a launch",
            "examples": [example] * 5,
            "context_turns": 10,
            "context_vectors": 7,
            "similarity_threshold": 0.7,
            "triple_depth": 2,
        },
        "- because",
        {"messages": []},
        centroid=None,
        now=datetime.now(UTC),
        scope=scope,
    )


def posts_of(sim: Sim, channel: simcord.ChannelHandle) -> Counter[int]:
    return Counter(
        int(text.split("#", 1)[1].split(":", 1)[0]) for text in sim.replies(channel) if text.startswith("**Proposal #")
    )


async def test_the_outbox_posts_each_proposal_once_when_both_shards_flush(sim: Sim) -> None:
    now = datetime.now(UTC)
    for guild, dreams in ((sim.guild0, sim.dreams0), (sim.guild1, sim.dreams1)):
        await sim.bot.services.dream_channels.set(str(guild.id), dreams.id, "admin", now)
    ours = [await propose(sim.app, str(sim.guild0.id), f"plan_{n}", "let's plan the launch") for n in range(2)]
    theirs = [await propose(sim.app, str(sim.guild1.id), f"plan_{n}", "let's plan the launch") for n in range(2)]
    dream0 = dream_cog_of(sim.bot)
    # Whichever holds the outbox lock posts every proposal, the other server's through the REST API (its
    # channel is not in this process's cache); the other flush posts nothing.
    posted = [*await asyncio.gather(dream0.flush_outbox(), sim.one.cog.flush_outbox())]
    posted += await asyncio.gather(dream0.flush_outbox(), sim.one.cog.flush_outbox())  # nothing is left
    await sim.settle_both()
    assert sum(posted) == 4, posted
    assert posts_of(sim, sim.dreams0) == Counter(p.id for p in ours), "each once, in its own server's channel"
    assert posts_of(sim, sim.dreams1) == Counter(p.id for p in theirs)
    assert await sim.pool.fetchval("SELECT count(*) FROM proposals WHERE post_pending") == 0


async def test_the_nightly_dream_runs_once_when_both_shards_schedulers_fire(sim: Sim) -> None:
    owner = sim.env.create_user("owner")  # the nightly digest goes to the owner by DM
    sim.bot.owner_id = sim.one.bot.owner_id = owner.id
    schedulers = [s for s in (sim.app.scheduler, sim.one.app.scheduler) if s is not None]
    assert len(schedulers) == 2, "each process started its own scheduler"
    # both fire for the same slot, as two processes with the same schedule do at 03:00
    await asyncio.gather(*(s._run() for s in schedulers))
    reports = [s.last_report for s in schedulers]
    assert all(r is not None for r in reports), reports
    assert sorted(r.status for r in reports if r) == ["ok", "skipped"], [r.render() for r in reports if r]
    await schedulers[1]._run()  # a late firing of the same slot
    late = schedulers[1].last_report
    assert late is not None and late.status == "skipped"
    rows = await sim.pool.fetch("SELECT trigger, status FROM dream_runs")
    assert [(r["trigger"], r["status"]) for r in rows] == [("schedule", "ok")], "one run for the night"
    await sim.settle_both()
    digests = [m for m in owner.dm_channel.history() if m.content.startswith("Dream digest")]
    assert len(digests) == 1, "and one digest, from whichever shard dreamt"


async def test_an_owners_approval_through_shard_zero_is_in_effect_on_shard_one_at_once(sim: Sim) -> None:
    owner = sim.env.create_user("owner")
    sim.bot.owner_id = sim.one.bot.owner_id = owner.id
    plan = "let's plan the product launch for next week"
    before = await sim.tell(sim.ana1, sim.general1, plan)
    proposal = await propose(sim.app, None, "launch_planning", plan)  # global: the owner decides it
    dream0 = dream_cog_of(sim.bot)
    assert await dream0.flush_outbox() == 1
    await sim.settle_both()
    [post] = [m for m in owner.dm_channel.history() if m.content.startswith(f"**Proposal #{proposal.id}:")]
    await owner.click(post, label="Approve")  # a DM's interaction: shard 0's
    await sim.settle()
    assert (await sim.app.governance.get(proposal.id)).status == "applied"
    # Shard 1 never saw the click: its archetype cache hears of the change by NOTIFY (its poll is an hour).
    assert sim.one.app.settings.archetype_refresh_seconds == 3600
    names: list[str] = []
    for _ in range(100):
        names = [a.name for a in sim.one.app.router.archetypes_in(str(sim.guild1.id))]
        if "launch_planning" in names:
            break
        await asyncio.sleep(0.05)
    assert "launch_planning" in names, names
    after = await sim.tell(sim.ana1, sim.general1, plan)
    assert sim.replies(sim.general1) == [REPLY_1, REPLY_1], "shard 1 answered both"
    matched = {
        r["external_id"]: r["name"]
        for r in await sim.pool.fetch(
            """SELECT m.external_id, a.archetype_name AS name FROM archetype_matches x JOIN messages m ON m.id = x.message_id
           LEFT JOIN context_archetypes a ON a.id = x.archetype_id AND NOT x.used_default"""
        )
    }
    assert matched[str(before.id)] != "launch_planning"
    assert matched[str(after.id)] == "launch_planning", "shard 1 routes with the archetype approved on shard 0"
