"""The Discord front without a network: dpytest for messages and reactions, the real database throughout."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import discord
import discord.ext.test as dpytest
import pytest

from bot.app import App
from bot.discord.client import COGS, SingleShardHippoBot
from tests.fakes import ScriptedLLM


@pytest.fixture
async def bot(app: App, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SingleShardHippoBot]:
    # dpytest's reaction events predate discord.py 2.4's payload fields (see FACTS.md)
    original = discord.state.ConnectionState.parse_message_reaction_add

    def patched(self, data):  # type: ignore[no-untyped-def]
        data.setdefault("type", 0)
        data.setdefault("burst", False)
        return original(self, data)

    monkeypatch.setattr(discord.state.ConnectionState, "parse_message_reaction_add", patched)
    test_intents = discord.Intents.all()  # dpytest builds its guild from the member cache
    b = SingleShardHippoBot(app, app.settings, intents_=test_intents)
    await b._async_setup_hook()
    dpytest.configure(b, guilds=1, text_channels=["general", "allowed", "dream"], members=["ana", "ben", "mod"])
    cfg = dpytest.get_config()
    b._connection.loop = asyncio.get_running_loop()  # dpytest's state has none; typing() needs it
    b.settings = app.settings.model_copy(update={
        "discord_allowed_channels": [cfg.channels[1].id],
        "dream_channel_id": cfg.channels[2].id,
        "discord_edit_interval": 0.2,
    })
    await b.setup_hook()
    yield b
    await dpytest.empty_queue()
    await b.app.brain.drain()


def channels() -> tuple[discord.TextChannel, discord.TextChannel, discord.TextChannel]:
    c = dpytest.get_config().channels
    return c[0], c[1], c[2]


def members() -> list[discord.Member]:
    return dpytest.get_config().members


async def settle(bot: SingleShardHippoBot) -> None:
    await dpytest.run_all_events()
    await asyncio.sleep(0.05)
    await dpytest.run_all_events()
    await bot.app.brain.drain()


async def test_every_cog_loads_and_command_names_are_unique(bot: SingleShardHippoBot) -> None:
    assert {type(c).__name__ for c in bot.cogs.values()} == {c.__name__ for c in COGS}
    names = [c.qualified_name for c in bot.tree.walk_commands()]
    assert len(names) == len(set(names))
    for expected in ("memory stats", "memory recall", "memory forget", "memory pin", "archetype list",
                     "archetype show", "archetype enable", "archetype disable", "dream run", "dream status",
                     "dream channel set", "dream channel clear",
                     "config show", "forget me", "whatdoyouknow", "channel mode", "channel memory", "channel list",
                     "memory optout", "memory optin", "stop"):
        assert expected in names


async def test_a_mention_is_answered_and_remembered(bot: SingleShardHippoBot, llm: ScriptedLLM) -> None:
    general, _, _ = channels()
    await dpytest.message(f"<@{bot.user.id}> I adopted a cat called Miso", channel=general, member=members()[0])
    await settle(bot)
    sent = await general.fetch_message(dpytest.get_message().id)  # as edited by the stream
    assert sent.content == llm.reply
    pool = bot.app.db.pool
    row = await pool.fetchrow("SELECT scope, content, external_id FROM messages WHERE NOT is_bot")
    assert row["scope"] == str(general.guild.id) and row["content"] == "I adopted a cat called Miso"
    assert await pool.fetchval("SELECT external_id FROM messages WHERE is_bot") == str(sent.id)
    assert await pool.fetchval("SELECT count(*) FROM episodes") == 1
    named = await pool.fetch("SELECT DISTINCT channel_name FROM messages")  # the turn and the reply
    assert [r["channel_name"] for r in named] == ["general"]


async def test_unaddressed_messages_are_ignored_except_in_allowed_channels(bot: SingleShardHippoBot) -> None:
    general, allowed, dream = channels()
    await dpytest.message("just chatting", channel=general, member=members()[0])
    await dpytest.message("a proposal chat", channel=dream, member=members()[0])
    await settle(bot)
    assert dpytest.verify().message().nothing()
    await dpytest.message("hello bot", channel=allowed, member=members()[0])
    await settle(bot)
    assert dpytest.verify().message().contains().content("Nice")  # the first streamed piece
    assert await bot.app.db.pool.fetchval("SELECT count(*) FROM messages WHERE NOT is_bot") == 1, (
        "ignored messages are not stored, and the dream channel is never conversation"
    )


async def test_long_replies_stream_by_edits_and_split_at_2000(bot: SingleShardHippoBot, llm: ScriptedLLM) -> None:
    llm.reply = " ".join(f"word{i}" for i in range(700))  # ~5,000 characters
    llm.delay = 0.001
    _, allowed, _ = channels()
    await dpytest.message("tell me a long story", channel=allowed, member=members()[0])
    await settle(bot)
    parts = []
    while not dpytest.sent_queue.empty():
        parts.append(await dpytest.sent_queue.get())
    history = [m async for m in allowed.history(limit=20) if m.author.id == bot.user.id]
    texts = [m.content for m in sorted(history, key=lambda m: m.id)]
    assert len(texts) == 3 and all(len(t) <= 2000 for t in texts)
    assert " ".join(texts).split() == llm.reply.split()


async def test_deleting_a_message_deletes_its_memories(bot: SingleShardHippoBot) -> None:
    _, allowed, _ = channels()
    msg = await dpytest.message("my bank pin is 1234, oops", channel=allowed, member=members()[0])
    await settle(bot)
    pool = bot.app.db.pool
    assert await pool.fetchval("SELECT count(*) FROM episodes") == 1
    await msg.delete()
    await settle(bot)
    assert await pool.fetchval("SELECT count(*) FROM messages") == 0, "the message and the reply derived from it"
    assert await pool.fetchval("SELECT count(*) FROM episodes") == 0


async def test_an_edit_updates_the_memory(bot: SingleShardHippoBot) -> None:
    _, allowed, _ = channels()
    msg = await dpytest.message("I live in Porto", channel=allowed, member=members()[0])
    await settle(bot)
    # dpytest has no gateway edit event: deliver the one Discord sends
    from discord.ext.test import factories

    data = factories.dict_from_message(msg)
    data.update(content="I live in Lisbon", edited_timestamp=datetime.now(UTC).isoformat(),
                channel_id=msg.channel.id, guild_id=msg.guild.id)
    bot._connection.parse_message_update(data)
    await settle(bot)
    pool = bot.app.db.pool
    assert await pool.fetchval("SELECT content FROM messages WHERE NOT is_bot") == "I live in Lisbon"
    assert "Lisbon" in await pool.fetchval("SELECT content FROM episodes")


def approver_role(guild: discord.Guild) -> discord.Role:
    from discord.ext.test import backend

    return backend.make_role("hippobot-approver", guild)


async def make_proposal(bot: SingleShardHippoBot, name: str = "project_planning") -> int:
    proposal = await bot.app.governance.propose(
        "new_archetype", f"new archetype '{name}'",
        {"name": name, "description": "Planning a project",
         "examples": ["let's plan the launch", "what milestones should we set?", "help me break this into phases",
                      "what's the timeline?", "who owns which task?"],
         "context_turns": 10, "context_vectors": 7, "similarity_threshold": 0.7, "triple_depth": 2},
        "- because", {"messages": []}, centroid=None, now=datetime.now(UTC), scope=str(channels()[0].guild.id),
    )
    return proposal.id


async def posted_proposal(bot: SingleShardHippoBot) -> tuple[int, discord.Message]:
    """A proposal of this guild, posted to the dream channel from the outbox."""
    pid = await make_proposal(bot)
    assert await bot.get_cog("DreamCog").flush_outbox() == 1
    await settle(bot)
    ref = (await bot.app.governance.get(pid)).posted_ref
    message = await channels()[2].fetch_message(int(ref))
    return pid, message


async def test_an_approvers_reaction_applies_the_proposal(bot: SingleShardHippoBot) -> None:
    pid, message = await posted_proposal(bot)
    assert (await bot.app.governance.get(pid)).status == "pending", "the bot's own reactions are ignored"
    guild = channels()[0].guild
    role = approver_role(guild)
    mod = members()[2]
    await dpytest.add_role(mod, role)
    await dpytest.add_reaction(mod, message, "✅")
    await settle(bot)
    proposal = await bot.app.governance.get(pid)
    assert proposal.status == "applied" and proposal.decided_by == mod.display_name
    assert "project_planning" in [a.name for a in bot.app.router.archetypes_in(str(guild.id))], "in this guild"
    edited = await channels()[2].fetch_message(message.id)
    assert "applied by" in edited.content


async def test_the_bots_own_reactions_are_ignored_even_with_the_role(bot: SingleShardHippoBot) -> None:
    guild = channels()[0].guild
    await dpytest.add_role(guild.me, approver_role(guild))
    pid, _ = await posted_proposal(bot)  # posting adds the bot's own three reactions
    assert (await bot.app.governance.get(pid)).status == "pending"
    assert await bot.app.db.pool.fetchval("SELECT count(*) FROM proposal_votes") == 0


async def test_a_non_approvers_vote_is_ignored(bot: SingleShardHippoBot) -> None:
    pid, message = await posted_proposal(bot)
    await dpytest.add_reaction(members()[0], message, "✅")
    await settle(bot)
    assert (await bot.app.governance.get(pid)).status == "pending"
    assert await bot.app.db.pool.fetchval("SELECT count(*) FROM proposal_votes") == 0


async def test_a_vote_after_a_restart_counts(bot: SingleShardHippoBot) -> None:
    pid, message = await posted_proposal(bot)
    # a restart: the cog goes and comes back with no memory of the posted message
    cog_type = type(bot.get_cog("DreamCog"))
    await bot.remove_cog("DreamCog")
    await bot.add_cog(cog_type(bot))
    role = approver_role(channels()[0].guild)
    await dpytest.add_role(members()[2], role)
    await dpytest.add_reaction(members()[2], message, "❌")
    await settle(bot)
    assert (await bot.app.governance.get(pid)).status == "rejected"


async def test_a_restricted_channels_messages_are_visible_only_there(bot: SingleShardHippoBot) -> None:
    from discord.ext.test import backend

    general, allowed, _ = channels()
    backend.update_text_channel(allowed, allowed.guild.default_role, discord.PermissionOverwrite(view_channel=False))
    await dpytest.message("the launch code is 0000", channel=allowed, member=members()[0])
    await dpytest.message(f"<@{bot.user.id}> hello everyone", channel=general, member=members()[1])
    await settle(bot)
    rows = {r["content"]: r["visible_in"] for r in await bot.app.db.pool.fetch(
        "SELECT content, visible_in FROM messages WHERE NOT is_bot")}
    assert rows == {"the launch code is 0000": str(allowed.id), "hello everyone": None}
    assert await bot.app.db.pool.fetchval("SELECT visible_in FROM episodes WHERE content LIKE '%launch%'") == str(allowed.id)


async def test_a_failed_edit_while_streaming_cancels_the_generation_and_keeps_the_turn(
        bot: SingleShardHippoBot, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    llm.reply = " ".join(f"word{i}" for i in range(400))
    llm.delay = 0.002
    replies = []
    respond = bot.app.brain.respond

    async def keep(turn):  # type: ignore[no-untyped-def]
        replies.append(await respond(turn))
        return replies[-1]

    async def refuse(self, **kwargs):  # type: ignore[no-untyped-def]
        raise discord.Forbidden(SimpleNamespace(status=403, reason="Forbidden"), "Missing Access")

    monkeypatch.setattr(bot.app.brain, "respond", keep)
    monkeypatch.setattr(discord.Message, "edit", refuse)
    _, allowed, _ = channels()
    await dpytest.message("tell me everything", channel=allowed, member=members()[0])
    await settle(bot)
    assert replies and replies[0]._generation.cancelled.is_set(), "nobody is left generating for"
    pool = bot.app.db.pool
    assert await pool.fetchval("SELECT absorbed_at IS NOT NULL FROM messages WHERE NOT is_bot"), "the turn is absorbed"
    assert await pool.fetchval("SELECT count(*) FROM episodes") == 1


async def test_a_busy_bot_says_so_and_keeps_the_message(bot: SingleShardHippoBot) -> None:
    bot.app.brain._max_generations = 0  # every generation slot taken
    _, allowed, _ = channels()
    await dpytest.message("are you there?", channel=allowed, member=members()[0])
    await settle(bot)
    assert dpytest.verify().message().content("I'm busy right now — try again in a moment.")
    assert await bot.app.db.pool.fetchval("SELECT count(*) FROM messages WHERE NOT is_bot") == 1


async def store(bot: SingleShardHippoBot, channel_id: int, external_id: str, text: str, *,
                thread_parent: int | None = None) -> None:
    from bot.brain import IncomingTurn

    guild = channels()[0].guild
    await bot.app.brain.receive(IncomingTurn(
        str(guild.id), "discord", str(channel_id), str(members()[0].id), "ana", text, external_id=external_id,
        thread_parent_id=None if thread_parent is None else str(thread_parent)))


async def stored_texts(bot: SingleShardHippoBot) -> set[str]:
    return {r["content"] for r in await bot.app.db.pool.fetch("SELECT content FROM messages")}


async def test_a_bulk_delete_forgets_those_messages_only(bot: SingleShardHippoBot) -> None:
    general, allowed, _ = channels()
    for i, text in enumerate(("spam one", "spam two", "keep me")):
        await store(bot, allowed.id, str(1000 + i), text)
    bot._connection.parse_message_delete_bulk(
        {"ids": ["1000", "1001"], "channel_id": str(allowed.id), "guild_id": str(general.guild.id)})
    await settle(bot)
    assert await stored_texts(bot) == {"keep me"}


async def test_deleting_a_channel_forgets_it_and_its_threads(bot: SingleShardHippoBot) -> None:
    from discord.ext.test import backend

    general, allowed, _ = channels()
    await store(bot, allowed.id, "2000", "said in the channel")
    await store(bot, 424242, "2001", "said in its thread", thread_parent=allowed.id)
    await store(bot, general.id, "2002", "said elsewhere")
    backend.delete_channel(allowed)
    await settle(bot)
    assert await stored_texts(bot) == {"said elsewhere"}


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


async def test_deleting_a_thread_forgets_its_messages(bot: SingleShardHippoBot) -> None:
    general, _, _ = channels()
    await store(bot, 434343, "3000", "said in the thread", thread_parent=general.id)
    await store(bot, general.id, "3001", "said in the parent")
    bot._connection.parse_thread_delete(
        {"id": "434343", "guild_id": str(general.guild.id), "parent_id": str(general.id), "type": 11})
    await settle(bot)
    assert await stored_texts(bot) == {"said in the parent"}


async def test_a_proposal_made_while_the_channel_is_unreachable_is_posted_when_it_is_back(
        bot: SingleShardHippoBot, monkeypatch: pytest.MonkeyPatch) -> None:
    dream = channels()[2]
    get_channel = bot.get_channel
    monkeypatch.setattr(bot, "get_channel", lambda cid: None if cid == dream.id else get_channel(cid))
    pid = await make_proposal(bot)
    cog = bot.get_cog("DreamCog")
    assert await cog.flush_outbox() == 0
    assert (await bot.app.governance.get(pid)).posted_ref is None
    assert await bot.app.db.pool.fetchval("SELECT post_pending FROM proposals WHERE id = $1", pid)
    monkeypatch.setattr(bot, "get_channel", get_channel)  # Discord is back
    assert await cog.flush_outbox() == 1
    await settle(bot)
    ref = (await bot.app.governance.get(pid)).posted_ref
    posted = await dream.fetch_message(int(ref))
    assert f"Proposal #{pid}" in posted.content and "React ✅ to approve" in posted.content, "posted as pending"
    assert not await bot.app.db.pool.fetchval("SELECT post_pending FROM proposals WHERE id = $1", pid)
    assert await cog.flush_outbox() == 0, "posted once"


async def test_a_proposal_made_with_the_bot_off_is_posted_when_it_starts(bot: SingleShardHippoBot) -> None:
    pid = await make_proposal(bot)  # as `hippobot dream` leaves it: stored, never posted
    cog = bot.get_cog("DreamCog")
    bot.dispatch("ready")
    try:
        for _ in range(50):
            await asyncio.sleep(0.02)
            if (await bot.app.governance.get(pid)).posted_ref is not None:
                break
        ref = (await bot.app.governance.get(pid)).posted_ref
        assert ref is not None and cog.outbox_loop.is_running(), "posted on ready, then every minute"
        assert f"Proposal #{pid}" in (await channels()[2].fetch_message(int(ref))).content
    finally:
        cog.outbox_loop.cancel()


async def test_a_redacted_proposal_is_edited_in_place(bot: SingleShardHippoBot) -> None:
    pid, message = await posted_proposal(bot)
    pool = bot.app.db.pool
    await pool.execute("""UPDATE proposals SET payload = jsonb_set(payload, '{examples}', '["what is the timeline?"]'),
                          post_pending = true WHERE id = $1""", pid)  # as a forgetting leaves it
    assert await bot.get_cog("DreamCog").flush_outbox() == 1
    await settle(bot)
    edited = await channels()[2].fetch_message(message.id)
    assert "let's plan the launch" not in edited.content and "what is the timeline?" in edited.content
    assert (await bot.app.governance.get(pid)).posted_ref == str(message.id), "the same post, edited"


async def test_the_owners_stats_cover_every_scope_by_dm(bot: SingleShardHippoBot) -> None:
    from bot.brain import IncomingTurn

    owner = members()[0]
    bot.owner_id = owner.id
    for scope in ("111", "dm:7"):
        await bot.app.brain.receive(IncomingTurn(scope, "discord", "1", "7", "x", "hello", external_id=f"s{scope}"))
    await dpytest.message("!hippobot stats", channel=channels()[0], member=owner)
    await settle(bot)
    texts = []
    while not dpytest.sent_queue.empty():
        texts.append((await dpytest.sent_queue.get()).content)
    assert any("111: 1 message(s)" in t and "dm:7: 1 message(s)" in t for t in texts)
    assert any("by DM" in t for t in texts)


async def test_the_owners_stats_are_refused_to_others(bot: SingleShardHippoBot) -> None:
    from discord.ext import commands

    bot.owner_id = members()[0].id
    with pytest.raises(commands.NotOwner):  # dpytest re-raises what the bot's error handler would log
        await dpytest.message("!hippobot stats", channel=channels()[0], member=members()[1])
    await settle(bot)
    assert dpytest.verify().message().nothing()


async def test_a_reply_from_memory_names_its_source_with_a_link_and_forget_buttons(
        bot: SingleShardHippoBot, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.discord.sources import NOT_YOURS, ForgetSourceButton, forget_source

    views: list[discord.ui.View] = []  # dpytest keeps no components: the views the bot attached, as it sent them
    original_edit = discord.Message.edit

    async def edit(self, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("view") is not None:
            views.append(kwargs["view"])
        return await original_edit(self, **kwargs)

    monkeypatch.setattr(discord.Message, "edit", edit)

    general, _, _ = channels()
    ana, ben = members()[0], members()[1]
    llm.reply = "Nice!"
    told = await dpytest.message(f"<@{bot.user.id}> my dog is called Pico", channel=general, member=ana)
    await settle(bot)
    await dpytest.empty_queue()
    llm.reply = "Your dog is called Pico."
    await dpytest.message(f"<@{bot.user.id}> what is my dog called?", channel=general, member=ben)
    await settle(bot)
    sent = await general.fetch_message(dpytest.get_message().id)
    assert sent.content.startswith("Your dog is called Pico.")
    link = f"https://discord.com/channels/{general.guild.id}/{general.id}/{told.id}"
    assert "-# from: ana" in sent.content and link in sent.content, sent.content
    pool = bot.app.db.pool
    stored = await pool.fetchval("SELECT id FROM messages WHERE external_id = $1", str(told.id))
    [view] = views
    buttons = [item.item for item in view.children]
    assert [b.custom_id for b in buttons] == [f"hippobot:forget:{stored}"]
    assert ForgetSourceButton.__discord_ui_compiled_template__.fullmatch(buttons[0].custom_id)
    # anyone but the author is refused, and nothing is forgotten
    assert await forget_source(bot.app, stored, general.guild.id, ben.id) == NOT_YOURS
    assert await pool.fetchval("SELECT count(*) FROM messages WHERE id = $1", stored) == 1
    # another server's button (its scope) finds nothing
    assert "no longer hold" in await forget_source(bot.app, stored, general.guild.id + 1, ana.id)
    # the author has it forgotten, with what was derived from it
    answer = await forget_source(bot.app, stored, general.guild.id, ana.id)
    assert answer.startswith("Forgotten")
    assert await pool.fetchval("SELECT count(*) FROM messages WHERE id = $1", stored) == 0
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE message_id = $1", stored) == 0


async def test_a_reply_that_uses_no_memory_shows_nothing_extra(bot: SingleShardHippoBot, llm: ScriptedLLM) -> None:
    general, _, _ = channels()
    llm.reply = "Hello to you too."
    await dpytest.message(f"<@{bot.user.id}> hello", channel=general, member=members()[0])
    await settle(bot)
    sent = await general.fetch_message(dpytest.get_message().id)
    assert sent.content == "Hello to you too."
