"""The Discord front: the bot, its cogs, and the dream channel."""

from bot.discord.client import HippoBot, SingleShardHippoBot, run_discord

__all__ = ["HippoBot", "SingleShardHippoBot", "run_discord"]
