"""A dream channel per server (issue 30.3), driven through SimCord: the real bot class and cogs against a simulated
Discord (slash commands, reactions, buttons, DMs), on the real database, with two servers that each dream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import discord
import pytest
import simcord

from bot.app import App
from bot.discord.client import SingleShardHippoBot
from bot.discord.dream import DiscordDreamChannel, DreamCog
from dream.governance import Proposal
from tests.dream_data import month_of_history
from tests.fakes import ScriptedLLM
from tests.simcord_support import SimBase, dream_cog_of


@dataclass
class Server:
    guild: simcord.GuildHandle
    general: simcord.ChannelHandle
    dream: simcord.ChannelHandle
    mod: simcord.MemberActor  # has the approver role
    ana: simcord.MemberActor  # an ordinary member

    @property
    def scope(self) -> str:
        return str(self.guild.id)


@dataclass
class Sim(SimBase):
    a: Server
    b: Server

    @property
    def cog(self) -> DreamCog:
        return dream_cog_of(self.bot)

    def posts_of(self, channel: simcord.ChannelHandle) -> set[int]:
        """The proposal ids posted in a channel."""
        return {
            int(m.content.split("#", 1)[1].split(":", 1)[0])
            for m in self.bot_messages(channel)
            if m.content.startswith("**Proposal #")
        }

    def post(self, channel: simcord.ChannelHandle, proposal_id: int) -> discord.Message:
        return next(m for m in self.bot_messages(channel) if m.content.startswith(f"**Proposal #{proposal_id}:"))


# SimCord's pytest plugin runs the bot below as `simcord_env`; embedding, imports and dreams need more than its
# default 5 s to settle.
pytestmark = pytest.mark.simcord(settle_timeout=60)


def server(env: simcord.Env, name: str) -> Server:
    guild = env.create_guild(name)
    general = guild.create_text_channel("general")
    dream = guild.create_text_channel("dreams")
    approvers = guild.create_role("hippobot-approver")
    mod = guild.add_member(env.create_user(f"mod-{name}"), roles=[approvers])
    ana = guild.add_member(env.create_user(f"ana-{name}"))
    return Server(guild, general, dream, mod, ana)


@pytest.fixture
async def sim(simcord_env: simcord.Env, simcord_bot: SingleShardHippoBot, app: App) -> AsyncIterator[Sim]:
    env = simcord_env
    s = Sim(env, simcord_bot, app, server(env, "Hippo Hall"), server(env, "Elsewhere"))
    await simcord_bot.tree.sync()  # SimCord refuses commands that were never synced, as Discord does
    yield s
    await s.settle()


async def with_own_channels(sim: Sim) -> None:
    for s in (sim.a, sim.b):
        result = await s.mod.slash(s.general, "dream channel set", channel=s.dream)
        assert "is now this server's dream channel" in said(result), said(result)


async def propose(sim: Sim, scope: str | None, name: str) -> Proposal:
    return await sim.app.governance.propose(
        "new_archetype",
        f"new archetype '{name}'",
        {
            "name": name,
            "description": "Planning a project",
            "examples": ["let's plan the launch"] * 5,
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


async def dream_in_both(sim: Sim, tmp_path: Path) -> dict[str, set[int]]:
    """A month of history in each server, then `/dream run` in each: the ids of each server's proposals."""
    history = month_of_history(tmp_path / "month.jsonl")
    for s in (sim.a, sim.b):
        await sim.app.importer.run(history, s.scope)
    for s in (sim.a, sim.b):
        result = await s.mod.slash(s.general, "dream run")
        assert f"for {s.scope}: ok" in said(result), said(result)
    await sim.settle()
    mine = {s.scope: {p.id for p in await sim.app.governance.list(scope=s.scope)} for s in (sim.a, sim.b)}
    assert mine[sim.a.scope] and mine[sim.b.scope], "each server's dream proposed something"
    return mine


def said(result: simcord.InteractionResult) -> str:
    if result.followups:
        return result.followups[-1].content
    return result.response.content if result.response is not None else ""


# --- where proposals and digests go -------------------------------------------------------------------


@pytest.mark.slow
async def test_each_servers_dream_is_posted_in_its_own_dream_channel_only(sim: Sim, tmp_path: Path) -> None:
    await with_own_channels(sim)
    mine = await dream_in_both(sim, tmp_path)
    assert sim.posts_of(sim.b.dream) == mine[sim.b.scope], "the second server's proposals, in its own channel"
    assert sim.posts_of(sim.a.dream) == mine[sim.a.scope]
    assert not sim.posts_of(sim.a.dream) & mine[sim.b.scope], "and never in the first server's"
    for s in (sim.a, sim.b):
        digests = [m.content for m in sim.bot_messages(s.dream) if m.content.startswith("Dream digest")]
        assert len(digests) == 1 and f"Dream digest for {s.scope}," in digests[0], "its own digest, once"
        assert sim.posts_of(s.general) == set(), "nothing in the server's other channels"


@pytest.mark.slow
async def test_an_approvers_tick_in_a_servers_dream_channel_applies_its_proposal(sim: Sim, tmp_path: Path) -> None:
    await with_own_channels(sim)
    mine = await dream_in_both(sim, tmp_path)
    pid = min(mine[sim.b.scope])
    await sim.b.mod.react(sim.post(sim.b.dream, pid), "✅")
    await sim.settle()
    proposal = await sim.app.governance.get(pid)
    assert proposal.status == "applied" and proposal.decided_by == sim.b.mod.name
    assert "applied by" in sim.post(sim.b.dream, pid).content, "the outcome is edited into the post"
    assert proposal.payload["name"] in [a.name for a in sim.app.router.archetypes_in(sim.b.scope)]
    assert proposal.payload["name"] not in [a.name for a in sim.app.router.archetypes_in(sim.a.scope)]


async def test_a_non_approvers_tick_changes_nothing(sim: Sim) -> None:
    await with_own_channels(sim)
    proposal = await propose(sim, sim.b.scope, "garden_planning")
    assert await sim.cog.flush_outbox() == 1
    await sim.b.ana.react(sim.post(sim.b.dream, proposal.id), "✅")
    await sim.settle()
    assert (await sim.app.governance.get(proposal.id)).status == "pending"


async def test_a_vote_in_one_servers_channel_on_anothers_proposal_is_refused(sim: Sim) -> None:
    await with_own_channels(sim)
    theirs = await propose(sim, sim.b.scope, "garden_planning")
    # as the single global dream channel of before left it: the second server's proposal posted in the first's
    ref = await DiscordDreamChannel(sim.bot, sim.a.dream.id).post_proposal(theirs)
    await sim.pool.execute("UPDATE proposals SET posted_ref = $2, post_pending = false WHERE id = $1", theirs.id, ref)
    await sim.settle()
    post = sim.post(sim.a.dream, theirs.id)
    await sim.a.mod.react(post, "✅")
    await sim.settle()
    clicked = await sim.a.mod.click(post, label="Approve")
    await sim.settle()
    assert "does not belong to this server" in said(clicked)
    assert (await sim.app.governance.get(theirs.id)).status == "pending"
    assert await sim.pool.fetchval("SELECT count(*) FROM proposal_votes") == 0, "neither vote counted"


async def test_a_server_without_a_dream_channel_keeps_its_proposals_waiting(sim: Sim) -> None:
    # the owner's channel is in the first server: it is that server's dream channel until it sets one
    sim.bot.settings = sim.bot.settings.model_copy(update={"dream_channel_id": sim.a.dream.id})
    ours, theirs = await propose(sim, sim.a.scope, "tea_planning"), await propose(sim, sim.b.scope, "garden_planning")
    assert await sim.cog.flush_outbox() == 1
    assert sim.posts_of(sim.a.dream) == {ours.id}, "the second server's proposal is not shown in the first"
    assert await sim.pool.fetchval("SELECT post_pending FROM proposals WHERE id = $1", theirs.id), "it waits"
    await sim.b.mod.slash(sim.b.general, "dream channel set", channel=sim.b.dream)
    await sim.settle()
    assert sim.posts_of(sim.b.dream) == {theirs.id}, "posted once its server has a channel"


async def test_global_proposals_go_to_the_owner_only(sim: Sim) -> None:
    await with_own_channels(sim)
    owner = sim.env.create_user("owner")
    sim.bot.owner_id = owner.id
    proposal = await propose(sim, None, "global_planning")
    assert await sim.cog.flush_outbox() == 1
    await sim.settle()
    assert sim.posts_of(sim.a.dream) == set() and sim.posts_of(sim.b.dream) == set()
    dm = [m for m in owner.dm_channel.history() if m.content.startswith(f"**Proposal #{proposal.id}:")]
    assert len(dm) == 1, "by DM to the owner"
    clicked = await owner.click(dm[0], label="Approve")
    await sim.settle()
    assert "applied" in said(clicked)
    assert (await sim.app.governance.get(proposal.id)).status == "applied"


# --- the commands -----------------------------------------------------------------------------------------


async def test_dream_channel_set_needs_an_admin(sim: Sim) -> None:
    result = await sim.a.ana.slash(sim.a.general, "dream channel set", channel=sim.a.dream)
    assert "needs Manage Server or the approver role" in said(result)
    assert await sim.pool.fetchval("SELECT count(*) FROM dream_channels") == 0
    assert sim.bot_messages(sim.a.dream) == [], "no announcement either"
    cleared = await sim.a.ana.slash(sim.a.general, "dream channel clear")
    assert "needs Manage Server or the approver role" in said(cleared)


async def test_dream_channel_set_is_stored_with_who_and_when_and_announced(sim: Sim) -> None:
    await sim.a.mod.slash(sim.a.general, "dream channel set", channel=sim.a.dream)
    row = await sim.pool.fetchrow("SELECT * FROM dream_channels")
    assert (row["scope"], row["channel_id"], row["set_by"]) == (sim.a.scope, str(sim.a.dream.id), str(sim.a.mod.id))
    assert row["set_at"] is not None
    assert "This is now this server's dream channel" in sim.bot_messages(sim.a.dream)[0].content
    result = await sim.a.mod.slash(sim.a.general, "dream channel clear")
    assert "Cleared" in said(result) and "none" in said(result)
    assert await sim.pool.fetchval("SELECT count(*) FROM dream_channels") == 0


async def test_dream_status_shows_each_server_its_own(sim: Sim) -> None:
    await with_own_channels(sim)
    ours, theirs = await propose(sim, sim.a.scope, "tea_planning"), await propose(sim, sim.b.scope, "garden_planning")
    for s, mine, other in ((sim.a, ours, theirs), (sim.b, theirs, ours)):
        run = await sim.pool.fetchval(
            "INSERT INTO dream_runs (trigger, started_at, status, scope) "
            "VALUES ('manual', now(), 'ok', $1) RETURNING id",
            s.scope,
        )
        text = said(await s.mod.slash(s.general, "dream status"))
        assert f"dream channel: <#{s.dream.id}> (set by <@{s.mod.id}>" in text
        assert f"proposal #{mine.id}:" in text and f"proposal #{other.id}:" not in text, text
        assert f"#{run} manual" in text
    text = said(await sim.a.mod.slash(sim.a.general, "dream status"))
    assert f"#{run} manual" not in text, "the other server's run is not shown"


async def test_the_bot_never_chats_in_a_servers_dream_channel(sim: Sim, llm: ScriptedLLM) -> None:
    await with_own_channels(sim)
    await sim.b.mod.slash(sim.b.general, "channel mode", mode="chat")
    await sim.b.ana.send(sim.b.dream, f"{sim.me.mention} what do you think of proposal 3?")
    await sim.b.ana.send(sim.b.general, "hello there")
    await sim.settle()
    assert [m.content for m in sim.bot_messages(sim.b.general)] == [llm.reply], "chat mode answers elsewhere"
    assert len(sim.bot_messages(sim.b.dream)) == 1, "only the announcement: no answer in the dream channel"
    assert await sim.pool.fetchval("SELECT count(*) FROM messages WHERE content LIKE '%proposal 3%'") == 0
    refused = await sim.b.mod.slash(sim.b.dream, "channel mode", mode="chat")
    assert "That is the dream channel" in said(refused)


async def test_deleting_the_dream_channel_clears_it(sim: Sim) -> None:
    await with_own_channels(sim)
    sim.env.backend.delete_channel(sim.b.dream.id)  # SimCord has no public handle for this; its backend sends the event
    await sim.settle()
    assert [r["scope"] for r in await sim.pool.fetch("SELECT scope FROM dream_channels")] == [sim.a.scope]


async def test_setting_a_dream_channel_moves_the_servers_pending_proposals_there(sim: Sim) -> None:
    theirs = await propose(sim, sim.b.scope, "garden_planning")
    ref = await DiscordDreamChannel(sim.bot, sim.a.dream.id).post_proposal(theirs)  # the old single channel's post
    await sim.pool.execute("UPDATE proposals SET posted_ref = $2, post_pending = false WHERE id = $1", theirs.id, ref)
    await sim.b.mod.slash(sim.b.general, "dream channel set", channel=sim.b.dream)
    await sim.settle()
    assert sim.posts_of(sim.b.dream) == {theirs.id}, "re-posted in its own server's channel"
    await sim.b.mod.react(sim.post(sim.b.dream, theirs.id), "✅")
    await sim.settle()
    assert (await sim.app.governance.get(theirs.id)).status == "applied", "and decided there"
