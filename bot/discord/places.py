"""/whereto <topic> for everyone: where to ask about something here, and the procedures that worked for it.

Thin: the places and macros layers plan and rank; this cog formats. The audience is the channel's (a
restricted channel also sees its own places and procedures); in DMs, the DM scope's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord.common import reply, visible_channel
from bot.discord.rules import scope_for
from memory.errors import MemoryStoreError
from memory.layers.macros import MacrosLayer, describe
from memory.layers.places import PlacesLayer, topic_text
from memory.places.codes import channel_label, topic_of

if TYPE_CHECKING:
    from bot.discord.client import HippoBotBase
    from bot.discord.services import Services


class PlacesCog(commands.Cog):
    def __init__(self, bot: HippoBotBase, services: Services) -> None:
        self.bot = bot
        self.services = services

    @app_commands.command(name="whereto", description="Where to ask about a topic here, and what worked for it")
    @app_commands.allowed_contexts(guilds=True, dms=True, private_channels=False)
    @app_commands.describe(topic="what you want to ask about, e.g. 'docker networking'")
    async def whereto(self, interaction: discord.Interaction, topic: str) -> None:
        places = self.services.brain.layer("places")
        if not isinstance(places, PlacesLayer):  # not registered
            await reply(interaction, "The places memory is not enabled on this bot.")
            return
        scope = scope_for(interaction.guild_id, interaction.user.id)
        visible = visible_channel(interaction) if interaction.guild_id is not None else None
        try:
            topic = topic_text(topic)
        except MemoryStoreError as exc:
            await reply(interaction, f"⚠️ {exc}")
            return
        # the first question after new messages may learn the server's channel model first: more than the 3 s
        # Discord waits for an answer on a big server
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            routes = await places.where_to(
                scope, topic, channel_id=str(interaction.channel_id), visible_channel=visible, k=3
            )
            macros = self.services.brain.layer("macros")
            found = (
                await macros.suggest(scope, topic, visible_channel=visible) if isinstance(macros, MacrosLayer) else []
            )
        except MemoryStoreError as exc:
            await reply(interaction, f"⚠️ {exc}")
            return
        await reply(interaction, render(topic_of(topic), routes, found))


def render(topic: str, routes: list, macros: list) -> str:
    if not routes:
        lines = [f"I don't know yet where “{topic}” is discussed here."]
    elif routes[0].unsure:
        lines = [f"No channel here is clearly about “{topic}”; the closest:"]
    else:
        lines = [f"Where to ask about “{topic}”:"]
        lines += [
            f"{i}. {' → '.join(channel_label(p.channel_id) for p in r.places)} — {r.reason}"
            for i, r in enumerate(routes, 1)
        ]
    if macros:
        lines.append("What worked before:")
        lines += [f"• {describe(m)}" for m in macros]
    return "\n".join(lines)
