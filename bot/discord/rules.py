"""Pure rules of the Discord front: when to answer, scopes, audiences, splitting, links.

No discord.py objects here: the cogs pass plain values, so every rule is
tested without Discord.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

DISCORD_LIMIT = 2000
# Settings naming the host's files: the owner's business, not a guild admin's.
_HOST_SETTINGS = ("data_dir", "models_dir", "lora_adapter")
_LINK = re.compile(r"https?://(?:\w+\.)?discord(?:app)?\.com/channels/(@me|\d+)/(\d+)/(\d+)")


@dataclass(frozen=True)
class MessageFacts:
    author_id: int
    author_is_bot: bool
    bot_id: int
    is_dm: bool
    mentions_bot: bool
    channel_id: int
    parent_channel_id: int | None  # for threads
    thread_owner_id: int | None  # for threads


def scope_for(guild_id: int | None, user_id: int) -> str:
    """The memory scope: the guild, or one user's DMs."""
    return str(guild_id) if guild_id is not None else f"dm:{user_id}"


@dataclass(frozen=True)
class Visibility:
    """Who may see a message: ``visible_in`` None is everyone in the scope, else that channel's audience."""

    visible_in: str | None
    thread_parent_id: str | None


def visibility_for(*, is_dm: bool, channel_id: int, parent_channel_id: int | None,
                   everyone_can_view: bool) -> Visibility:
    """The audience of a message.

    ``everyone_can_view`` is whether @everyone may view the channel (for a
    thread: its parent), permission overwrites applied. A thread follows its
    parent: its messages are visible where the parent's are, and
    ``visible_in`` names the parent. DMs are the whole (one-person) scope.
    """
    if is_dm:
        return Visibility(None, None)
    parent = str(parent_channel_id) if parent_channel_id is not None else None
    if everyone_can_view:
        return Visibility(None, parent)
    return Visibility(parent or str(channel_id), parent)


def should_answer(facts: MessageFacts, *, allowed_channels: Collection[int], dream_channel_id: int | None) -> bool:
    """Mentioned, in a DM, in an allowed channel or a thread of one, or in a thread the bot started; never bots
    or itself."""
    if facts.author_is_bot or facts.author_id == facts.bot_id:
        return False
    if dream_channel_id is not None and dream_channel_id in (facts.channel_id, facts.parent_channel_id):
        return False  # the dream channel is never conversation
    if facts.is_dm or facts.mentions_bot:
        return True
    if facts.channel_id in allowed_channels or facts.parent_channel_id in allowed_channels:
        return True  # a thread follows its parent, as its audience does (visibility_for)
    return facts.thread_owner_id is not None and facts.thread_owner_id == facts.bot_id


def strip_mentions(content: str, bot_id: int) -> str:
    return re.sub(rf"<@!?{bot_id}>", "", content).strip()


def split_message(text: str, limit: int = DISCORD_LIMIT) -> list[str]:
    """Pieces of at most ``limit`` characters, cut at a newline or space where possible."""
    pieces = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind("\n", 0, limit + 1)
        if cut < limit // 2:
            cut = rest.rfind(" ", 0, limit + 1)
        if cut < limit // 2:
            cut = limit
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest or not pieces:
        pieces.append(rest)
    return pieces


@dataclass(frozen=True)
class MessageLink:
    guild_id: int | None
    channel_id: int
    message_id: int


def parse_message_link(link: str) -> MessageLink | None:
    match = _LINK.search(link.strip())
    if match is None:
        return None
    guild = None if match.group(1) == "@me" else int(match.group(1))
    return MessageLink(guild, int(match.group(2)), int(match.group(3)))


def jump_link(guild_id: int | None, channel_id: str, message_id: str) -> str:
    """The Discord link that opens a message (``@me`` for DMs)."""
    return f"https://discord.com/channels/{guild_id if guild_id is not None else '@me'}/{channel_id}/{message_id}"


def source_label(source: str, external_id: str, channel_id: str, guild_id: int | None) -> str:
    """A message named the way its user knows it: a jump link for Discord, else the id it was imported or typed under."""
    if source == "discord":
        return f"<{jump_link(guild_id, channel_id, external_id)}>"  # <...>: no embed preview
    return f"{source} {external_id}"


def guild_settings_view(view: Mapping[str, object], guild_channel_ids: Collection[int]) -> dict[str, object]:
    """The settings as one guild's admins may see them: only their own channel ids, no host paths.

    ``view`` is ``Settings.public_view()`` (secrets already masked).
    """
    out = dict(view)
    allowed = out.get("discord_allowed_channels") or []
    out["discord_allowed_channels"] = [c for c in allowed if c in guild_channel_ids]  # type: ignore[union-attr]
    if out.get("dream_channel_id") not in guild_channel_ids:
        out["dream_channel_id"] = None if out.get("dream_channel_id") is None else "(in another server)"
    for name in _HOST_SETTINGS:
        if out.get(name) is not None:
            out[name] = "(owner only)"
    return out
