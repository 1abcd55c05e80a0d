"""The reactions cog: what people do with the bot's replies teaches their moments' quality.

A reaction (added or taken back) and a person replying directly to a message
are handed to every memory layer as a ``Signal`` (memory/layers/base.py); the
cog names no layer. The resonance layer takes a reaction on one of the bot's
replies (👍 ❤️ 😂 up, 👎 down) or a reply to it as its moment's quality; the
places layer a ✅ on a person's message as its conversation resolved; the
macros layer the asker's ✅ or ❌ on a reply that suggested procedures as a
success or failure of those macros (taking it back takes it back). A deleted reply needs nothing here: the
chat cog forgets the message, and the layer's ``forgetting`` marks its
moment down. Raw events, so replies posted before a restart count; the
bot's own reactions and other bots are ignored. Each event touches only the
scope it happened in.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import discord
from discord.ext import commands

from bot.discord.rules import scope_for
from memory.layers.base import Signal

if TYPE_CHECKING:
    from bot.discord.client import HippoBotBase
    from bot.discord.services import Services

log = logging.getLogger(__name__)

RESOLVED = frozenset({"✅", "☑️", "✔️"})  # a person's question marked solved; a suggestion that worked
FAILED = frozenset({"❌", "✖️", "🚫"})  # a suggestion that did not work


class ReactionsCog(commands.Cog):
    def __init__(self, bot: HippoBotBase, services: Services) -> None:
        self.bot = bot
        self.services = services

    def _is_me(self, user_id: int) -> bool:
        me = self.bot.user
        return me is not None and me.id == user_id

    @commands.Cog.listener()
    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        await self._reaction(payload, added=True)

    @commands.Cog.listener()
    async def on_raw_reaction_remove(self, payload: discord.RawReactionActionEvent) -> None:
        await self._reaction(payload, added=False)

    async def _reaction(self, payload: Any, *, added: bool) -> None:
        member = getattr(payload, "member", None)
        if self._is_me(payload.user_id) or (member is not None and member.bot):
            return
        emoji = str(payload.emoji)
        verdict = True if emoji in RESOLVED else False if emoji in FAILED else None
        scope = scope_for(payload.guild_id, payload.user_id)
        message = None
        if verdict is not None:  # a mark is about the message itself: look it up (resonance finds its reply)
            try:
                stored = await self.services.conversations.find_transport(
                    "discord", str(payload.channel_id), str(payload.message_id)
                )
            except Exception:  # a lost reaction must never disturb the bot
                log.exception("%s on message %s not recorded", emoji, payload.message_id)
                return
            # unknown here, or another server naming this channel and message: no message to act on
            message = stored if stored is not None and stored.scope == scope else None
        await self._signal(
            Signal(
                "reaction",
                scope,
                "discord",
                str(payload.channel_id),
                str(payload.message_id),
                str(payload.user_id),
                self.services.clock.now(),
                message=message,
                emoji=emoji,
                added=added,
                verdict=verdict,
            )
        )

    async def _signal(self, signal: Signal) -> None:
        """Every memory layer learns what it can from it; one that fails is logged and the rest still learn."""
        for layer in self.services.brain.layers:
            try:
                await layer.signal(signal)
            except Exception:  # a lost reaction must never disturb the bot
                log.exception(
                    "memory layer %s could not take the %s on message %s", layer.name, signal.kind, signal.external_id
                )

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        ref = message.reference
        if ref is None or ref.message_id is None or message.author.bot:
            return
        guild_id = message.guild.id if message.guild else None
        await self._signal(
            Signal(
                "reply",
                scope_for(guild_id, message.author.id),
                "discord",
                str(ref.channel_id or message.channel.id),
                str(ref.message_id),
                str(message.author.id),
                self.services.clock.now(),
            )
        )
