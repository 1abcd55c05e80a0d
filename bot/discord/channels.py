"""/channel mode|memory|list: how the bot takes part in each channel of a server (admins only).

The mode says when it answers (``mention``: when mentioned or replied to, the default; ``chat``: every
message; ``quiet``: never); memory says whether it also remembers what it does not answer. Both are this
server's, stored with who set them (``ParticipationStore``); a thread follows its parent. Turning memory on
is announced in the channel first: if the bot cannot post there, memory stays off.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord.common import is_admin, reply, visibility_of
from memory.participation import ChannelSetting
from bot.discord.rules import channel_mode
from memory.fields import display_text

if TYPE_CHECKING:
    from bot.discord.client import HippoBotBase
    from bot.discord.services import Services

log = logging.getLogger(__name__)

MODE_HELP = {
    "mention": "answers when mentioned or replied to",
    "chat": "answers every message",
    "quiet": "never answers",
}


class ChannelCog(commands.Cog):
    channel = app_commands.Group(
        name="channel", description="How the bot takes part in this server's channels", guild_only=True
    )

    def __init__(self, bot: HippoBotBase, services: Services) -> None:
        self.bot = bot
        self.services = services
        self.participation = services.participation
        self.dream_channels = services.dream_channels

    async def _dream_channels(self, guild_id: int) -> set[int]:
        """This server's dream channel and the owner's: never conversation, so they have no mode or memory."""
        own = await self.dream_channels.channel_id(str(guild_id))
        return {c for c in (own, self.bot.settings.dream_channel_id) if c is not None}

    async def _target(
        self, interaction: discord.Interaction, channel: discord.TextChannel | None
    ) -> discord.TextChannel | None:
        """The channel a command is about (default: where it runs; a thread's parent), or None after saying why
        it cannot be."""
        if not is_admin(interaction, self.services.governance.policy):
            await reply(interaction, "This command needs Manage Server or the approver role.")
            return None
        target = channel if channel is not None else interaction.channel
        if isinstance(target, discord.Thread):
            target = target.parent
        if not isinstance(target, discord.TextChannel) or target.guild.id != interaction.guild_id:
            await reply(interaction, "Name a text channel of this server (threads follow their channel).")
            return None
        if target.id in await self._dream_channels(target.guild.id):
            await reply(
                interaction, "That is the dream channel: it is never conversation, so it has no mode or memory."
            )
            return None
        return target

    @channel.command(name="mode", description="When the bot answers in a channel")
    @app_commands.describe(
        mode="mention: when mentioned or replied to (default); chat: every message; quiet: never",
        channel="The channel (default: this one)",
    )
    async def mode(
        self,
        interaction: discord.Interaction,
        mode: Literal["mention", "chat", "quiet"],
        channel: discord.TextChannel | None = None,
    ) -> None:
        target = await self._target(interaction, channel)
        if target is None:
            return
        await self.participation.set_mode(
            str(interaction.guild_id), str(target.id), mode, str(interaction.user.id), self.services.clock.now()
        )
        log.info("channel %s mode set to %s by %s", target.id, mode, interaction.user.id)
        await reply(interaction, f"{target.mention} is now `{mode}`: the bot {MODE_HELP[mode]} there.")

    @channel.command(name="memory", description="Whether the bot remembers a channel's conversation")
    @app_commands.describe(
        state="on: remember what is said there, answered or not (announced in the channel); off: only what it answers",
        channel="The channel (default: this one)",
    )
    async def memory(
        self, interaction: discord.Interaction, state: Literal["on", "off"], channel: discord.TextChannel | None = None
    ) -> None:
        target = await self._target(interaction, channel)
        if target is None:
            return
        scope, on = str(interaction.guild_id), state == "on"
        current = await self.participation.setting(scope, str(target.id))
        if current.remember == on:
            await reply(interaction, f"Memory is already {state} in {target.mention}.")
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        who = interaction.user.display_name
        if on:
            # consent starts with being told: no announcement, no remembering
            try:
                await target.send(announcement(who, restricted=visibility_of(target).visible_in is not None))
            except discord.HTTPException as exc:
                log.warning("could not announce memory in channel %s (HTTP %s)", target.id, exc.status)
                await reply(
                    interaction,
                    f"I cannot post in {target.mention}, and remembering a channel must be "
                    "announced there first. Let me send messages there, then try again. "
                    "Memory stays off.",
                )
                return
        await self.participation.set_memory(
            scope, str(target.id), on, str(interaction.user.id), self.services.clock.now()
        )
        log.info("channel %s memory %s by %s", target.id, state, interaction.user.id)
        if not on:
            try:
                await target.send(
                    f"I no longer remember this channel's conversation, only what is said to me "
                    f"(turned off by {display_text(who)}). What I remembered stays until it is "
                    "forgotten (`/forget me`, or deleting the messages)."
                )
            except discord.HTTPException:
                log.info("could not announce that memory is off in channel %s", target.id)
        await reply(interaction, f"Memory is {state} in {target.mention}" + (" (announced there)." if on else "."))

    @channel.command(name="list", description="Each channel's mode and memory at a glance")
    async def list_(self, interaction: discord.Interaction) -> None:
        if not is_admin(interaction, self.services.governance.policy) or interaction.guild is None:
            await reply(interaction, "This command needs Manage Server or the approver role.")
            return
        scope = str(interaction.guild_id)
        stored = await self.participation.settings(scope)
        settings = self.bot.settings
        guild = interaction.guild
        own = await self.dream_channels.channel_id(scope)
        lines = []
        for ch in sorted(guild.text_channels, key=lambda c: (c.position, c.id)):
            if ch.id == own or (own is None and ch.id == settings.dream_channel_id):
                lines.append(f"{ch.mention}: dream channel (never conversation)")
                continue
            if ch.id == settings.dream_channel_id:
                lines.append(f"{ch.mention}: the bot owner's dream channel (never conversation)")
                continue
            s = stored.get(str(ch.id), ChannelSetting(str(ch.id)))
            lines.append(
                f"{ch.mention}: {describe(s, allowed=ch.id in settings.discord_allowed_channels)}"
                + ("" if guild.me is None or ch.permissions_for(guild.me).read_messages else " — I cannot read it")
            )
        optouts = await self.participation.optout_count(scope)
        lines.append(
            f"{optouts} person(s) opted out of being remembered in this server."
            if optouts
            else "Nobody has opted out of being remembered in this server."
        )
        await reply(interaction, "\n".join(lines))


def describe(s: ChannelSetting, *, allowed: bool) -> str:
    """One channel's line: its mode (and where it comes from) and its memory, with who set each and when."""
    mode = channel_mode(s.mode, channel_id=0, parent_channel_id=None, allowed_channels=(0,) if allowed else ())
    if s.mode is not None:
        source = f"chosen by <@{s.mode_set_by}> {_day(s.mode_set_at)}"
    else:
        source = "HIPPOBOT_DISCORD_ALLOWED_CHANNELS" if allowed else "default"
    memory = "on" if s.remember else "off"
    if s.memory_set_by is not None:
        memory += f" (chosen by <@{s.memory_set_by}> {_day(s.memory_set_at)})"
    return f"**{mode}** ({source}), memory {memory}"


def announcement(who: str, *, restricted: bool) -> str:
    where = (
        "Memories from here are recalled only in this channel."
        if restricted
        else "Memories from here can come up anywhere in this server."
    )
    return (
        f"📝 From now on I remember this channel's conversation, not only what is said to me (turned on by "
        f"{display_text(who)}). {where} Don't want to be remembered? `/memory optout`: nothing you say in this "
        "server is stored from then on, and I offer to forget what I stored before. `/forget me` forgets "
        "everything; deleting a message forgets it."
    )


def _day(when: datetime | None) -> str:
    return f"on {when:%Y-%m-%d}" if when is not None else ""
