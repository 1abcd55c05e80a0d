"""Slash commands and buttons through their callbacks, with specced fakes of Discord objects: what each command
computes for a server (its scope, its channels, its archetypes, its adapters) and the order of answer and work.
That each command reaches the bot through Discord, its refusals (no permission, DMs, another server's links)
and the buttons after a restart are tested end to end on SimCord: tests/test_simcord_commands.py and
tests/test_discord.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast
from unittest.mock import AsyncMock, MagicMock

import discord
from discord import app_commands
from discord.ext import commands
from pydantic import SecretStr
import pytest

from bot.app import App
from bot.brain import IncomingTurn
from bot.discord.admin import AdminCog
from bot.discord.chat import read_text_attachments
from bot.discord.client import HippoBotBase
from bot.discord.common import DreamPosting
from bot.discord.dream import DreamCog, ProposalButton
from bot.discord.services import Services
from bot.discord.rules import MessageFacts, parse_message_link, scope_for, should_answer, split_message
from bot.discord.streaming import StreamingReply
from dream.governance import PENDING, Proposal
from memory.clock import SimulatedClock

GUILD = 555


def member(user_id: int, *, manage: bool = False, roles: tuple[str, ...] = (), guild: int = GUILD) -> MagicMock:
    m = MagicMock(spec=discord.Member)
    m.id = user_id
    m.guild = SimpleNamespace(id=guild)
    m.display_name = f"user{user_id}"
    m.bot = False
    m.guild_permissions = discord.Permissions(manage_guild=manage)
    role_objs = []
    for i, name in enumerate(roles):
        r = MagicMock(spec=discord.Role)
        r.name, r.id = name, 9000 + i
        role_objs.append(r)
    m.roles = role_objs
    return m


def interaction(
    user: MagicMock, client: object = None, *, guild: int | None = GUILD, channels: tuple[int, ...] = (42,)
) -> MagicMock:
    i = MagicMock(spec=discord.Interaction)
    i.user = user
    i.guild_id = guild
    i.guild = None if guild is None else SimpleNamespace(id=guild, channels=[SimpleNamespace(id=c) for c in channels])
    i.channel_id = 42
    i.channel = None
    i.client = client
    i.message = None
    i.response = MagicMock(spec=discord.InteractionResponse)
    i.response.is_done.return_value = False
    i.response.send_message = AsyncMock()
    i.response.edit_message = AsyncMock()
    i.response.defer = AsyncMock()
    i.followup = MagicMock(spec=discord.Webhook)
    i.followup.send = AsyncMock()
    i.edit_original_response = AsyncMock()
    return i


async def run_command(
    cog: commands.Cog, command: app_commands.Command[Any, ..., Any], i: MagicMock, *args: object
) -> None:
    """Run a cog's slash command on a fake interaction as discord.py runs it: its callback, given the cog first
    (discord.py types the callback as either bound or unbound; a cog's command is unbound)."""
    callback: Callable[..., Awaitable[object]] = command.callback
    await callback(cog, i, *args)


def said(i: MagicMock) -> str:
    """What the interaction answered, with an attached text file's content (long answers are attached)."""
    call = i.response.send_message.call_args or i.followup.send.call_args
    text = call.args[0] if call.args else call.kwargs.get("content", "")
    attached = call.kwargs.get("file")
    return text + ("\n" + attached.fp.getvalue().decode() if attached is not None else "")


def bot_double(**attributes: object) -> HippoBotBase:
    """A stand-in for the bot a cog is given, with only ``attributes`` (the cogs under test read their bot's
    settings and user, nothing of its Discord client), typed as the bot the cogs take."""
    return cast(HippoBotBase, SimpleNamespace(**attributes))


def fake_bot(app: App, **settings: object) -> HippoBotBase:
    """The bot with the app's settings (``settings`` changed), not logged in (no user), no cog loaded."""
    return bot_double(settings=app.settings.model_copy(update=settings), user=None, get_cog=lambda name: None)


def cog_args(app: App, **settings: object) -> tuple[HippoBotBase, Services]:
    """A cog's constructor arguments without a client: a fake bot and the services the real bot builds."""
    bot = fake_bot(app, **settings)
    return bot, Services.of(app)


async def talk(
    app: App, user_id: int, text: str, *, scope: str = str(GUILD), channel: str = "42", external_id: str | None = None
) -> None:
    reply = await app.brain.respond(
        IncomingTurn(
            scope,
            "discord",
            channel,
            str(user_id),
            f"user{user_id}",
            text,
            external_id=external_id or f"m{user_id}-{abs(hash(text))}",
        )
    )
    await reply.complete()


@pytest.fixture
async def two_speakers(app: App) -> App:
    await talk(app, 111, "I am allergic to peanuts")
    await talk(app, 222, "I play the trumpet")
    await app.brain.drain()
    return app


async def test_forget_me_asks_first_then_removes_only_that_user(two_speakers: App) -> None:
    app = two_speakers
    cog = AdminCog(*cog_args(app))
    ask = interaction(member(111))
    await run_command(cog, cog.forget_me, ask)
    view = ask.response.send_message.call_args.kwargs["view"]
    assert ask.response.send_message.call_args.kwargs["ephemeral"] is True
    pool = app.db.pool
    assert await pool.fetchval("SELECT count(*) FROM messages WHERE author_id = '111'") == 1, (
        "nothing before confirming"
    )
    intruder = interaction(member(222))
    await view.confirm.callback(intruder)
    assert await pool.fetchval("SELECT count(*) FROM messages WHERE author_id = '111'") == 1, (
        "only the asker can confirm"
    )
    confirm = interaction(member(111))
    await view.confirm.callback(confirm)
    # "I am allergic to peanuts": is allergic, and is allergic to peanut
    assert "forgot 2 message(s), 1 episode(s), 2 fact(s)" in confirm.edit_original_response.call_args.kwargs["content"]
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE author_id = '111'") == 0
    assert await pool.fetchval("SELECT count(*) FROM messages WHERE author_id = '222'") == 1
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE author_id = '222'") == 1


async def test_config_show_never_prints_secrets(app: App) -> None:
    settings = app.settings.model_copy(update={"discord_token": SecretStr("very-secret")})
    cog = AdminCog(bot_double(settings=settings, user=None), Services.of(app))
    i = interaction(member(2, manage=True))
    await run_command(cog, cog.config_show, i)
    assert "very-secret" not in said(i) and "********" in said(i)


async def test_whatdoyouknow_lists_only_the_askers_memories(two_speakers: App) -> None:
    app = two_speakers
    cog = AdminCog(*cog_args(app))
    i = interaction(member(111))
    await run_command(cog, cog.whatdoyouknow, i)
    assert "peanuts" in said(i) and "trumpet" not in said(i)


async def test_whatdoyouknow_shows_a_restricted_channels_memories_only_there(app: App) -> None:
    reply = await app.brain.respond(
        IncomingTurn(
            str(GUILD),
            "discord",
            "77",
            "111",
            "user111",
            "my salary review is on the ninth",
            external_id="m-77",
            visible_in="77",
        )
    )
    await reply.complete()
    await talk(app, 111, "I am allergic to peanuts")
    await app.brain.drain()
    cog = AdminCog(*cog_args(app))
    public = interaction(member(111))  # asked in channel 42, which everyone sees
    await run_command(cog, cog.whatdoyouknow, public)
    assert "peanuts" in said(public) and "salary" not in said(public)
    inside = interaction(member(111))
    inside.channel_id = 77
    await run_command(cog, cog.whatdoyouknow, inside)
    assert "salary" in said(inside) and "peanuts" in said(inside)


def test_answer_rules() -> None:
    base = MessageFacts(
        author_id=1,
        author_is_bot=False,
        bot_id=99,
        is_dm=False,
        mentions_bot=False,
        channel_id=10,
        parent_channel_id=None,
        thread_owner_id=None,
    )
    rules = dict(allowed_channels={20}, dream_channels={30})
    assert not should_answer(base, **rules)
    assert should_answer(replace(base, mentions_bot=True), **rules)
    assert should_answer(replace(base, is_dm=True), **rules)
    assert should_answer(replace(base, channel_id=20), **rules)
    assert should_answer(replace(base, channel_id=11, parent_channel_id=10, thread_owner_id=99), **rules)
    assert not should_answer(replace(base, mentions_bot=True, author_is_bot=True), **rules)
    assert not should_answer(replace(base, mentions_bot=True, author_id=99), **rules)
    assert not should_answer(replace(base, mentions_bot=True, channel_id=30), **rules)
    assert scope_for(5, 1) == "5" and scope_for(None, 1) == "dm:1"


def test_split_message_respects_the_limit_and_keeps_every_word() -> None:
    text = "\n".join("line %d " % i + "x" * 50 for i in range(200))
    pieces = split_message(text)
    assert all(len(p) <= 2000 for p in pieces) and len(pieces) > 1
    assert "".join(pieces).replace("\n", "") == text.replace("\n", "")
    assert split_message("") == [""]


def test_message_links() -> None:
    link = parse_message_link("see https://discord.com/channels/1/2/3 please")
    assert link is not None and (link.guild_id, link.channel_id, link.message_id) == (1, 2, 3)
    dm = parse_message_link("https://discord.com/channels/@me/2/3")
    assert dm is not None and dm.guild_id is None
    assert parse_message_link("not a link") is None


class FakePost:
    def __init__(self, content: str, log: list[str]) -> None:
        self.content, self.log = content, log

    async def edit(self, *, content: str) -> None:
        self.content = content
        self.log.append(content)


async def test_streaming_edits_at_most_once_per_interval() -> None:
    now = [0.0]
    edits: list[str] = []
    posts: list[FakePost] = []

    async def send(content: str) -> FakePost:
        posts.append(FakePost(content, edits))
        return posts[-1]

    async def deltas():  # 40 words over 4 simulated seconds
        for i in range(40):
            now[0] += 0.1
            yield f"w{i} "

    stream = StreamingReply(send, interval=1.0, clock=lambda: now[0])
    await stream.run(deltas())
    assert len(posts) == 1 and posts[0].content == " ".join(f"w{i}" for i in range(40))
    assert 3 <= stream.edits <= 5, "about one edit per simulated second, plus the final one"


class FakeAttachment:
    def __init__(self, filename: str, data: bytes, content_type: str | None) -> None:
        self.id, self.filename, self.content_type, self._data = 1, filename, content_type, data

    async def read(self) -> bytes:
        return self._data


async def test_text_attachments_are_read_up_to_the_limit() -> None:
    text = await read_text_attachments(
        [
            FakeAttachment("notes.txt", b"hello world" * 10, "text/plain"),
            FakeAttachment("cat.png", b"\x89PNG", "image/png"),
            FakeAttachment("code.py", b"print(1)", None),
        ],
        limit=60,
    )
    assert text.startswith("[notes.txt]\n") and "PNG" not in text
    assert len(text) <= 60 and text.endswith("[… cut to fit]")


async def test_a_big_attachment_is_cut_so_the_message_is_answered_not_refused(app: App) -> None:
    """A 30,000-character log attached to a short question must not make the whole message too long."""
    from bot.discord.chat import attachment_room, with_attachments

    question = "why does this crash?"
    settings = app.settings
    room = attachment_room(
        question, max_attachment_chars=settings.max_attachment_chars, max_message_chars=settings.max_message_chars
    )
    attached = await read_text_attachments([FakeAttachment("crash.log", b"x" * 30000, "text/plain")], room)
    text = with_attachments(question, attached)
    assert len(text) <= settings.max_message_chars
    assert app.brain.validate(text).startswith(question)  # no InvalidInput


def test_examples_from_another_server_are_not_posted() -> None:
    from bot.discord.dream import proposal_content
    from dream.governance import Proposal

    now = datetime.now(UTC)
    p = Proposal(
        1,
        "new_archetype",
        "pending",
        "t",
        {
            "name": "x_y",
            "description": "d",
            "examples": ["secret words"],
            "context_turns": 5,
            "context_vectors": 5,
            "similarity_threshold": 0.7,
            "triple_depth": 1,
        },
        "r",
        {"scope": "111", "messages": []},
        now,
        now,
        None,
        None,
        None,
    )
    assert "secret words" in proposal_content(p, 111)
    hidden = proposal_content(p, 222)
    assert "secret words" not in hidden and "from another server" in hidden


def test_a_post_cut_to_discords_limit_keeps_its_decision_and_how_to_vote() -> None:
    from bot.discord.dream import proposal_content
    from dream.governance import Proposal

    now = datetime.now(UTC)
    payload = {
        "name": "x_y",
        "description": "d",
        "examples": ["an example"],
        "context_turns": 5,
        "context_vectors": 5,
        "similarity_threshold": 0.7,
        "triple_depth": 1,
    }
    long_rationale = "\n".join(f"- reason {i}: " + "words " * 20 for i in range(40))
    pending = Proposal(
        1,
        "new_archetype",
        "pending",
        "t",
        payload,
        long_rationale,
        {"scope": "111", "messages": []},
        now,
        now,
        None,
        None,
        None,
    )
    decided = Proposal(
        1,
        "new_archetype",
        "applied",
        "t",
        payload,
        long_rationale,
        {"scope": "111", "messages": []},
        now,
        now,
        now,
        "mod",
        None,
    )
    for p, end in ((pending, "to discuss."), (decided, "applied by mod")):
        text = proposal_content(p, 111)
        assert len(text) <= 2000 and "…" in text
        assert end in text.splitlines()[-1] or end in text.splitlines()[-2], text[-200:]


async def test_run_with_a_token_discord_refuses_says_what_to_fix(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.discord import client as client_module

    async def open_app(settings, **kw):
        return app

    async def refuse(self, token, **kw):
        raise discord.LoginFailure("Improper token has been passed.")

    monkeypatch.setattr(client_module.App, "open", open_app)
    monkeypatch.setattr(client_module.HippoBot, "start", refuse)
    # The last run died after storing a message and before absorbing it: this start absorbs it first.
    await app.brain.receive(
        IncomingTurn(
            scope=str(GUILD),
            source="discord",
            channel_id="5",
            author_id="9",
            author_name="Flo",
            text="my bike is a green Brompton",
            external_id="4242",
        )
    )
    assert await app.conversations.count_unabsorbed() == 1
    absorbed: list[int] = []
    backlog = app.absorb_backlog

    async def spy(**kw):
        absorbed.append(await backlog(**kw))
        return absorbed[-1]

    monkeypatch.setattr(app, "absorb_backlog", spy)
    settings = app.settings.model_copy(update={"discord_token": SecretStr("not-a-token")})
    with pytest.raises(client_module.DiscordSetupError, match="Discord refused the token"):
        await client_module.run_discord(settings)
    assert app.closed, "the app (and the embedded database) is closed on the way out"
    assert absorbed == [1]


def test_visibility_follows_everyones_view_and_threads_follow_their_parent() -> None:
    from bot.discord.rules import Visibility, visibility_for

    assert visibility_for(is_dm=False, channel_id=10, parent_channel_id=None, everyone_can_view=True) == Visibility(
        None, None
    )
    assert visibility_for(is_dm=False, channel_id=10, parent_channel_id=None, everyone_can_view=False) == Visibility(
        "10", None
    )
    assert visibility_for(is_dm=False, channel_id=11, parent_channel_id=10, everyone_can_view=True) == Visibility(
        None, "10"
    )
    assert visibility_for(is_dm=False, channel_id=11, parent_channel_id=10, everyone_can_view=False) == Visibility(
        "10", "10"
    )
    assert visibility_for(is_dm=True, channel_id=12, parent_channel_id=None, everyone_can_view=False) == Visibility(
        None, None
    )


OTHER = 777  # another server the bot is in


async def propose(app: App, scope: str, name: str) -> int:
    p = await app.governance.propose(
        "new_archetype",
        name,
        {
            "name": name,
            "description": "d",
            "examples": ["x"] * 5,
            "context_turns": 5,
            "context_vectors": 5,
            "similarity_threshold": 0.7,
            "triple_depth": 1,
        },
        "r",
        {"messages": []},
        centroid=None,
        now=datetime.now(UTC),
        scope=scope,
    )
    return p.id


async def test_memory_stats_show_only_this_server(app: App) -> None:
    await talk(app, 111, "hello from here")
    for text in ("one", "two", "three"):
        await talk(app, 222, f"elsewhere {text}", scope=str(OTHER))
    await app.brain.drain()
    await propose(app, str(OTHER), "their_idea")
    cog = AdminCog(*cog_args(app))
    i = interaction(member(2, manage=True))
    await run_command(cog, cog.memory_stats, i)
    assert "messages: 2" in said(i) and "people: 1" in said(i) and "pending proposals: 0" in said(i)
    # every layer's own figures, this server's only (the other server's three replies are not moments here)
    assert "graph edges: " in said(i) and "resonance: moments: 1 " in said(i) and "spatial gate attempts" in said(i)


async def test_the_owners_overview_counts_each_scopes_pending_proposals(app: App) -> None:
    await talk(app, 111, "hello from here")
    await talk(app, 222, "elsewhere", scope=str(OTHER))
    await app.brain.drain()
    await propose(app, str(OTHER), "their_idea")
    await propose(app, str(OTHER), "their_other_idea")
    rows = {r.scope: r.pending_proposals for r in await Services.of(app).guild_view.all_scopes()}
    assert rows == {str(GUILD): 0, str(OTHER): 2}


async def test_dream_status_shows_this_servers_runs_and_the_nightly_ones_only(app: App) -> None:
    pool = app.db.pool
    ids = {}
    for scope in (str(GUILD), str(OTHER), None):
        ids[scope] = await pool.fetchval(
            "INSERT INTO dream_runs (trigger, started_at, status, scope) VALUES ('manual', now(), 'ok', $1) RETURNING id",
            scope,
        )
    await propose(app, str(OTHER), "their_idea")
    await propose(app, str(GUILD), "our_idea")
    cog = AdminCog(*cog_args(app))
    i = interaction(member(2, manage=True))
    await run_command(cog, cog.dream_status, i)
    lines = said(i).splitlines()
    assert any(line.startswith(f"#{ids[str(GUILD)]} ") for line in lines)
    assert any(line.startswith(f"#{ids[None]} ") for line in lines)
    assert not any(line.startswith(f"#{ids[str(OTHER)]} ") for line in lines)
    assert "pending proposals: 1" in said(i)


async def test_a_cogs_now_is_the_apps_clock(app: App) -> None:
    """The cogs take "now" from the clock the app injects (Services.clock), not the wall clock: a month on
    that clock, the proposal made today has expired when /dream status counts the pending ones."""
    await propose(app, str(GUILD), "our_idea")
    bot, services = cog_args(app)
    later = SimulatedClock(datetime.now(UTC) + timedelta(days=30))
    cog = AdminCog(bot, replace(services, clock=later))
    i = interaction(member(2, manage=True))
    await run_command(cog, cog.dream_status, i)
    assert "pending proposals: 0" in said(i)
    [(status, decided_at)] = await app.db.pool.fetch("SELECT status, decided_at FROM proposals")
    assert status == "expired" and decided_at == later.now()


async def test_dream_run_dreams_only_this_server(app: App) -> None:
    cog = AdminCog(*cog_args(app))
    i = interaction(member(2, manage=True))
    await run_command(cog, cog.dream_run, i)
    assert i.response.defer.await_count == 1
    assert await app.db.pool.fetchval("SELECT scope FROM dream_runs") == str(GUILD)


async def test_an_admin_command_posts_the_outbox_through_the_shared_posting_not_another_cog(app: App) -> None:
    """Issue 31.1: AdminCog posts what its commands queue through ``Services.posting`` (the client's, shared with
    the DreamCog), never by looking the DreamCog up: its bot here has no ``get_cog`` at all."""
    pid = await propose(app, str(GUILD), "tea_talk")
    posted: list[int] = []

    class Router:
        async def routable(self, scopes: list[str | None]) -> list[str | None]:
            return scopes

        async def post_proposal(self, proposal: Proposal) -> str | None:
            posted.append(proposal.id)
            return "ref-1"

    services = Services.of(app)
    services = replace(services, posting=DreamPosting(services.outbox, Router(), app.clock))
    bot = bot_double(settings=app.settings, user=None)
    cog = AdminCog(bot, services)
    i = interaction(member(2, manage=True))
    await run_command(cog, cog.dream_channel_clear, i)
    assert posted == [pid]


async def test_config_show_names_only_this_servers_channels(app: App) -> None:
    cog = AdminCog(*cog_args(app, discord_allowed_channels=[42, 9191], dream_channel_id=9292))
    i = interaction(member(2, manage=True), channels=(42, 43))
    await run_command(cog, cog.config_show, i)
    assert "42" in said(i) and "9191" not in said(i) and "9292" not in said(i)
    assert str(app.settings.data_dir) not in said(i)


async def test_archetype_disable_is_this_servers_override_with_who_did_it(app: App) -> None:
    cog = AdminCog(*cog_args(app))
    i = interaction(member(2, manage=True))
    await run_command(cog, cog.archetype_disable, i, "technical_debugging")
    assert "disabled in this server" in said(i)
    store = app.archetype_store
    here = {a.name: a for a in await store.list_archetypes(scope=str(GUILD))}
    there = {a.name: a for a in await store.list_archetypes(scope=str(OTHER))}
    assert not here["technical_debugging"].active and here["technical_debugging"].override_by == "2"
    assert there["technical_debugging"].active, "another server still routes with it"
    assert "technical_debugging" in [a.name for a in app.router.archetypes_in(str(OTHER))]
    assert "technical_debugging" not in [a.name for a in app.router.archetypes_in(str(GUILD))]
    listed = interaction(member(2, manage=True))
    await run_command(cog, cog.archetype_list, listed)
    assert any(
        "technical_debugging" in line and "off" in line and "switched here by 2" in line
        for line in said(listed).splitlines()
    )
    unknown = interaction(member(2, manage=True))
    await run_command(cog, cog.archetype_enable, unknown, "no_such_thing")
    assert said(unknown).startswith("⚠️")


async def test_admin_and_votes_use_one_approver_rule(app: App) -> None:
    from dream.governance import ApproverPolicy

    app.governance.policy = ApproverPolicy(frozenset({"council"}))
    cog = AdminCog(*cog_args(app))
    old_role = interaction(member(3, roles=("hippobot-approver",)))
    await run_command(cog, cog.memory_stats, old_role)
    assert "needs Manage Server or the approver role" in said(old_role)
    council = interaction(member(4, roles=("council",)))
    await run_command(cog, cog.memory_stats, council)
    assert "messages: 0" in said(council)


async def test_a_vote_button_defers_before_the_vote(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    pid = await propose(app, str(GUILD), "tea_talk")
    order: list[str] = []
    vote = app.governance.vote

    async def recording_vote(*args, **kwargs):
        order.append("vote")
        return await vote(*args, **kwargs)

    monkeypatch.setattr(app.governance, "vote", recording_vote)
    cog = DreamCog(*cog_args(app))
    client = SimpleNamespace(dream_cog=cog)  # the bot's DreamCog, as DreamCog.cog_load sets it
    i = interaction(member(3, roles=("hippobot-approver",)), client)
    i.response.defer.side_effect = lambda **kw: order.append("defer")
    await ProposalButton("approve", pid).callback(i)
    assert order == ["defer", "vote"]
    assert i.response.defer.call_args.kwargs["ephemeral"] is True
    assert f"Proposal #{pid} applied" in i.followup.send.call_args.args[0]
    assert not i.response.send_message.called


@pytest.mark.parametrize(
    "client", [SimpleNamespace(dream_cog=None), SimpleNamespace()], ids=["dream-cog-unloaded", "not-the-bot"]
)
async def test_a_vote_button_without_a_dream_cog_says_the_dream_channel_is_not_running(
    app: App, client: SimpleNamespace
) -> None:
    """A bot whose DreamCog is not loaded (or a client that is not the bot) has no one to vote through: the
    button says so, and nothing is voted."""
    pid = await propose(app, str(GUILD), "tea_talk")
    i = interaction(member(3, roles=("hippobot-approver",)), client)
    await ProposalButton("approve", pid).callback(i)
    i.response.send_message.assert_awaited_once_with("The dream channel is not running.", ephemeral=True)
    assert not i.response.defer.called
    assert (await app.governance.get(pid)).status == PENDING


async def test_forget_me_answers_before_forgetting(two_speakers: App, monkeypatch: pytest.MonkeyPatch) -> None:
    app = two_speakers
    order: list[str] = []
    forget_author = app.provenance.forget_author

    async def recording(*args, **kwargs):
        order.append("forget")
        return await forget_author(*args, **kwargs)

    monkeypatch.setattr(app.provenance, "forget_author", recording)
    cog = AdminCog(*cog_args(app))
    ask = interaction(member(111))
    await run_command(cog, cog.forget_me, ask)
    confirm = interaction(member(111))
    confirm.response.edit_message.side_effect = lambda **kw: order.append("answer")
    await ask.response.send_message.call_args.kwargs["view"].confirm.callback(confirm)
    assert order == ["answer", "forget"]


async def test_memory_recall_links_its_sources(app: App) -> None:
    await talk(app, 111, "my cat Miso loves tuna", external_id="987654321")
    await app.brain.drain()
    cog = AdminCog(*cog_args(app))
    i = interaction(member(2, manage=True))
    await run_command(cog, cog.memory_recall, i, "what does Miso eat?")
    assert f"<https://discord.com/channels/{GUILD}/42/987654321>" in said(i)


def test_source_labels() -> None:
    from bot.discord.rules import source_label

    assert source_label("discord", "3", "2", 1) == "<https://discord.com/channels/1/2/3>"
    assert source_label("discord", "3", "2", None) == "<https://discord.com/channels/@me/2/3>"
    assert source_label("import", "msg-17", "general", 1) == "import msg-17"


async def test_dream_adapter_status_and_rollback_are_this_servers(app: App, tmp_path: Path) -> None:
    from datetime import timedelta

    scope = scope_for(GUILD, 1)
    path = tmp_path / "adapter"
    path.mkdir()
    pool = app.db.pool
    first = await pool.fetchval(
        """INSERT INTO adapters (scope, status, path, base_model, created_at) VALUES ($1, 'retired', $2, 'x', $3)
           RETURNING id""",
        scope,
        str(path),
        datetime.now(UTC) - timedelta(days=1),
    )
    second_path = tmp_path / "adapter2"
    second_path.mkdir()
    second = await pool.fetchval(
        """INSERT INTO adapters (scope, status, path, base_model, created_at, replaced_id)
           VALUES ($1, 'active', $2, 'x', $3, $4) RETURNING id""",
        scope,
        str(second_path),
        datetime.now(UTC),
        first,
    )
    await pool.execute(
        "INSERT INTO adapters (scope, status, path, base_model, created_at) VALUES ('999', 'active', $1, 'x', now())",
        str(tmp_path),
    )
    cog = AdminCog(*cog_args(app))
    nobody = interaction(member(1))
    await run_command(cog, cog.adapter_rollback, nobody)
    assert "needs Manage Server" in said(nobody)
    manager = interaction(member(2, manage=True))
    await run_command(cog, cog.adapter_status, manager)
    assert f"in use: adapter #{second}" in said(manager)
    manager = interaction(member(2, manage=True))
    await run_command(cog, cog.adapter_rollback, manager)
    assert f"Adapter #{second} rolled back" in said(manager) and f"adapter #{first}." in said(manager)
    assert not second_path.exists()
    assert await pool.fetchval("SELECT status FROM adapters WHERE scope = '999'") == "active", "another server's"


async def test_memory_pin_pins_what_each_layer_holds_from_the_message(app: App) -> None:
    await talk(app, 111, "My sister Lena lives in Berlin.", external_id="555")
    await app.brain.drain()
    cog = AdminCog(*cog_args(app))
    i = interaction(member(111, manage=True))
    await run_command(cog, cog.memory_pin, i, f"https://discord.com/channels/{GUILD}/42/555")
    assert said(i).startswith("Pinned (") and "episodes 1" in said(i) and "facts" in said(i), said(i)
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes WHERE pinned") == 1
    assert await app.db.pool.fetchval("SELECT count(*) FROM kg_edges WHERE pinned") >= 1
    other = interaction(member(111, manage=True))
    await run_command(cog, cog.memory_pin, other, f"https://discord.com/channels/{GUILD + 1}/42/555")
    assert "not a link to a message in this server" in said(other)
