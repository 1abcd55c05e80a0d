"""/persona show|history for everyone, /persona reset for admins (a proposal, never an instant change).

Thin: the persona store reads, memory.persona.view writes the text, governance takes the reset proposal,
which the dream channel's outbox posts and approvers decide like any other. In a restricted channel the
commands show that channel's own persona when it has one; in DMs, the DM scope's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord.common import dm_or_guild, is_admin, reply, visible_channel
from bot.discord.rules import scope_for
from dream.governance import GovernanceError
from memory.persona.view import render, render_history

if TYPE_CHECKING:
    from bot.discord.client import HippoBotBase
    from bot.discord.services import Services


class PersonaCog(commands.Cog):
    persona = app_commands.Group(
        name="persona", description="The bot's personality here", allowed_contexts=dm_or_guild()
    )

    def __init__(self, bot: HippoBotBase, services: Services) -> None:
        self.bot = bot
        self.services = services
        self.store = services.persona

    def _where(self, interaction: discord.Interaction) -> tuple[str, str | None]:
        scope = scope_for(interaction.guild_id, interaction.user.id)
        return scope, (visible_channel(interaction) if interaction.guild_id is not None else None)

    @persona.command(name="show", description="The bot's self-description and strongest opinions here")
    async def show(self, interaction: discord.Interaction) -> None:
        scope, channel = self._where(interaction)
        current = await self.store.for_audience(scope, channel)
        await reply(interaction, render(current, core_identity=self.bot.settings.persona, scope=scope))

    @persona.command(name="history", description="How the bot's persona changed here, newest first")
    async def history(self, interaction: discord.Interaction) -> None:
        scope, channel = self._where(interaction)
        current = await self.store.for_audience(scope, channel)
        versions = await self.store.history(scope, current.visible_in if current else None, limit=50)
        await reply(interaction, render_history(versions))

    @persona.command(name="reset", description="Propose resetting the bot's persona here (approvers decide)")
    async def reset(self, interaction: discord.Interaction) -> None:
        governance = self.services.governance
        if interaction.guild_id is None or not is_admin(interaction, governance.policy):
            await reply(interaction, "This command needs Manage Server or the approver role, in a server.")
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        scope, channel = self._where(interaction)
        current = await self.store.for_audience(scope, channel)
        visible_in = current.visible_in if current else None
        try:
            proposal = await governance.propose(
                "persona",
                "Reset the persona" + (" of this channel" if visible_in else ""),
                {
                    "action": "reset",
                    "visible_in": visible_in,
                    "description": "Start the persona here again from its seed; its evidence log is kept but no "
                    "longer counts.",
                },
                f"Asked by {interaction.user.display_name} with /persona reset.",
                {"scope": scope, "requested_by": str(interaction.user.id)},
                centroid=None,
                now=self.services.clock.now(),
                scope=scope,
            )
        except GovernanceError as exc:
            await reply(interaction, f"⚠️ {exc}")
            return
        await reply(
            interaction,
            f"Proposal #{proposal.id} is waiting for approval in the dream channel; "
            "nothing changes until it is approved.",
        )
