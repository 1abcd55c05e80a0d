"""The reactions cog: what people do with the bot's replies teaches their moments' quality.

A reaction on one of the bot's replies (👍 ❤️ 😂 up, 👎 down; taking it back
takes the signal back) and a person replying to it directly are handed to
the resonance layer (memory/layers/resonance.py), which finds the reply's
moment and recomputes its quality. A ✅ on a person's message marks
its conversation resolved for the places layer; the asker's ✅ or ❌ on a reply
that carried suggested procedures is a success or failure of those macros
(taking it back takes it back). A deleted reply needs nothing here: the
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
from memory.layers.resonance import ResonanceLayer

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

    def _layer(self) -> ResonanceLayer | None:
        layer = self.services.brain.layer(ResonanceLayer.name)
        return layer if isinstance(layer, ResonanceLayer) else None

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
        if str(payload.emoji) in RESOLVED | FAILED:
            await self._marked(payload, added)
        layer = self._layer()
        if layer is None:
            return
        try:
            quality = await layer.react(
                "discord", str(payload.channel_id), str(payload.message_id), str(payload.user_id),
                str(payload.emoji), added=added, now=self.services.clock.now(),
                scope=scope_for(payload.guild_id, payload.user_id))
        except Exception:  # a lost reaction must never disturb the bot
            log.exception("reaction on message %s not recorded", payload.message_id)
            return
        if quality is not None:
            log.info("reaction %s on reply %s: quality %.2f", "added" if added else "removed", payload.message_id,
                     quality)

    async def _marked(self, payload: Any, added: bool) -> None:
        """A ✅ / ❌ on a message of this scope. On a person's message, a ✅ is a resolution of the conversation
        there (the places layer counts it for the place and the move that led there). On the bot's reply, the
        asker's ✅ / ❌ says whether the procedures it suggested worked (the macros layer; taking the mark back
        takes that back)."""
        emoji = str(payload.emoji)
        try:
            stored = await self.services.conversations.find_transport(
                "discord", str(payload.channel_id), str(payload.message_id))
            if stored is None or stored.scope != scope_for(payload.guild_id, payload.user_id):
                return  # unknown here, or another server naming this channel and message
            if not stored.is_bot:
                resolved = getattr(self.services.brain.layer("places"), "resolved", None)
                if added and emoji in RESOLVED and resolved is not None:
                    await resolved(stored)
                return
            react = getattr(self.services.brain.layer("macros"), "reply_reaction", None)
            if react is not None:
                worked = (emoji in RESOLVED) if added else None
                if ids := await react(stored, str(payload.user_id), worked, self.services.clock.now()):
                    log.info("macros %s: %s on reply %s", ids, {True: "worked", False: "failed"}.get(worked, "undone"),
                             payload.message_id)
        except Exception:  # like any reaction: never disturbs the bot
            log.exception("%s on message %s not recorded", emoji, payload.message_id)

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        ref = message.reference
        if ref is None or ref.message_id is None or message.author.bot:
            return
        layer = self._layer()
        if layer is None:
            return
        guild_id = message.guild.id if message.guild else None
        try:
            quality = await layer.replied_to(
                "discord", str(ref.channel_id or message.channel.id), str(ref.message_id), str(message.author.id),
                now=self.services.clock.now(), scope=scope_for(guild_id, message.author.id))
        except Exception:
            log.exception("reply %s to message %s not recorded", message.id, ref.message_id)
            return
        if quality is not None:
            log.info("reply to reply %s: quality %.2f", ref.message_id, quality)
