"""What the bot writes carries no bidirectional overrides (issue 32, item 10); an allowed channel's threads are
allowed too (item 14)."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from unittest.mock import AsyncMock, MagicMock

import discord
import pytest
import simcord

from bot.app import App
from bot.console import Console, ConsoleIdentity
from bot.discord.common import reply
from bot.discord.client import SingleShardHippoBot
from bot.discord.dream import proposal_content
from bot.discord.rules import MessageFacts, should_answer
from bot.discord.sources import ForgetSourceButton, sources_text, sources_view
from bot.grounding import SourceLine
from dream.cycle import StepReport
from dream.digest import digest
from memory.fields import display_text
from memory.sources import SourceRef
from tests.fakes import ScriptedLLM
from tests.simcord_support import SimBase, hippobot_for

OVERRIDES = "\u202a\u202b\u202c\u202d\u202e"  # embeddings, overrides, pop
ISOLATES = "\u2066\u2067\u2068\u2069"
BIDI = set(OVERRIDES + ISOLATES)
SPOOF = "invoice\u202efdp.exe"  # reads "invoiceexe.pdf" where it is shown
NOW = datetime(2026, 10, 1, tzinfo=UTC)


def bidi_in(text: str) -> set[str]:
    return BIDI & set(text)


@pytest.fixture
def simcord_bot(app: App) -> SingleShardHippoBot:
    return hippobot_for(app)


@pytest.fixture
async def sim(simcord_env: simcord.Env, simcord_bot: SingleShardHippoBot, app: App) -> AsyncIterator[SimBase]:
    """The bot `hippobot run` starts, on SimCord (used by the Discord tests below only)."""
    s = SimBase(simcord_env, simcord_bot, app)
    yield s
    await s.settle()


# --- item 10: bidirectional controls -------------------------------------------------------------------------


def test_display_text_drops_overrides_and_isolates_and_keeps_the_rest() -> None:
    assert display_text(f"a{OVERRIDES}b{ISOLATES}c") == "abc"
    assert display_text(SPOOF) == "invoicefdp.exe"
    # marks only place neutral characters; right-to-left writers need them
    assert display_text("שלום\u200f!\u200e \u061c") == "שלום\u200f!\u200e \u061c"
    assert display_text("café 🐈\tok\nnext") == "café 🐈\tok\nnext"


async def test_the_console_shows_no_bidi_controls_and_stores_the_original(app: App, llm: ScriptedLLM) -> None:
    llm.reply = f"{OVERRIDES} sure, {SPOOF} is {ISOLATES}fine"
    out = io.StringIO()
    said = f"look at {SPOOF} please"
    console = Console(
        app.brain,
        ConsoleIdentity("ana", "console", "local"),
        io.StringIO(said + "\n"),
        out,
        io.StringIO(),
        interactive=False,
    )
    await console.run()
    shown = out.getvalue()
    assert "sure, invoicefdp.exe is fine" in shown, shown
    assert not bidi_in(shown), shown
    stored = await app.db.pool.fetchval("SELECT content FROM messages WHERE NOT is_bot")
    assert stored == said, "the person's words are kept as they were written"


@pytest.mark.simcord(settle_timeout=60)
async def test_a_discord_reply_carries_no_bidi_controls_and_the_message_is_stored_as_sent(
    sim: SimBase, llm: ScriptedLLM
) -> None:
    llm.reply = OVERRIDES
    guild = sim.env.create_guild("Hippo Hall")
    allowed = guild.create_text_channel("allowed")
    ana = guild.add_member(sim.env.create_user("ana"))
    sim.bot.settings = sim.bot.settings.model_copy(update={"discord_allowed_channels": [allowed.id]})
    said = f"what is {SPOOF}?"
    await ana.send(allowed, said)
    await sim.settle()
    history = sim.bot_messages(allowed)
    assert history, "the bot answered"
    assert all(not bidi_in(m.content) for m in history), [m.content for m in history]
    assert [m.content for m in history] == ["…"], "a reply of nothing but controls shows as empty"
    posted = [
        r.json["content"]
        for r in sim.env.http_requests
        if r.method in ("POST", "PATCH") and "/messages" in r.path and isinstance(r.json, dict) and "content" in r.json
    ]
    assert posted and not any(bidi_in(p) for p in posted), "nor did any streamed edit on the way"
    stored = await sim.pool.fetchval("SELECT content FROM messages WHERE NOT is_bot")
    assert stored == said


def test_names_under_a_reply_carry_no_bidi_controls() -> None:
    line = SourceLine(f"ana{OVERRIDES}", NOW, SourceRef(7, "123", "456", "discord"))
    text = sources_text([line], 1)
    assert "ana" in text and not bidi_in(text)
    view = sources_view([line])
    assert view is not None
    # discord.py types a View's children as items of a View and a DynamicItem as an item of any view: checked as
    # items of any view, so that a forget button is one of them
    children: list[discord.ui.Item[Any]] = list(view.children)
    buttons = [item for item in children if isinstance(item, ForgetSourceButton)]
    assert len(buttons) == len(children) == 1
    assert not any(bidi_in(button.item.label or "") for button in buttons)


async def test_slash_command_answers_carry_no_bidi_controls() -> None:
    sent: list[str] = []

    async def send_message(text: str, **_: Any) -> None:
        sent.append(text)

    interaction = MagicMock(spec=discord.Interaction)
    interaction.response = MagicMock(spec=discord.InteractionResponse)
    interaction.response.is_done.return_value = False
    interaction.response.send_message = AsyncMock(side_effect=send_message)
    await reply(interaction, f"{SPOOF}: forgotten")
    assert sent == ["invoicefdp.exe: forgotten"]


async def test_proposals_carry_no_bidi_controls(app: App) -> None:
    payload = {"name": f"pdf{OVERRIDES}talk", "description": f"about {SPOOF}", "examples": [f"is {SPOOF} safe?"]}
    proposal = await app.governance.propose(
        "new_archetype",
        f"new archetype 'pdf{ISOLATES}talk'",
        payload,
        f"- {SPOOF}",
        {"scope": "g1"},
        centroid=None,
        now=NOW,
        scope="g1",
    )
    for text in (proposal.render(), proposal_content(proposal, 1), proposal_content(proposal, None)):
        assert "pdftalk" in text and not bidi_in(text), text
    stored = await app.governance.get(proposal.id)
    assert stored.payload["examples"] == [f"is {SPOOF} safe?"], "the proposal itself is kept as made"


async def test_the_digest_carries_no_bidi_controls(app: App) -> None:
    class Channel:
        texts: list[str] = []

        async def post_proposal(self, proposal: Any) -> str | None:
            return None

        async def post_digest(self, text: str, chart: Any) -> None:
            self.texts.append(text)

    channel = Channel()
    services = replace(
        app.dream.services,
        channel=channel,
        scope="g1",
        run_id=1,
        reports={
            "archetype_analysis": StepReport(
                headline=f"proposed 'pdf{OVERRIDES}talk'", notes=[f"proposal #7: pdf{OVERRIDES}talk"]
            )
        },
    )
    await digest(services, NOW)
    assert len(channel.texts) == 1 and "proposed 'pdftalk'" in channel.texts[0], channel.texts
    assert "proposal #7: pdftalk" in channel.texts[0]
    assert not bidi_in(channel.texts[0])


# --- item 14: threads of an allowed channel ------------------------------------------------------------------

RULES: dict[str, Any] = dict(allowed_channels={20}, dream_channels={30})
BASE: dict[str, Any] = dict(
    author_id=1,
    author_is_bot=False,
    bot_id=99,
    is_dm=False,
    mentions_bot=False,
    channel_id=21,
    parent_channel_id=None,
    thread_owner_id=5,
)


def test_a_thread_of_an_allowed_channel_is_answered_unmentioned() -> None:
    assert should_answer(MessageFacts(**{**BASE, "parent_channel_id": 20}), **RULES)
    assert not should_answer(MessageFacts(**{**BASE, "parent_channel_id": 10}), **RULES), "another channel's thread"
    assert not should_answer(MessageFacts(**{**BASE, "parent_channel_id": 30}), **RULES), "the dream channel's"
    assert not should_answer(MessageFacts(**{**BASE, "parent_channel_id": 20, "author_is_bot": True}), **RULES)


@pytest.mark.simcord(settle_timeout=60)
async def test_the_bot_answers_in_an_allowed_channels_thread_without_a_mention(sim: SimBase, llm: ScriptedLLM) -> None:
    guild = sim.env.create_guild("Hippo Hall")
    general, allowed = guild.create_text_channel("general"), guild.create_text_channel("allowed")
    ana = guild.add_member(sim.env.create_user("ana"))
    ben = guild.add_member(sim.env.create_user("ben"))
    sim.bot.settings = sim.bot.settings.model_copy(update={"discord_allowed_channels": [allowed.id]})
    # threads ben opened (SimCord's backend sends THREAD_CREATE)
    inside, outside = (
        simcord.ChannelHandle(sim.env, guild, sim.env.backend.create_thread(parent.id, "a question", ben.id))
        for parent in (allowed, general)
    )
    await sim.settle()
    await ana.send(outside, "in the other thread, unaddressed")
    await sim.settle()
    assert sim.bot_messages(outside) == [], "a thread of a channel that is not allowed needs a mention"
    await ana.send(inside, "does this work in a thread?")
    await sim.settle()
    assert [m.content for m in sim.bot_messages(inside)] == [llm.reply]
    row = await sim.pool.fetchrow("SELECT channel_id, visible_in FROM messages WHERE NOT is_bot")
    assert row["channel_id"] == str(inside.id)
