"""What the SimCord tests share: the bot `hippobot run` starts, on the test app, and a handle on the simulation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TypeVar

import asyncpg
import discord
from discord.ext import commands
import pytest
import simcord

from bot.app import App
from bot.discord.client import HippoBotBase, SingleShardHippoBot
from bot.discord.dream import DreamCog
from bot.llm import Generation

CogT = TypeVar("CogT", bound=commands.Cog)


def hippobot_for(app: App) -> SingleShardHippoBot:
    """The bot `hippobot run` starts (its cogs, its scheduler), on the test app: real database, scripted LLM;
    edits streamed quickly, no rate limit (tests that need one set it)."""
    return SingleShardHippoBot(
        app, app.settings.model_copy(update={"discord_edit_interval": 0.2, "discord_rate_limit": 0})
    )


def cog_of(bot: HippoBotBase, kind: type[CogT]) -> CogT:
    """The bot's loaded cog of class ``kind`` (discord.py names a cog after its class; ``get_cog`` types it as
    any cog, or None when none of that name is loaded)."""
    cog = bot.get_cog(kind.__name__)
    assert isinstance(cog, kind), f"the bot's {kind.__name__} is {cog!r}"
    return cog


def dream_cog_of(bot: HippoBotBase) -> DreamCog:
    """The bot's DreamCog: the one it votes through (``HippoBotBase.dream_cog``, set while the cog is loaded)."""
    assert bot.dream_cog is not None, "the DreamCog is not loaded"
    return bot.dream_cog


def bot_member(guild: simcord.GuildHandle) -> discord.Member:
    """The bot as a member of ``guild`` (SimCord's ``guild.me``: None only before the bot has the guild cached)."""
    me = guild.me
    assert me is not None, "the bot has not seen this guild"
    return me


@dataclass
class SimBase:
    env: simcord.Env
    bot: HippoBotBase  # the unsharded bot SimCord runs, or a sharded one (test_simcord_shards)
    app: App

    @property
    def pool(self) -> asyncpg.Pool:
        return self.app.db.pool

    @property
    def me(self) -> discord.ClientUser:
        """The bot's own user (discord.py's ``bot.user``: None only before it has logged in)."""
        assert self.bot.user is not None, "the bot has not logged in"
        return self.bot.user

    async def settle(self) -> None:
        """Every queued memory write done, and whatever the bot does after it."""
        await self.env.settle(timeout=60)
        await self.app.brain.drain()
        await self.env.settle(timeout=60)

    def bot_messages(self, channel: simcord.ChannelHandle) -> list[discord.Message]:
        return [m for m in channel.history() if m.author.id == self.me.id]


def said(result: simcord.InteractionResult) -> str:
    """What a slash command or button answered (its response, else its last follow-up: a deferred reply's)."""
    if result.followups:
        return result.followups[-1].content
    return result.response.content if result.response is not None else ""


def buttons(message: discord.Message) -> list[discord.Button]:
    """The buttons under a message, as Discord sent them back (inside its action rows)."""
    return [c for row in message.components for c in getattr(row, "children", []) if isinstance(c, discord.Button)]


class HeldGeneration(Generation):
    """A model that writes ``words`` and then keeps thinking until it is cancelled. The wait is declared to
    SimCord as external input, so a member's message returns while its reply is still being written."""

    def __init__(self, env: simcord.Env, words: list[str]) -> None:
        super().__init__(asyncio.get_running_loop())
        self.env, self.words = env, words

    def __aiter__(self) -> AsyncIterator[str]:
        return self._held()

    async def _held(self) -> AsyncIterator[str]:
        for word in self.words:
            self.text += word
            yield word
        await self.env.external_wait(asyncio.Event().wait(), reason="the model is still writing")


class NoTyping:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


def without_typing(monkeypatch: pytest.MonkeyPatch) -> None:
    """discord.py's typing indicator re-sends every 5 s from a task SimCord's settling never counts as idle, so
    with a reply held open every action would wait out the settle timeout: no typing indicator."""
    monkeypatch.setattr(discord.abc.Messageable, "typing", lambda self: NoTyping())
