"""What the SimCord tests share: the bot `hippobot run` starts, on the test app, and a handle on the simulation."""

from __future__ import annotations

from dataclasses import dataclass

import discord
import simcord

from bot.app import App
from bot.discord.client import SingleShardHippoBot


def hippobot_for(app: App) -> SingleShardHippoBot:
    """The bot `hippobot run` starts (its cogs, its scheduler), on the test app: real database, scripted LLM;
    edits streamed quickly, no rate limit (tests that need one set it)."""
    return SingleShardHippoBot(app, app.settings.model_copy(update={"discord_edit_interval": 0.2,
                                                                    "discord_rate_limit": 0}))


@dataclass
class SimBase:
    env: simcord.Env
    bot: SingleShardHippoBot
    app: App

    @property
    def pool(self):  # type: ignore[no-untyped-def]
        return self.app.db.pool

    async def settle(self) -> None:
        """Every queued memory write done, and whatever the bot does after it."""
        await self.env.settle(timeout=60)
        await self.app.brain.drain()
        await self.env.settle(timeout=60)

    def bot_messages(self, channel: simcord.ChannelHandle) -> list[discord.Message]:
        return [m for m in channel.history() if m.author.id == self.bot.user.id]
