"""The chat cog: Discord messages in, the Brain's streamed reply out; deletes and edits follow."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import discord
from discord.ext import commands

from bot.brain import IncomingTurn
from bot.discord.rules import MessageFacts, scope_for, should_answer, strip_mentions
from bot.discord.streaming import StreamingReply
from bot.llm import LLMError
from memory.errors import InvalidInput, MemoryStoreError

if TYPE_CHECKING:
    from bot.discord.client import HippoBotBase

log = logging.getLogger(__name__)

_CUT = "\n[… cut to fit]"
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


def with_attachments(text: str, attached: str) -> str:
    return f"{text}\n\n{attached}".strip() if attached else text


def attachment_room(text: str, *, max_attachment_chars: int, max_message_chars: int) -> int:
    """How much attachment text fits: the message with its attachments must stay within the message limit."""
    return max(0, min(max_attachment_chars, max_message_chars - len(text) - 2))


class ChatCog(commands.Cog):
    def __init__(self, bot: HippoBotBase) -> None:
        self.bot = bot

    def _facts(self, message: discord.Message) -> MessageFacts:
        channel = message.channel
        thread = isinstance(channel, discord.Thread)
        me = self.bot.user
        return MessageFacts(
            author_id=message.author.id,
            author_is_bot=message.author.bot,
            bot_id=me.id if me else 0,
            is_dm=message.guild is None,
            mentions_bot=me is not None and me in message.mentions,
            channel_id=channel.id,
            parent_channel_id=channel.parent_id if thread else None,
            thread_owner_id=channel.owner_id if thread else None,
        )

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        settings = self.bot.settings
        if message.content.startswith(self.bot.command_prefix_text):
            return
        if not should_answer(self._facts(message), allowed_channels=settings.discord_allowed_channels,
                             dream_channel_id=settings.dream_channel_id):
            return
        me = self.bot.user
        text = strip_mentions(message.content, me.id if me else 0)
        if message.attachments:
            room = attachment_room(text, max_attachment_chars=settings.max_attachment_chars,
                                   max_message_chars=settings.max_message_chars)
            text = with_attachments(text, await read_text_attachments(message.attachments, room))
        turn = IncomingTurn(
            scope=scope_for(message.guild.id if message.guild else None, message.author.id),
            source="discord",
            channel_id=str(message.channel.id),
            author_id=str(message.author.id),
            author_name=message.author.display_name,
            text=text,
            external_id=str(message.id),
            created_at=message.created_at,
        )
        brain = self.bot.app.brain
        try:
            async with message.channel.typing():
                reply = await brain.respond(turn)

                async def send(content: str) -> discord.Message:
                    if not stream.messages:
                        return await message.reply(content, mention_author=False)
                    return await message.channel.send(content)

                stream = StreamingReply(send, interval=settings.discord_edit_interval)

                def remember_id(first: Any) -> None:
                    reply.external_id = str(first.id)  # the reply is stored under its Discord id

                await stream.run(reply.__aiter__(), on_first=remember_id)
        except InvalidInput as exc:
            await message.reply(f"⚠️ {exc}", mention_author=False)
        except (LLMError, MemoryStoreError):
            log.exception("reply failed for message %s", message.id)
            await message.reply("⚠️ Something went wrong while answering; your message is saved.",
                                mention_author=False)

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        report = await self.bot.app.provenance.forget_transport_message(
            "discord", str(payload.channel_id), str(payload.message_id)
        )
        if report is not None:
            log.info("message %s deleted: %s", payload.message_id, report)

    @commands.Cog.listener()
    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        content = payload.data.get("content")
        if content is None:
            return
        try:
            await self.bot.app.brain.edit("discord", str(payload.channel_id), str(payload.message_id), content)
        except InvalidInput:
            log.info("edit of message %s left it empty or too long; memory unchanged", payload.message_id)
