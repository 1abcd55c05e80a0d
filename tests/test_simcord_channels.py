"""Channel modes, channel memory, opt-out, replies, /stop, the rate limit, mentions and splitting (issue 29.2/29.3),
driven through SimCord: the real bot class and cogs against a simulated Discord that speaks Discord's own
payloads (slash commands, buttons and permission overwrites included), on the real database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import discord
import pytest
import simcord
from simcord.backend.models.message import AllowedMentions

from bot.app import App
from bot.discord.chat import ChatCog
from bot.discord.client import SingleShardHippoBot
from bot.discord.ratelimit import RateLimiter
from memory.provenance import forgotten_digest
from tests.fakes import ScriptedLLM
from tests.simcord_support import HeldGeneration, NoTyping, SimBase, bot_member, cog_of


@dataclass
class Sim(SimBase):
    guild: simcord.GuildHandle
    general: simcord.ChannelHandle
    ana: simcord.MemberActor
    ben: simcord.MemberActor
    mod: simcord.MemberActor

    def mention(self) -> str:
        return self.me.mention


# SimCord's pytest plugin runs the bot below as `simcord_env` (started, logged in, at READY) and closes it
# after the test; embedding and the memory writes need more than its default 5 s to settle.
pytestmark = pytest.mark.simcord(settle_timeout=60)


@pytest.fixture
async def sim(simcord_env: simcord.Env, simcord_bot: SingleShardHippoBot, app: App) -> AsyncIterator[Sim]:
    env = simcord_env
    guild = env.create_guild("Hippo Hall")
    general = guild.create_text_channel("general")
    approvers = guild.create_role("hippobot-approver")
    mod = guild.add_member(env.create_user("mod"), roles=[approvers])
    ana = guild.add_member(env.create_user("ana"))
    ben = guild.add_member(env.create_user("ben"))
    await simcord_bot.tree.sync()  # SimCord refuses commands that were never synced, as Discord does
    s = Sim(env, simcord_bot, app, guild, general, ana, ben, mod)
    yield s
    await s.settle()


def said(result: simcord.InteractionResult) -> str:
    """What a slash command or button answered (its response, else its last follow-up)."""
    if result.followups:
        return result.followups[-1].content
    return result.response.content if result.response is not None else ""


async def stored(sim: Sim, text: str) -> int:
    return await sim.pool.fetchval("SELECT count(*) FROM messages WHERE content LIKE '%' || $1 || '%'", text)


# --- channel modes ------------------------------------------------------------------------------------


async def test_mention_is_the_default_mode(sim: Sim, llm: ScriptedLLM) -> None:
    await sim.ana.send(sim.general, "anyone seen the new hippo at the zoo?")
    await sim.settle()
    assert sim.bot_messages(sim.general) == [], "an unaddressed message in a default channel is not answered"
    assert await stored(sim, "hippo at the zoo") == 0, "nor stored: the channel's memory is off by default"
    await sim.ana.send(sim.general, f"{sim.mention()} did you see the hippo?")
    await sim.settle()
    assert [m.content for m in sim.bot_messages(sim.general)] == [llm.reply]


async def test_a_reply_is_stored_at_the_time_discord_posted_it(sim: Sim, llm: ScriptedLLM) -> None:
    """The transcript keeps Discord's order: the stored reply has its Discord message's time, not this process's
    clock (SimCord's clock is not the wall clock, so the reply was stored before its question)."""
    await sim.ana.send(sim.general, f"{sim.mention()} did you see the hippo?")
    await sim.settle()
    [posted] = sim.bot_messages(sim.general)
    rows = await sim.pool.fetch("SELECT is_bot, created_at FROM messages ORDER BY created_at, id")
    assert [r["is_bot"] for r in rows] == [False, True]
    assert rows[1]["created_at"] == posted.created_at


async def test_chat_mode_answers_every_message(sim: Sim, llm: ScriptedLLM) -> None:
    result = await sim.mod.slash(sim.general, "channel mode", mode="chat")
    assert result.ephemeral and "is now `chat`" in said(result)
    await sim.ana.send(sim.general, "what a lovely morning")
    await sim.settle()
    assert [m.content for m in sim.bot_messages(sim.general)] == [llm.reply]
    row = await sim.pool.fetchrow(
        "SELECT mode, mode_set_by FROM channel_settings WHERE channel_id = $1", str(sim.general.id)
    )
    assert (row["mode"], row["mode_set_by"]) == ("chat", str(sim.mod.id)), "stored, with who set it"


async def test_quiet_mode_never_answers_even_a_mention(sim: Sim) -> None:
    await sim.mod.slash(sim.general, "channel mode", mode="quiet")
    await sim.ana.send(sim.general, f"{sim.mention()} are you there?")
    await sim.settle()
    assert sim.bot_messages(sim.general) == []
    assert await stored(sim, "are you there") == 0, "not answered and not remembered: nothing kept"


async def test_channel_commands_need_an_admin(sim: Sim) -> None:
    for command, options in (
        ("channel mode", {"mode": "chat"}),
        ("channel memory", {"state": "on"}),
        ("channel list", {}),
    ):
        result = await sim.ana.slash(sim.general, command, **options)
        assert "needs Manage Server or the approver role" in said(result), command
    assert await sim.pool.fetchval("SELECT count(*) FROM channel_settings") == 0
    assert sim.bot_messages(sim.general) == [], "no announcement either"


async def test_a_mode_set_in_one_server_does_not_apply_in_another(sim: Sim) -> None:
    other = sim.env.create_guild("Elsewhere")
    lounge = other.create_text_channel("lounge")
    eve = other.add_member(sim.env.create_user("eve"))
    await sim.mod.slash(sim.general, "channel mode", mode="chat")
    await eve.send(lounge, "just chatting here")
    await sim.settle()
    assert sim.bot_messages(lounge) == []


# --- channel memory -------------------------------------------------------------------------------------


async def test_memory_on_is_announced_then_unanswered_messages_are_remembered(sim: Sim) -> None:
    result = await sim.mod.slash(sim.general, "channel memory", state="on")
    assert "Memory is on" in said(result)
    announced = sim.bot_messages(sim.general)
    assert len(announced) == 1 and "I remember this channel's conversation" in announced[0].content
    assert "/memory optout" in announced[0].content
    await sim.ana.send(sim.general, "I keep three beehives on my roof")
    await sim.settle()
    assert len(sim.bot_messages(sim.general)) == 1, "remembered, not answered (mention mode)"
    row = await sim.pool.fetchrow("SELECT scope, visible_in, absorbed_at FROM messages WHERE content LIKE '%beehives%'")
    assert row["scope"] == str(sim.guild.id) and row["visible_in"] is None, "a public channel: the whole server"
    assert row["absorbed_at"] is not None, "absorbed like any other message"
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes WHERE content LIKE '%beehives%'") == 1
    setting = await sim.pool.fetchrow("SELECT remember, memory_set_by FROM channel_settings")
    assert setting["remember"] and setting["memory_set_by"] == str(sim.mod.id)


async def test_a_remembered_restricted_channel_is_recalled_only_there(sim: Sim) -> None:
    staff = sim.guild.create_text_channel(
        "staff",
        overwrites={
            sim.guild.default_role: discord.PermissionOverwrite(view_channel=False),
            sim.mod: discord.PermissionOverwrite(view_channel=True),
            bot_member(sim.guild): discord.PermissionOverwrite(view_channel=True),
        },
    )
    await sim.mod.slash(staff, "channel memory", state="on")
    assert "recalled only in this channel" in sim.bot_messages(staff)[0].content
    await sim.mod.send(staff, "the staff party is at the lighthouse on friday")
    await sim.settle()
    assert await sim.pool.fetchval("SELECT visible_in FROM messages WHERE content LIKE '%lighthouse%'") == str(staff.id)
    brain, scope = sim.app.brain, str(sim.guild.id)
    public = await brain.context("where is the staff party?", scope, channel_id=str(sim.general.id))
    inside = await brain.context("where is the staff party?", scope, channel_id=str(staff.id))
    assert not any("lighthouse" in i.text for i in public.items()), "never recalled in a public channel"
    assert any("lighthouse" in i.text for i in inside.items())


async def test_memory_stays_off_where_it_cannot_be_announced(sim: Sim) -> None:
    muted = sim.guild.create_text_channel(
        "muted", overwrites={bot_member(sim.guild): discord.PermissionOverwrite(send_messages=False)}
    )
    result = await sim.mod.slash(muted, "channel memory", state="on")
    assert "cannot post" in said(result) and "Memory stays off" in said(result)
    assert await sim.pool.fetchval("SELECT count(*) FROM channel_settings WHERE remember") == 0
    await sim.ana.send(muted, "a secret nobody was told would be kept")
    await sim.settle()
    assert await stored(sim, "a secret nobody") == 0


async def test_memory_off_stops_remembering(sim: Sim) -> None:
    await sim.mod.slash(sim.general, "channel memory", state="on")
    await sim.mod.slash(sim.general, "channel memory", state="off")
    assert "no longer remember" in sim.bot_messages(sim.general)[-1].content
    await sim.ana.send(sim.general, "my cat is called Pistachio")
    await sim.settle()
    assert await stored(sim, "Pistachio") == 0


async def test_channel_list_shows_each_channels_mode_and_memory(sim: Sim) -> None:
    random = sim.guild.create_text_channel("random")
    await sim.mod.slash(random, "channel mode", mode="chat")
    await sim.mod.slash(random, "channel memory", state="on")
    result = await sim.mod.slash(sim.general, "channel list")
    lines = said(result).splitlines()
    assert result.ephemeral
    assert f"{sim.general.mention}: **mention** (default), memory off" in lines
    assert any(
        line.startswith(f"{random.mention}: **chat** (chosen by <@{sim.mod.id}>") and "memory on (chosen by" in line
        for line in lines
    ), lines
    assert lines[-1] == "Nobody has opted out of being remembered in this server."


async def test_a_thread_follows_its_channels_mode_and_memory(sim: Sim) -> None:
    # SimCord's public API has no member-started thread; its backend makes one and sends THREAD_CREATE
    thread = simcord.ChannelHandle(
        sim.env, sim.guild, sim.env.backend.create_thread(sim.general.id, "bees", sim.ana.id)
    )
    await sim.settle()
    await sim.mod.slash(sim.general, "channel mode", mode="quiet")
    await sim.mod.slash(sim.general, "channel memory", state="on")
    await sim.ana.send(thread, f"{sim.mention()} my hives swarmed today")
    await sim.settle()
    assert sim.bot_messages(thread) == [], "quiet, as its channel"
    row = await sim.pool.fetchrow("SELECT channel_id, thread_parent_id FROM messages WHERE content LIKE '%swarmed%'")
    assert row is not None, "remembered, as its channel is"
    assert (row["channel_id"], row["thread_parent_id"]) == (str(thread.id), str(sim.general.id))


async def test_deleting_a_channel_drops_its_settings(sim: Sim) -> None:
    random = sim.guild.create_text_channel("random")
    await sim.mod.slash(random, "channel mode", mode="chat")
    sim.env.backend.delete_channel(random.id)  # SimCord has no public handle for this; its backend sends the event
    await sim.settle()
    assert await sim.pool.fetchval("SELECT count(*) FROM channel_settings") == 0


# --- opting out ----------------------------------------------------------------------------------------


async def test_an_opted_out_person_is_answered_but_nothing_of_theirs_is_stored(sim: Sim, llm: ScriptedLLM) -> None:
    await sim.mod.slash(sim.general, "channel memory", state="on")
    result = await sim.ana.slash(sim.general, "memory optout")
    assert result.ephemeral and "nothing you say in this server is stored" in said(result)
    await sim.ana.send(sim.general, "I was born in Tromso")
    await sim.ana.send(sim.general, f"{sim.mention()} I collect vintage radios")
    await sim.ben.send(sim.general, "I was born in Faro")
    await sim.settle()
    assert sim.bot_messages(sim.general)[-1].content == llm.reply, "a mention is still answered"
    assert await stored(sim, "Tromso") == 0 and await stored(sim, "radios") == 0
    assert await sim.pool.fetchval("SELECT count(*) FROM messages WHERE is_bot") == 0, "nor the reply to her"
    assert await stored(sim, "Faro") == 1, "others in the channel are still remembered"
    assert await sim.pool.fetchval("SELECT count(*) FROM memory_optouts") == 1
    assert not await sim.pool.fetchval(
        "SELECT count(*) FROM memory_optouts WHERE digest LIKE '%' || $1 || '%'", str(sim.ana.id)
    ), "no id kept"
    await sim.ana.slash(sim.general, "memory optin")
    await sim.ana.send(sim.general, "I moved to Bergen")
    await sim.settle()
    assert await stored(sim, "Bergen") == 1, "opted back in: remembered again"


async def test_opting_out_offers_to_forget_what_was_stored(sim: Sim) -> None:
    await sim.mod.slash(sim.general, "channel memory", state="on")
    await sim.ana.send(sim.general, "my locker code is 4471")
    await sim.ben.send(sim.general, "my bike is green")
    await sim.settle()
    assert await stored(sim, "4471") == 1
    offer = await sim.ana.slash(sim.general, "memory optout")
    assert offer.response is not None
    assert await stored(sim, "4471") == 1, "nothing forgotten before she confirms"
    done = await sim.ana.click(offer.response, label="Forget everything about me")
    await sim.settle()
    assert "Done: forgot" in said(done) or "Done: forgot" in offer.response.content
    assert await stored(sim, "4471") == 0
    tombstone = forgotten_digest("author", str(sim.guild.id), str(sim.ana.id))
    assert await sim.pool.fetchval("SELECT count(*) FROM forgotten WHERE digest = $1", tombstone) == 1, (
        "the forget-person path's tombstone (a re-import cannot bring her back)"
    )
    assert await stored(sim, "bike is green") == 1


# --- a busy channel ----------------------------------------------------------------------------------------


async def reply_without_ping(
    sim: Sim, member: simcord.MemberActor, channel: simcord.ChannelHandle, to: discord.Message, content: str
) -> None:
    """A Discord reply with its @-ping switched off, so the bot is not among its mentions. SimCord's public
    ``send(reply_to=...)`` always pings; its backend takes the same message with the ping off."""
    backend = sim.env.backend
    reference = backend.normalize_message_reference(
        channel.id, {"channel_id": str(channel.id), "message_id": str(to.id)}
    )
    backend.create_message(
        channel.id, member.id, content, reference=reference, allowed_mentions=AllowedMentions(replied_user=False)
    )
    await sim.settle()


async def test_replying_to_the_bot_addresses_it(sim: Sim, llm: ScriptedLLM) -> None:
    first = await sim.ana.send(sim.general, f"{sim.mention()} hello there")
    await sim.settle()
    bot_reply = sim.bot_messages(sim.general)[0]
    await reply_without_ping(sim, sim.ben, sim.general, bot_reply, "and what about me?")
    quiet = next(m for m in sim.general.history() if m.content == "and what about me?")
    assert sim.bot.user not in quiet.mentions, "no mention: only the reply addresses the bot"
    assert len(sim.bot_messages(sim.general)) == 2, "a reply to the bot's message is answered"
    await reply_without_ping(sim, sim.ben, sim.general, first, "nice to see you ana")
    assert len(sim.bot_messages(sim.general)) == 2, "a reply to someone else's message is not"
    prompt = llm.prompts[-1]
    assert "and what about me?" in prompt and llm.reply in prompt, "the replied-to message is in the context"


async def test_stop_ends_a_reply_being_streamed(sim: Sim, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "generate", lambda prompt, **_: HeldGeneration(sim.env, ["Once ", "upon ", "a time"]))
    # discord.py's typing indicator re-sends every 5 s from a task SimCord's settling does not count as idle, so
    # with a reply held open on purpose every action would wait out the settle timeout: no typing here
    monkeypatch.setattr(discord.abc.Messageable, "typing", lambda self: NoTyping())
    cog = cog_of(sim.bot, ChatCog)
    await sim.ana.send(sim.general, f"{sim.mention()} tell me everything")
    assert cog.streaming, "the reply is still being written"
    refused = await sim.ben.slash(sim.general, "stop")
    assert "not writing a reply to you" in said(refused), "only the asker (or an admin) may stop it"
    assert cog.streaming
    result = await sim.ana.slash(sim.general, "stop")
    assert result.ephemeral and "Stopped 1 reply" in said(result)
    await sim.settle()
    assert not cog.streaming
    assert sim.bot_messages(sim.general)[-1].content == "Once upon a time\n-# ⏹ stopped by ana"
    asked = await sim.pool.fetchrow("SELECT absorbed_at FROM messages WHERE content = 'tell me everything'")
    assert asked["absorbed_at"] is not None, "the question is remembered as any answered message"
    nothing = await sim.ana.slash(sim.general, "stop")
    assert "not writing anything here" in said(nothing)


async def test_the_rate_limit_answers_politely_once(sim: Sim, llm: ScriptedLLM) -> None:
    cog = cog_of(sim.bot, ChatCog)
    now = [0.0]
    cog.limiter = RateLimiter(2, 60.0, clock=lambda: now[0])
    for i in range(4):
        await sim.ana.send(sim.general, f"{sim.mention()} question number {i}")
        await sim.settle()
    texts = [m.content for m in sim.bot_messages(sim.general)]
    assert texts[:2] == [llm.reply, llm.reply]
    assert len(texts) == 3 and "faster than I can answer" in texts[2], "told once, then silent"
    assert await stored(sim, "question number 3") == 0, "not answered, and the channel is not remembered"
    await sim.ben.send(sim.general, f"{sim.mention()} my turn")
    await sim.settle()
    assert sim.bot_messages(sim.general)[-1].content == llm.reply, "the limit is per person"
    now[0] = 61.0
    await sim.ana.send(sim.general, f"{sim.mention()} back again")
    await sim.settle()
    assert sim.bot_messages(sim.general)[-1].content == llm.reply, "the window moved on"


async def test_replies_never_ping_anyone(sim: Sim, llm: ScriptedLLM) -> None:
    role = sim.guild.create_role("everyone-else", mentionable=True)
    llm.reply = f"@everyone @here <@&{role.id}> <@{sim.ben.id}> look at this"
    assert bot_member(sim.guild).guild_permissions.mention_everyone, (
        "the bot could ping them all: only the policy stops it"
    )
    await sim.ana.send(sim.general, f"{sim.mention()} say something loud")
    await sim.settle()
    sent = sim.bot_messages(sim.general)[-1]
    assert "@everyone" in sent.content, "the text is shown as written"
    # Discord lists what the text mentions; who is notified follows allowed_mentions (SimCord's backend keeps both)
    kept = sim.env.backend.get_message(sim.general.id, sent.id)
    assert not kept.mention_everyone and kept.ping_role_ids == [] and kept.ping_user_ids == []
    posts = [
        r
        for r in sim.env.http_requests
        if r.method in ("POST", "PATCH") and "/messages" in r.path and isinstance(r.json, dict) and "content" in r.json
    ]
    policies = [
        r.json.get("allowed_mentions") for r in posts if isinstance(r.json, dict)
    ]  # the first post and every streamed edit
    assert policies and all(p is not None and p["parse"] == [] and not p.get("replied_user") for p in policies), (
        policies
    )


async def test_a_long_reply_is_split_cleanly(sim: Sim, llm: ScriptedLLM) -> None:
    code = "\n".join(f"    total += item_{i}  # add item {i}" for i in range(120))
    llm.reply = "Here is the loop you asked for.\n```python\n" + code + "\n```\nThat is all."
    await sim.ana.send(sim.general, f"{sim.mention()} write me a long loop")
    await sim.settle()
    parts = [m.content for m in sim.bot_messages(sim.general)]
    assert len(parts) >= 2 and all(len(p) <= 2000 for p in parts)
    assert all(p.count("```") % 2 == 0 for p in parts), "each piece's code block is closed"
    assert parts[1].startswith("```python\n"), "and reopened with its language"
    body = "\n".join(p.removesuffix("\n```").removeprefix("```python\n") for p in parts)
    assert all(f"item_{i}  # add item {i}" in body for i in range(120)), "no line lost or cut"
