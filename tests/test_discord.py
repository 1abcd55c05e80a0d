"""The Discord front end to end on SimCord (issue 29.1): the bot `hippobot run` starts (its client class and cogs)
against a simulated Discord that feeds Discord's own payloads to discord.py's parsers (reactions, buttons,
threads, DMs, permission errors with Discord's codes), on the real database. Replaces the dpytest suite: each
test keeps what its dpytest version asserted, and sees more where SimCord shows it (real components, real
reactions, a real restart)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime

import discord
import pytest
import simcord

from bot.app import App
from bot.brain import IncomingTurn
from bot.discord.client import COGS, SingleShardHippoBot
from bot.discord.dream import DreamCog
from bot.discord.sources import GONE, NOT_YOURS, ForgetSourceButton, forget_source
from memory.embed import MiniLMEmbedder
from tests.conftest import close_or_explain
from tests.fakes import ScriptedLLM
from tests.simcord_support import (
    HeldGeneration,
    SimBase,
    bot_member,
    buttons,
    cog_of,
    hippobot_for,
    said,
    without_typing,
)


@dataclass
class Sim(SimBase):
    guild: simcord.GuildHandle
    general: simcord.ChannelHandle
    allowed: simcord.ChannelHandle  # in discord_allowed_channels: every message is answered
    dream: simcord.ChannelHandle  # the owner's dream channel (HIPPOBOT_DREAM_CHANNEL_ID)
    ana: simcord.MemberActor
    ben: simcord.MemberActor
    mod: simcord.MemberActor  # has the approver role
    approvers: simcord.RoleHandle

    def mention(self) -> str:
        return self.me.mention

    @property
    def cog(self) -> DreamCog:
        return cog_of(self.bot, DreamCog)

    def only_message(self, channel: simcord.ChannelHandle) -> discord.Message:
        [message] = self.bot_messages(channel)
        return message


pytestmark = pytest.mark.simcord(settle_timeout=60)


@pytest.fixture
async def sim(simcord_env: simcord.Env, simcord_bot: SingleShardHippoBot, app: App) -> AsyncIterator[Sim]:
    env = simcord_env
    guild = env.create_guild("Hippo Hall")
    general, allowed, dream = (guild.create_text_channel(n) for n in ("general", "allowed", "dream"))
    approvers = guild.create_role("hippobot-approver")
    ana = guild.add_member(env.create_user("ana"))
    ben = guild.add_member(env.create_user("ben"))
    mod = guild.add_member(env.create_user("mod"), roles=[approvers])
    simcord_bot.settings = simcord_bot.settings.model_copy(
        update={"discord_allowed_channels": [allowed.id], "dream_channel_id": dream.id}
    )
    await simcord_bot.tree.sync()  # SimCord refuses commands that were never synced, as Discord does
    s = Sim(env, simcord_bot, app, guild, general, allowed, dream, ana, ben, mod, approvers)
    yield s
    await s.settle()


@pytest.fixture
async def second_apps(app: App, embedder: MiniLMEmbedder, llm: ScriptedLLM) -> AsyncIterator[list[App]]:
    """The apps of restarted bots (closed after the simulation is); asked for before `sim`."""
    apps: list[App] = []
    yield apps
    for a in apps:
        await close_or_explain(a)


async def restart(sim: Sim, apps: list[App], embedder: MiniLMEmbedder, llm: ScriptedLLM) -> None:
    """A restart of the bot process: a new app and a new bot on the same database, attached to the same
    simulated Discord (which keeps its messages, their buttons and reactions). Nothing in memory survives."""
    assert sim.app.scheduler is not None
    sim.app.scheduler.shutdown()  # the old process is gone: its nightly dream with it
    new_app = await App.open(sim.app.settings, with_llm=True, llm=llm, embedder=embedder)
    apps.append(new_app)
    new_bot = hippobot_for(new_app)
    new_bot.settings = sim.bot.settings
    await sim.env.restart_bot(new_bot)
    sim.bot, sim.app = new_bot, new_app
    await sim.settle()


async def stored(sim: Sim, text: str) -> int:
    return await sim.pool.fetchval("SELECT count(*) FROM messages WHERE content LIKE '%' || $1 || '%'", text)


async def stored_texts(sim: Sim) -> set[str]:
    return {r["content"] for r in await sim.pool.fetch("SELECT content FROM messages WHERE NOT is_bot")}


# --- the bot and its commands ---------------------------------------------------------------------------


async def test_every_cog_loads_and_command_names_are_unique(sim: Sim) -> None:
    assert {type(c).__name__ for c in sim.bot.cogs.values()} == {c.__name__ for c in COGS}
    names = [c.qualified_name for c in sim.bot.tree.walk_commands()]
    assert len(names) == len(set(names))
    expected = (
        "memory stats",
        "memory recall",
        "memory forget",
        "memory pin",
        "archetype list",
        "archetype show",
        "archetype enable",
        "archetype disable",
        "dream run",
        "dream status",
        "dream channel set",
        "dream channel clear",
        "config show",
        "forget me",
        "whatdoyouknow",
        "channel mode",
        "channel memory",
        "channel list",
        "memory optout",
        "memory optin",
        "stop",
    )
    assert set(expected) <= set(names)
    offered = sim.ana.available_commands(sim.general)  # what Discord offers a member after the sync
    assert set(expected) <= set(offered), set(expected) - set(offered)


# --- conversation -----------------------------------------------------------------------------------------


async def test_a_mention_is_answered_and_remembered(sim: Sim, llm: ScriptedLLM) -> None:
    await sim.ana.send(sim.general, f"{sim.mention()} I adopted a cat called Miso")
    await sim.settle()
    sent = sim.only_message(sim.general)  # as the stream's edits left it
    assert sent.content == llm.reply
    row = await sim.pool.fetchrow("SELECT scope, content, external_id FROM messages WHERE NOT is_bot")
    assert row["scope"] == str(sim.guild.id) and row["content"] == "I adopted a cat called Miso"
    assert await sim.pool.fetchval("SELECT external_id FROM messages WHERE is_bot") == str(sent.id)
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes") == 1
    named = await sim.pool.fetch("SELECT DISTINCT channel_name FROM messages")  # the turn and the reply
    assert [r["channel_name"] for r in named] == ["general"]


async def test_unaddressed_messages_are_ignored_except_in_allowed_channels(sim: Sim, llm: ScriptedLLM) -> None:
    await sim.ana.send(sim.general, "just chatting")
    await sim.ana.send(sim.dream, "a proposal chat")
    await sim.settle()
    assert sim.bot_messages(sim.general) == [] and sim.bot_messages(sim.dream) == []
    await sim.ana.send(sim.allowed, "hello bot")
    await sim.settle()
    assert sim.only_message(sim.allowed).content == llm.reply
    assert await stored_texts(sim) == {"hello bot"}, (
        "ignored messages are not stored, and the dream channel is never conversation"
    )


async def test_long_replies_stream_by_edits_and_split_at_2000(sim: Sim, llm: ScriptedLLM) -> None:
    sim.bot.settings = sim.bot.settings.model_copy(update={"discord_edit_interval": 0})
    llm.reply = " ".join(f"word{i}-" + "x" * 40 for i in range(110))  # ~5,000 characters
    # the edit interval is on the wall clock: none, so every word that arrives is edited in
    await sim.ana.send(sim.allowed, "tell me a long story")
    await sim.settle()
    texts = [m.content for m in sim.bot_messages(sim.allowed)]
    assert len(texts) == 3 and all(len(t) <= 2000 for t in texts)
    assert " ".join(texts).split() == llm.reply.split()
    edits = [r for r in sim.env.http_requests if r.method == "PATCH" and "/messages/" in r.path]
    assert edits, "streamed: the posts were edited as the words came"


async def test_a_thread_conversation_is_answered_in_the_thread_and_remembered_as_its_channels(
    sim: Sim, llm: ScriptedLLM
) -> None:
    thread = simcord.ChannelHandle(
        sim.env, sim.guild, sim.env.backend.create_thread(sim.general.id, "cats", sim.ana.id)
    )
    await sim.settle()
    await sim.ana.send(thread, f"{sim.mention()} my cat Miso likes boxes")
    await sim.settle()
    llm.reply = "Boxes it is."
    await sim.ana.send(thread, f"{sim.mention()} what does Miso like?")
    await sim.settle()
    answers = [m.content for m in sim.bot_messages(thread)]
    assert len(answers) == 2 and answers[0] == "Nice to meet you." and answers[1].startswith("Boxes it is.")
    assert sim.bot_messages(sim.general) == [], "answered in the thread, not its channel"
    assert "my cat Miso likes boxes" in llm.prompts[-1], "the thread's earlier turn is in the context"
    rows = await sim.pool.fetch("SELECT channel_id, thread_parent_id, channel_name, visible_in FROM messages")
    assert {(r["channel_id"], r["thread_parent_id"], r["channel_name"], r["visible_in"]) for r in rows} == {
        (str(thread.id), str(sim.general.id), "general", None)
    }, "a public channel's thread: public, named by it"


async def test_a_dm_is_answered_and_remembered_in_that_persons_dm_scope(sim: Sim, llm: ScriptedLLM) -> None:
    await sim.ana.send_dm("my favourite tea is genmaicha")
    await sim.settle()
    dm = sim.ana.user.dm_channel
    assert [m.content for m in dm.history() if m.author.id == sim.me.id] == [llm.reply], "no mention needed"
    row = await sim.pool.fetchrow("SELECT scope, visible_in FROM messages WHERE content LIKE '%genmaicha%'")
    assert row["scope"] == f"dm:{sim.ana.id}"
    public = await sim.app.brain.context("what tea do people like?", str(sim.guild.id), channel_id=str(sim.general.id))
    assert not any("genmaicha" in i.text for i in public.items()), "a DM never surfaces in a server"


async def test_a_restricted_channels_messages_are_visible_only_there(sim: Sim) -> None:
    secret = sim.guild.create_text_channel(
        "secret",
        overwrites={
            sim.guild.default_role: discord.PermissionOverwrite(view_channel=False),
            sim.ana: discord.PermissionOverwrite(view_channel=True),
            bot_member(sim.guild): discord.PermissionOverwrite(view_channel=True),
        },
    )
    await sim.ana.send(secret, f"{sim.mention()} the launch code is 0000")
    await sim.ben.send(sim.general, f"{sim.mention()} hello everyone")
    await sim.settle()
    rows = {
        r["content"]: r["visible_in"]
        for r in await sim.pool.fetch("SELECT content, visible_in FROM messages WHERE NOT is_bot")
    }
    assert rows == {"the launch code is 0000": str(secret.id), "hello everyone": None}
    assert await sim.pool.fetchval("SELECT visible_in FROM episodes WHERE content LIKE '%launch%'") == str(secret.id)


async def test_a_restricted_channels_memory_never_answers_in_a_public_one(sim: Sim, llm: ScriptedLLM) -> None:
    secret = sim.guild.create_text_channel(
        "secret",
        overwrites={
            sim.guild.default_role: discord.PermissionOverwrite(view_channel=False),
            sim.ana: discord.PermissionOverwrite(view_channel=True),
            bot_member(sim.guild): discord.PermissionOverwrite(view_channel=True),
        },
    )
    await sim.ana.send(secret, f"{sim.mention()} the launch code is 0000")
    await sim.settle()
    await sim.ana.send(sim.general, f"{sim.mention()} what is the launch code?")
    await sim.settle()
    assert "0000" not in llm.prompts[-1], "the public channel's prompt holds nothing from #secret"
    assert "-# from:" not in sim.only_message(sim.general).content, "nor does its reply cite it"
    await sim.ana.send(secret, f"{sim.mention()} what is the launch code?")
    await sim.settle()
    assert "0000" in llm.prompts[-1], "recalled where it was said"


async def test_a_failed_edit_while_streaming_cancels_the_generation_and_keeps_the_turn(
    sim: Sim, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim.bot.settings = sim.bot.settings.model_copy(update={"discord_edit_interval": 0})
    held: list[HeldGeneration] = []

    def generate(prompt, **_):
        held.append(HeldGeneration(sim.env, ["Once ", "upon ", "a ", "time"]))
        return held[-1]

    monkeypatch.setattr(llm, "generate", generate)
    replies = []
    respond = sim.app.brain.respond

    async def keep(turn):
        replies.append(await respond(turn))
        return replies[-1]

    monkeypatch.setattr(sim.app.brain, "respond", keep)
    without_typing(monkeypatch)
    # Discord refuses every edit of the reply (the bot lost access mid-stream): 403, Missing Access
    sim.env.inject_error(
        "PATCH", f"/channels/{sim.allowed.id}/messages/*", status=403, code=50001, message="Missing Access", times=None
    )
    await sim.ana.send(sim.allowed, "tell me everything")
    await sim.settle()
    assert replies and replies[0]._generation.cancelled.is_set(), "nobody is left generating for"
    assert sim.only_message(sim.allowed).content == "Once", "the first words were posted; no edit got through"
    assert await sim.pool.fetchval("SELECT absorbed_at IS NOT NULL FROM messages WHERE NOT is_bot"), "turn absorbed"
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes") == 1


async def test_a_channel_the_bot_cannot_post_in_gets_no_reply_and_keeps_the_turn(sim: Sim) -> None:
    muted = sim.guild.create_text_channel(
        "muted", overwrites={bot_member(sim.guild): discord.PermissionOverwrite(send_messages=False)}
    )
    await sim.ana.send(muted, f"{sim.mention()} can you hear me?")
    await sim.settle()
    assert sim.bot_messages(muted) == []
    refused = [r for r in sim.env.http_requests if r.method == "POST" and r.path == f"/channels/{muted.id}/messages"]
    assert refused, "the bot tried, and Discord refused it (403, Missing Permissions)"
    row = await sim.pool.fetchrow("SELECT absorbed_at FROM messages WHERE content = 'can you hear me?'")
    assert row is not None and row["absorbed_at"] is not None, "the turn is kept and absorbed"
    assert sim.env.errors == [], "handled: nothing escaped to discord.py's error handler"


async def test_a_busy_bot_says_so_and_keeps_the_message(sim: Sim) -> None:
    sim.app.brain._max_generations = 0  # every generation slot taken
    asked = await sim.ana.send(sim.allowed, "are you there?")
    await sim.settle()
    answer = sim.only_message(sim.allowed)
    assert answer.content == "I'm busy right now — try again in a moment."
    assert answer.reference is not None and answer.reference.message_id == asked.id, "a reply to the message"
    assert await stored_texts(sim) == {"are you there?"}


# --- sources under a reply --------------------------------------------------------------------------------


async def test_a_reply_from_memory_names_its_source_with_a_link_and_forget_buttons(sim: Sim, llm: ScriptedLLM) -> None:
    llm.reply = "Nice!"
    told = await sim.ana.send(sim.general, f"{sim.mention()} my dog is called Pico")
    await sim.settle()
    llm.reply = "Her dog is called Pico."
    await sim.ben.send(sim.general, f"{sim.mention()} what is ana's dog called?")  # ben's own dog: not ana's Pico
    await sim.settle()
    sent = sim.bot_messages(sim.general)[-1]
    assert sent.content.startswith("Her dog is called Pico.")
    link = f"https://discord.com/channels/{sim.guild.id}/{sim.general.id}/{told.id}"
    assert "-# from: ana" in sent.content and link in sent.content, sent.content
    stored_id = await sim.pool.fetchval("SELECT id FROM messages WHERE external_id = $1", str(told.id))
    [button] = buttons(sent)
    assert button.custom_id == f"hippobot:forget:{stored_id}" and button.label == "Forget (ana)"
    assert ForgetSourceButton.__discord_ui_compiled_template__.fullmatch(button.custom_id)
    refused = await sim.ben.click(sent, custom_id=button.custom_id)
    assert said(refused) == NOT_YOURS and refused.ephemeral, "anyone but the author is refused"
    assert await sim.pool.fetchval("SELECT count(*) FROM messages WHERE id = $1", stored_id) == 1
    # another server's button (its scope) finds nothing: no other server can post this button, so asked directly
    assert await forget_source(sim.app, stored_id, sim.guild.id + 1, sim.ana.id) == GONE
    done = await sim.ana.click(sent, custom_id=button.custom_id)
    await sim.settle()
    assert said(done).startswith("Forgotten") and done.ephemeral
    assert await sim.pool.fetchval("SELECT count(*) FROM messages WHERE id = $1", stored_id) == 0
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes WHERE message_id = $1", stored_id) == 0


async def test_a_reply_that_uses_no_memory_shows_nothing_extra(sim: Sim, llm: ScriptedLLM) -> None:
    llm.reply = "Hello to you too."
    await sim.ana.send(sim.general, f"{sim.mention()} hello")
    await sim.settle()
    sent = sim.only_message(sim.general)
    assert sent.content == "Hello to you too." and buttons(sent) == []


# --- edits and deletes forget what they should ------------------------------------------------------------


async def test_deleting_a_message_deletes_its_memories(sim: Sim) -> None:
    msg = await sim.ana.send(sim.allowed, "my bank pin is 1234, oops")
    await sim.settle()
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes") == 1
    await sim.ana.delete(msg)
    await sim.settle()
    assert await sim.pool.fetchval("SELECT count(*) FROM messages") == 0, "the message and the reply derived from it"
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes") == 0


async def test_an_edit_updates_the_memory(sim: Sim) -> None:
    msg = await sim.ana.send(sim.allowed, "I live in Porto")
    await sim.settle()
    await sim.ana.edit(msg, "I live in Lisbon")
    await sim.settle()
    assert await sim.pool.fetchval("SELECT content FROM messages WHERE NOT is_bot") == "I live in Lisbon"
    episode = await sim.pool.fetchval("SELECT content FROM episodes")
    assert "Lisbon" in episode and "Porto" not in episode


async def test_deleting_a_dm_forgets_it(sim: Sim) -> None:
    msg = await sim.ana.send_dm("my passport number is 555")
    await sim.settle()
    assert await stored(sim, "passport") == 1
    await sim.ana.user.delete(msg)
    await sim.settle()
    assert await sim.pool.fetchval("SELECT count(*) FROM messages") == 0, "the DM and the reply derived from it"
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes") == 0


async def test_an_edit_in_a_dm_updates_the_memory(sim: Sim) -> None:
    msg = await sim.ana.send_dm("I live in Porto")
    await sim.settle()
    await sim.ana.user.edit(msg, "I live in Lisbon")
    await sim.settle()
    assert await sim.pool.fetchval("SELECT content FROM messages WHERE NOT is_bot") == "I live in Lisbon"
    assert "Lisbon" in await sim.pool.fetchval("SELECT content FROM episodes")


async def test_a_bulk_delete_forgets_those_messages_only(sim: Sim) -> None:
    await sim.mod.slash(sim.general, "channel memory", state="on")  # remembered, not answered: little traffic
    sent = [await sim.ana.send(sim.general, text) for text in ("spam one", "spam two", "keep me")]
    await sim.settle()
    assert await stored_texts(sim) == {"spam one", "spam two", "keep me"}
    sim.env.backend.bulk_delete_messages(sim.general.id, [sent[0].id, sent[1].id])  # a moderator's purge
    await sim.settle()
    assert await stored_texts(sim) == {"keep me"}


async def test_deleting_a_channel_forgets_it_and_its_threads(sim: Sim) -> None:
    thread = simcord.ChannelHandle(sim.env, sim.guild, sim.env.backend.create_thread(sim.allowed.id, "q", sim.ana.id))
    await sim.settle()
    await sim.ana.send(sim.allowed, "said in the channel")
    await sim.ana.send(thread, "said in its thread")
    await sim.ana.send(sim.general, f"{sim.mention()} said elsewhere")
    await sim.settle()
    assert await stored_texts(sim) == {"said in the channel", "said in its thread", "said elsewhere"}
    sim.env.backend.delete_channel(sim.allowed.id)  # Discord sends CHANNEL_DELETE only, nothing for its threads
    await sim.settle()
    assert await stored_texts(sim) == {"said elsewhere"}
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes WHERE content LIKE '%said in%'") == 0


async def test_deleting_a_thread_forgets_its_messages(sim: Sim) -> None:
    thread = simcord.ChannelHandle(sim.env, sim.guild, sim.env.backend.create_thread(sim.general.id, "q", sim.ana.id))
    await sim.settle()
    await sim.ana.send(thread, f"{sim.mention()} said in the thread")
    await sim.ana.send(sim.general, f"{sim.mention()} said in the parent")
    await sim.settle()
    sim.env.backend.delete_channel(thread.id)  # THREAD_DELETE
    await sim.settle()
    assert await stored_texts(sim) == {"said in the parent"}


def test_a_thread_is_named_by_its_parent_channel_not_its_title() -> None:
    from unittest.mock import MagicMock

    from bot.discord.chat import channel_name_of

    parent = MagicMock(spec=discord.TextChannel)
    parent.name = "docker-help"
    thread = MagicMock(spec=discord.Thread)
    thread.name, thread.parent = "my compose file won't start (ana's question)", parent
    assert channel_name_of(thread) == "docker-help", "the title is its author's words, not the server's"
    thread.parent = None  # a parent the cache does not hold
    assert channel_name_of(thread) is None
    assert channel_name_of(parent) == "docker-help"
    assert channel_name_of(MagicMock(spec=discord.DMChannel)) is None


# --- proposals in the dream channel -----------------------------------------------------------------------


async def make_proposal(sim: Sim, name: str = "project_planning") -> int:
    proposal = await sim.app.governance.propose(
        "new_archetype",
        f"new archetype '{name}'",
        {
            "name": name,
            "description": "Planning a project",
            "examples": [
                "let's plan the launch",
                "what milestones should we set?",
                "help me break this into phases",
                "what's the timeline?",
                "who owns which task?",
            ],
            "context_turns": 10,
            "context_vectors": 7,
            "similarity_threshold": 0.7,
            "triple_depth": 2,
        },
        "- because",
        {"messages": []},
        centroid=None,
        now=datetime.now(UTC),
        scope=str(sim.guild.id),
    )
    return proposal.id


async def posted_proposal(sim: Sim) -> tuple[int, discord.Message]:
    """A proposal of this guild, posted to the dream channel from the outbox."""
    pid = await make_proposal(sim)
    assert await sim.cog.flush_outbox() == 1
    await sim.settle()
    ref = (await sim.app.governance.get(pid)).posted_ref
    [message] = [m for m in sim.dream.history() if str(m.id) == ref]
    return pid, message


async def test_an_approvers_reaction_applies_the_proposal(sim: Sim) -> None:
    pid, message = await posted_proposal(sim)
    assert (await sim.app.governance.get(pid)).status == "pending", "the bot's own reactions are ignored"
    await sim.mod.react(message, "✅")
    await sim.settle()
    proposal = await sim.app.governance.get(pid)
    assert proposal.status == "applied" and proposal.decided_by == sim.mod.name
    assert "project_planning" in [a.name for a in sim.app.router.archetypes_in(str(sim.guild.id))], "in this guild"
    edited = next(m for m in sim.dream.history() if m.id == message.id)
    assert "applied by" in edited.content


async def test_the_bots_own_reactions_are_ignored_even_with_the_role(sim: Sim) -> None:
    # Discord holds the role on the bot (its cache may not: the bot runs without the members intent)
    sim.env.backend.add_member_role(sim.guild.id, sim.me.id, sim.approvers.id)
    await sim.settle()
    pid, message = await posted_proposal(sim)  # posting adds the bot's own three reactions
    assert {str(r.emoji) for r in message.reactions} >= {"✅", "❌"}, "the bot did react (nobody else has)"
    assert (await sim.app.governance.get(pid)).status == "pending"
    assert await sim.pool.fetchval("SELECT count(*) FROM proposal_votes") == 0


async def test_a_non_approvers_vote_is_ignored(sim: Sim) -> None:
    pid, message = await posted_proposal(sim)
    await sim.ana.react(message, "✅")
    await sim.settle()
    assert (await sim.app.governance.get(pid)).status == "pending"
    assert await sim.pool.fetchval("SELECT count(*) FROM proposal_votes") == 0


async def test_a_non_approvers_button_is_refused(sim: Sim) -> None:
    pid, message = await posted_proposal(sim)
    clicked = await sim.ana.click(message, label="Approve")
    await sim.settle()
    assert clicked.ephemeral and "Only members with the approver role" in said(clicked), said(clicked)
    assert (await sim.app.governance.get(pid)).status == "pending"
    assert await sim.pool.fetchval("SELECT count(*) FROM proposal_votes") == 0


async def test_the_discuss_button_opens_a_thread_on_the_proposal_and_decides_nothing(sim: Sim) -> None:
    pid, message = await posted_proposal(sim)
    clicked = await sim.ana.click(message, label="Discuss")
    await sim.settle()
    assert clicked.ephemeral and "Opening a thread" in said(clicked)
    assert [t.name for t in sim.dream.threads] == [f"Proposal #{pid}"], "anyone may open the discussion"
    assert (await sim.app.governance.get(pid)).status == "pending"


async def test_a_vote_after_a_restart_counts(
    second_apps: list[App], sim: Sim, embedder: MiniLMEmbedder, llm: ScriptedLLM
) -> None:
    pid, message = await posted_proposal(sim)
    await restart(sim, second_apps, embedder, llm)
    await sim.mod.react(message, "❌")
    await sim.settle()
    assert (await sim.app.governance.get(pid)).status == "rejected"


async def test_a_button_after_a_restart_approves(
    second_apps: list[App], sim: Sim, embedder: MiniLMEmbedder, llm: ScriptedLLM
) -> None:
    pid, message = await posted_proposal(sim)
    await restart(sim, second_apps, embedder, llm)  # the new bot never built this post's view: dynamic items
    clicked = await sim.mod.click(message, label="Approve")
    await sim.settle()
    assert "applied" in said(clicked), said(clicked)
    proposal = await sim.app.governance.get(pid)
    assert proposal.status == "applied" and proposal.decided_by == sim.mod.name


async def test_a_proposal_made_while_the_channel_is_unreachable_is_posted_when_it_is_back(sim: Sim) -> None:
    # Discord refuses the post (the bot lost access to the channel): 403, Missing Access
    sim.env.inject_error(
        "POST", f"/channels/{sim.dream.id}/messages", status=403, code=50001, message="Missing Access", times=1
    )
    pid = await make_proposal(sim)
    assert await sim.cog.flush_outbox() == 0
    assert (await sim.app.governance.get(pid)).posted_ref is None
    assert await sim.pool.fetchval("SELECT post_pending FROM proposals WHERE id = $1", pid)
    assert sim.bot_messages(sim.dream) == []
    assert await sim.cog.flush_outbox() == 1  # Discord is back
    await sim.settle()
    ref = (await sim.app.governance.get(pid)).posted_ref
    posted = sim.only_message(sim.dream)
    assert str(posted.id) == ref
    assert f"Proposal #{pid}" in posted.content and "React ✅ to approve" in posted.content, "posted as pending"
    assert [b.label for b in buttons(posted)] == ["Approve", "Reject", "Discuss"]
    assert not await sim.pool.fetchval("SELECT post_pending FROM proposals WHERE id = $1", pid)
    assert await sim.cog.flush_outbox() == 0, "posted once"


async def test_a_proposal_made_with_the_bot_off_is_posted_when_it_starts(
    second_apps: list[App], sim: Sim, embedder: MiniLMEmbedder, llm: ScriptedLLM
) -> None:
    pid = await make_proposal(sim)  # as `hippobot dream` leaves it: stored, never posted
    sim.cog.outbox_loop.cancel()  # the running bot must not post it: the one that starts next does
    await restart(sim, second_apps, embedder, llm)
    ref = (await sim.app.governance.get(pid)).posted_ref
    assert ref is not None and sim.cog.outbox_loop.is_running(), "posted on ready, then every minute"
    assert f"Proposal #{pid}" in sim.only_message(sim.dream).content


async def test_a_dream_channel_without_reactions_gets_each_proposal_once_with_its_buttons(sim: Sim) -> None:
    dream = sim.guild.create_text_channel(
        "dreams", overwrites={bot_member(sim.guild): discord.PermissionOverwrite(add_reactions=False)}
    )
    sim.bot.settings = sim.bot.settings.model_copy(update={"dream_channel_id": dream.id})
    pid = await make_proposal(sim)
    await sim.cog.flush_outbox()
    await sim.cog.flush_outbox()
    await sim.settle()
    posts = [m for m in sim.bot_messages(dream) if m.content.startswith(f"**Proposal #{pid}:")]
    assert len(posts) == 1, "posted once, though Discord refused the bot's reactions"
    assert [b.label for b in buttons(posts[0])] == ["Approve", "Reject", "Discuss"], "the buttons still vote"


async def test_a_redacted_proposal_is_edited_in_place(sim: Sim) -> None:
    pid, message = await posted_proposal(sim)
    await sim.pool.execute(
        """UPDATE proposals SET payload = jsonb_set(payload, '{examples}', '["what is the timeline?"]'),
                              post_pending = true WHERE id = $1""",
        pid,
    )  # as a forgetting leaves it
    assert await sim.cog.flush_outbox() == 1
    await sim.settle()
    edited = sim.only_message(sim.dream)
    assert edited.id == message.id, "the same post, edited"
    assert "let's plan the launch" not in edited.content and "what is the timeline?" in edited.content
    assert (await sim.app.governance.get(pid)).posted_ref == str(message.id)


# --- the owner's prefix commands ----------------------------------------------------------------------------


async def test_the_owners_stats_cover_every_scope_by_dm(sim: Sim) -> None:
    sim.bot.owner_id = sim.ana.id
    for scope in ("111", "dm:7"):
        await sim.app.brain.receive(IncomingTurn(scope, "discord", "1", "7", "x", "hello", external_id=f"s{scope}"))
    await sim.ana.send(sim.general, "!hippobot stats")
    await sim.settle()
    dm = [m.content for m in sim.ana.user.dm_channel.history() if m.author.id == sim.me.id]
    assert len(dm) == 1 and "111: 1 message(s)" in dm[0] and "dm:7: 1 message(s)" in dm[0]
    assert "by DM" in sim.only_message(sim.general).content, "the server's channel sees no other server's counts"


async def test_the_owners_stats_are_refused_to_others(sim: Sim) -> None:
    from discord.ext import commands

    sim.bot.owner_id = sim.ana.id
    await sim.ben.send(sim.general, "!hippobot stats")
    await sim.settle()
    assert [type(e) for e in sim.env.errors] == [commands.NotOwner], "refused (acknowledged: no teardown failure)"
    assert sim.bot_messages(sim.general) == []
    assert [m for m in sim.ben.user.dm_channel.history() if m.author.id == sim.me.id] == []
