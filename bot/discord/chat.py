"""The chat cog: Discord messages in, the Brain's streamed reply out; deletes and edits follow."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.brain import Busy, IncomingTurn
from bot.discord.common import is_admin, visibility_of
from bot.discord.listening import remember_unanswered
from bot.discord.ratelimit import RateLimiter, limit_notice
from bot.discord.rules import (
    MessageFacts,
    Part,
    channel_mode,
    scope_for,
    strip_mentions,
    take_part,
)
from bot.discord.sources import sources_text, sources_view
from bot.discord.streaming import DISCORD_LIMIT, StreamingReply
from bot.llm import LLMError, LLMUnavailable
from memory.errors import InvalidInput, MemoryStoreError
from memory.fields import display_text

if TYPE_CHECKING:
    from bot.discord.client import HippoBotBase
    from bot.discord.services import Services

log = logging.getLogger(__name__)

_CUT = "\n[… cut to fit]"
BUSY = "I'm busy right now — try again in a moment."
UNAVAILABLE = "⚠️ My language model is not answering right now, so I cannot reply; your message is saved and remembered."
UNAVAILABLE_UNSTORED = "⚠️ My language model is not answering right now, so I cannot reply."
# what people say to each other; system messages (joins, pins, boosts) are not conversation
_CONVERSATION = (discord.MessageType.default, discord.MessageType.reply)
TEXT_SUFFIXES = (".txt", ".md", ".py", ".json", ".jsonl", ".csv", ".log", ".yaml", ".yml", ".toml", ".ini", ".sql")


async def read_text_attachments(attachments: Sequence[Any], limit: int) -> str:
    """The text of text-like attachments, headers included, in at most ``limit`` characters."""
    parts: list[str] = []
    left = limit
    for a in attachments:
        is_text = (a.content_type or "").startswith("text/") or a.filename.lower().endswith(TEXT_SUFFIXES)
        header = f"[{a.filename}]\n"
        if not is_text or left <= len(header) + len(_CUT):
            continue
        try:
            raw = await a.read()
        except (discord.HTTPException, OSError, ValueError):
            log.warning("could not read attachment %s", a.id)
            continue
        text = raw.decode("utf-8", errors="replace")
        room = left - len(header) - (2 if parts else 0)
        if len(text) > room:
            text = text[: room - len(_CUT)] + _CUT
        parts.append(header + text)
        left -= len(parts[-1]) + (2 if len(parts) > 1 else 0)
    return "\n\n".join(parts)


def channel_name_of(channel: Any) -> str | None:
    """What to store as the channel's name: a channel's own; a thread's parent's, since a thread's title is
    written by the person who opened it, and a copy kept on everyone's messages would outlive forgetting
    them; None in a DM."""
    if isinstance(channel, discord.Thread):
        parent = channel.parent
        return getattr(parent, "name", None) if parent is not None else None
    return getattr(channel, "name", None)


def with_attachments(text: str, attached: str) -> str:
    return f"{text}\n\n{attached}".strip() if attached else text


def attachment_room(text: str, *, max_attachment_chars: int, max_message_chars: int) -> int:
    """How much attachment text fits: the message with its attachments must stay within the message limit."""
    return max(0, min(max_attachment_chars, max_message_chars - len(text) - 2))


@dataclass
class Streaming:
    """A reply being streamed: whom it answers, so ``/stop`` knows whose it is."""

    author_id: int
    reply: Any
    stream: StreamingReply[discord.Message]
    stopped_by: str | None = None


class ChatCog(commands.Cog):
    def __init__(self, bot: HippoBotBase, services: Services) -> None:
        self.bot = bot
        self.services = services
        self.participation = services.participation
        self.dream_channels = services.dream_channels
        settings = bot.settings
        self.limiter = RateLimiter(settings.discord_rate_limit, settings.discord_rate_window_s)
        self.streaming: dict[int, list[Streaming]] = {}  # channel id -> replies being streamed there

    async def _facts(self, message: discord.Message) -> MessageFacts:
        channel = message.channel
        me = self.bot.user
        return MessageFacts(
            author_id=message.author.id,
            author_is_bot=message.author.bot,
            bot_id=me.id if me else 0,
            is_dm=message.guild is None,
            mentions_bot=me is not None and me in message.mentions,
            channel_id=channel.id,
            parent_channel_id=channel.parent_id if isinstance(channel, discord.Thread) else None,
            thread_owner_id=channel.owner_id if isinstance(channel, discord.Thread) else None,
            replies_to_bot=me is not None and await replied_author(message) == me.id,
        )

    async def _part(self, facts: MessageFacts, scope: str) -> tuple[Part, Part]:
        """Answer, store, both or neither: from the channel's mode and memory (a thread: its parent's) and whether
        the author opted out of being remembered in this server. The second is what to do when the rate limit
        refuses an answer: what the channel would do with a message it does not answer."""
        if facts.is_dm:
            return take_part(facts, mode="chat", remember=False, opted_out=False, dream_channels=()), Part(False, False)
        # the server's own dream channel and the owner's: the bot never chats in either
        dream = {
            c
            for c in (await self.dream_channels.channel_id(scope), self.bot.settings.dream_channel_id)
            if c is not None
        }
        here = facts.parent_channel_id or facts.channel_id
        listening = await self.participation.lookup(scope, str(here), str(facts.author_id))
        mode = channel_mode(
            listening.setting.mode,
            channel_id=facts.channel_id,
            parent_channel_id=facts.parent_channel_id,
            allowed_channels=self.bot.settings.discord_allowed_channels,
        )
        remember, opted_out = listening.setting.remember, listening.opted_out
        return (
            take_part(facts, mode=mode, remember=remember, opted_out=opted_out, dream_channels=dream),
            take_part(facts, mode="quiet", remember=remember, opted_out=opted_out, dream_channels=dream),
        )

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if message.content.startswith(self.bot.command_prefix_text):
            return
        if message.author.bot or message.type not in _CONVERSATION:
            return  # never bots (itself included); joins, pins and the like are not conversation
        facts = await self._facts(message)
        scope = scope_for(message.guild.id if message.guild else None, message.author.id)
        part, unanswered = await self._part(facts, scope)
        if not part.answer and not part.store:
            return
        if part.answer:
            verdict = self.limiter.check(message.author.id)
            if not verdict.allowed:
                log.info("rate limit: message %s not answered", message.id)
                if verdict.notify:
                    await self._say(message, limit_notice(verdict.retry_after))
                part = unanswered
                if not part.store:
                    return
        turn = await self._turn(message)
        if not part.answer:
            try:
                await remember_unanswered(self.services.brain, turn)
            except InvalidInput:
                log.debug("unanswered message %s is empty or too long; not stored", message.id)
            return
        try:
            async with typing_if_allowed(message.channel):
                await self._answer(message, turn, store=part.store)
        except Busy:
            log.info("busy: message %s stored, not answered", message.id)
            await self._say(message, BUSY)
        except InvalidInput as exc:
            await self._say(message, f"⚠️ {exc}")
        except LLMUnavailable:
            log.warning("the language model server did not answer message %s", message.id, exc_info=True)
            await self._say(message, UNAVAILABLE if part.store else UNAVAILABLE_UNSTORED)
        except (LLMError, MemoryStoreError):
            log.exception("reply failed for message %s", message.id)
            await self._say(
                message, "⚠️ Something went wrong while answering" + ("; your message is saved." if part.store else ".")
            )

    async def _turn(self, message: discord.Message) -> IncomingTurn:
        settings = self.bot.settings
        me = self.bot.user
        text = strip_mentions(message.content, me.id if me else 0)
        if message.attachments:
            room = attachment_room(
                text, max_attachment_chars=settings.max_attachment_chars, max_message_chars=settings.max_message_chars
            )
            text = with_attachments(text, await read_text_attachments(message.attachments, room))
        seen_by = visibility_of(message.channel)
        return IncomingTurn(
            scope=scope_for(message.guild.id if message.guild else None, message.author.id),
            source="discord",
            channel_id=str(message.channel.id),
            author_id=str(message.author.id),
            author_name=message.author.display_name,
            author_username=message.author.name,
            text=text,
            external_id=str(message.id),
            created_at=message.created_at,
            visible_in=seen_by.visible_in,
            thread_parent_id=seen_by.thread_parent_id,
            channel_name=channel_name_of(message.channel),
            reply_to=replied_to_id(message),
        )

    async def _answer(self, message: discord.Message, turn: IncomingTurn, *, store: bool = True) -> None:
        """Stream the Brain's reply; if Discord refuses a send or an edit, stop generating (the turn is still absorbed).

        ``store`` False (the author opted out of being remembered here): the Brain's read-only answer, which
        stores neither the message nor the reply and sees no recent turns."""
        brain = self.services.brain
        if store:
            reply = await brain.respond(turn)
        else:
            reply = await brain.ask(
                turn.text,
                turn.scope,
                author_id=turn.author_id,
                author_name=turn.author_name,
                channel_id=turn.channel_id,
                visible_channel=turn.thread_parent_id or turn.channel_id,
            )

        async def send(content: str) -> discord.Message:
            if not stream.messages:
                return await message.reply(content, mention_author=False)
            return await message.channel.send(content)

        stream = StreamingReply(send, interval=self.bot.settings.discord_edit_interval)
        live = Streaming(message.author.id, reply, stream)
        self.streaming.setdefault(message.channel.id, []).append(live)

        def remember_id(first: Any) -> None:
            reply.external_id = str(first.id)  # the reply is stored under its Discord id and time
            reply.posted_at = first.created_at

        try:
            await stream.run(reply.__aiter__(), on_first=remember_id)
        except discord.HTTPException as exc:  # Forbidden and NotFound included
            reply.cancel()
            log.warning(
                "streaming the reply to message %s failed (HTTP %s); generation cancelled", message.id, exc.status
            )
            return
        finally:
            here = self.streaming.get(message.channel.id, [])
            if live in here:
                here.remove(live)
            if not here:
                self.streaming.pop(message.channel.id, None)
        if live.stopped_by is not None:
            await self._mark_stopped(message, stream, live.stopped_by)
            return
        await self._show_sources(message, reply, stream)

    async def _mark_stopped(self, message: discord.Message, stream: StreamingReply[discord.Message], who: str) -> None:
        note = f"\n-# ⏹ stopped by {display_text(who)}"
        try:
            if stream.messages and len(stream.last_shown) + len(note) <= DISCORD_LIMIT:
                await stream.messages[-1].edit(content=stream.last_shown + note)
            else:
                await message.channel.send(note.strip())
        except discord.HTTPException as exc:
            log.warning("could not mark the reply to message %s stopped (HTTP %s)", message.id, exc.status)

    @app_commands.command(name="stop", description="Stop the reply the bot is writing here")
    @app_commands.allowed_contexts(guilds=True, dms=True, private_channels=False)
    async def stop(self, interaction: discord.Interaction) -> None:
        """The person a reply answers may stop it, and so may an admin (Manage Server or the approver role)."""
        live = self.streaming.get(interaction.channel_id or 0, [])
        admin = is_admin(interaction, self.services.governance.policy)
        mine = [s for s in live if s.stopped_by is None and (admin or s.author_id == interaction.user.id)]
        if not mine:
            text = (
                "I'm not writing a reply to you here right now."
                if live and not admin
                else "I'm not writing anything here right now."
            )
            await interaction.response.send_message(text, ephemeral=True)
            return
        for s in mine:
            s.stopped_by = interaction.user.display_name
            s.stream.stop()
            s.reply.cancel()
        await interaction.response.send_message(
            f"Stopped {len(mine)} repl{'y' if len(mine) == 1 else 'ies'}.", ephemeral=True
        )

    async def _show_sources(
        self, message: discord.Message, reply: Any, stream: StreamingReply[discord.Message]
    ) -> None:
        """Under a reply that drew on a memory: who said it, when, jump links, and forget buttons."""
        brain = self.services.brain
        lines = await brain.source_lines(reply.turn.scope, reply.grounding())
        text = sources_text(lines, message.guild.id if message.guild else None)
        view = sources_view(lines)
        if not text or view is None or not stream.messages:  # no text, no view: there are no sources
            return
        last = stream.messages[-1]
        try:
            current = stream.last_shown
            if len(current) + 1 + len(text) <= DISCORD_LIMIT:
                await last.edit(content=f"{current}\n{text}", view=view)
            else:
                await message.channel.send(text, view=view)
        except discord.HTTPException as exc:
            log.warning("could not show the sources of the reply to message %s (HTTP %s)", message.id, exc.status)

    async def _say(self, message: discord.Message, text: str) -> None:
        try:
            await message.reply(display_text(text), mention_author=False)
        except discord.HTTPException:
            log.warning("could not answer message %s", message.id)

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        report = await self.services.provenance.forget_transport_message(
            "discord", str(payload.channel_id), str(payload.message_id), scope=_guild_scope(payload.guild_id)
        )
        if report is not None:
            log.info("message %s deleted: %s", payload.message_id, report)

    @commands.Cog.listener()
    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        report = await self.services.provenance.forget_transport_messages(
            "discord",
            str(payload.channel_id),
            [str(i) for i in payload.message_ids],
            scope=_guild_scope(payload.guild_id),
        )
        log.info("%d message(s) bulk-deleted in channel %s: %s", len(payload.message_ids), payload.channel_id, report)

    @commands.Cog.listener()
    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        report = await self.services.provenance.forget_channel(
            "discord", str(channel.id), scope=_guild_scope(channel.guild.id)
        )
        await self.participation.drop_channel(str(channel.guild.id), str(channel.id))  # its mode and memory too
        log.info("channel %s deleted: %s", channel.id, report)

    @commands.Cog.listener()
    async def on_raw_thread_delete(self, payload: discord.RawThreadDeleteEvent) -> None:
        report = await self.services.provenance.forget_channel(
            "discord", str(payload.thread_id), scope=_guild_scope(payload.guild_id)
        )
        log.info("thread %s deleted: %s", payload.thread_id, report)

    @commands.Cog.listener()
    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        content = payload.data.get("content")
        if content is None:
            return
        try:
            await self.services.brain.edit("discord", str(payload.channel_id), str(payload.message_id), content)
        except InvalidInput:
            log.info("edit of message %s left it empty or too long; memory unchanged", payload.message_id)


@asynccontextmanager
async def typing_if_allowed(channel: Any) -> AsyncIterator[None]:
    """The typing indicator where Discord allows it. A channel the bot may read but not post in refuses it
    (403, Missing Permissions): the message is still taken in, stored and answered as far as Discord lets."""
    typing = channel.typing()
    try:
        await typing.__aenter__()
    except discord.HTTPException as exc:
        log.info("no typing indicator in channel %s (HTTP %s)", channel.id, exc.status)
        yield
        return
    try:
        yield
    finally:
        await typing.__aexit__(None, None, None)


def replied_to_id(message: discord.Message) -> str | None:
    """The id of the message ``message`` replies to in its own channel (None: not a reply): the Brain puts that
    message in the context even when it is older than the recent turns."""
    ref = message.reference
    if ref is None or ref.message_id is None or message.type != discord.MessageType.reply:
        return None
    return str(ref.message_id) if ref.channel_id in (None, message.channel.id) else None


async def replied_author(message: discord.Message) -> int | None:
    """Who wrote the message ``message`` replies to (None: not a reply, or it cannot be found). Discord sends the
    replied-to message with the reply; a cached or fetched copy stands in when it did not."""
    ref = message.reference
    if ref is None or ref.message_id is None or message.type != discord.MessageType.reply:
        return None
    resolved = ref.resolved if isinstance(ref.resolved, discord.Message) else ref.cached_message
    if resolved is None and isinstance(ref.resolved, discord.DeletedReferencedMessage):
        return None
    if resolved is None:
        try:
            resolved = await message.channel.fetch_message(ref.message_id)
        except discord.HTTPException:
            return None
    return resolved.author.id


def _guild_scope(guild_id: int | None) -> str | None:
    """A guild event touches only that guild's scope; a DM event names no user, so its channel id must do."""
    return str(guild_id) if guild_id is not None else None
