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
    replies_to_bot: bool = False  # a Discord reply to one of the bot's messages


def scope_for(guild_id: int | None, user_id: int) -> str:
    """The memory scope: the guild, or one user's DMs."""
    return str(guild_id) if guild_id is not None else f"dm:{user_id}"


@dataclass(frozen=True)
class Visibility:
    """Who may see a message: ``visible_in`` None is everyone in the scope, else that channel's audience."""

    visible_in: str | None
    thread_parent_id: str | None


def visibility_for(
    *, is_dm: bool, channel_id: int, parent_channel_id: int | None, everyone_can_view: bool
) -> Visibility:
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


def should_answer(facts: MessageFacts, *, allowed_channels: Collection[int], dream_channels: Collection[int]) -> bool:
    """Whether a channel with no stored setting answers: mentioned or replied to, in a DM, in an allowed channel or
    a thread of one, or in a thread the bot started; never bots or itself, never a dream channel."""
    mode = channel_mode(
        None, channel_id=facts.channel_id, parent_channel_id=facts.parent_channel_id, allowed_channels=allowed_channels
    )
    return take_part(facts, mode=mode, remember=False, opted_out=False, dream_channels=dream_channels).answer


@dataclass(frozen=True)
class Part:
    """What the bot does with one message: answer it, store it (and absorb it), both, or neither.

    ``answer`` without ``store`` is an opted-out person addressing the bot: answered, nothing kept.
    """

    answer: bool
    store: bool


def addressed(facts: MessageFacts) -> bool:
    """Said to the bot: a DM, a mention, a reply to one of its messages, or a thread the bot started."""
    return (
        facts.is_dm
        or facts.mentions_bot
        or facts.replies_to_bot
        or (facts.thread_owner_id is not None and facts.thread_owner_id == facts.bot_id)
    )


def channel_mode(
    stored: str | None, *, channel_id: int, parent_channel_id: int | None, allowed_channels: Collection[int]
) -> str:
    """A channel's mode: what its admins set (a thread: its parent's), else ``chat`` in the allowed channels
    (``HIPPOBOT_DISCORD_ALLOWED_CHANNELS``), else ``mention``."""
    if stored is not None:
        return stored
    if channel_id in allowed_channels or parent_channel_id in allowed_channels:
        return "chat"
    return "mention"


def take_part(
    facts: MessageFacts, *, mode: str, remember: bool, opted_out: bool, dream_channels: Collection[int]
) -> Part:
    """Whether to answer and whether to store a message, from its channel's mode and memory and the author's
    opt-out. Never bots or itself, never a dream channel (``dream_channels``: the server's own and the owner's,
    a thread following its channel); DMs are always answered and stored (``mode`` is
    ignored there); ``quiet`` never answers, ``chat`` answers everything, ``mention`` what is addressed to it.
    A message is stored when answered or when the channel is remembered, never when its author opted out."""
    if facts.author_is_bot or facts.author_id == facts.bot_id:
        return Part(False, False)
    if facts.channel_id in dream_channels or facts.parent_channel_id in dream_channels:
        return Part(False, False)  # a dream channel is never conversation
    if facts.is_dm:
        return Part(True, True)
    answer = mode == "chat" or (mode == "mention" and addressed(facts))
    return Part(answer, not opted_out and (answer or remember))


def strip_mentions(content: str, bot_id: int) -> str:
    return re.sub(rf"<@!?{bot_id}>", "", content).strip()


def split_message(text: str, limit: int = DISCORD_LIMIT) -> list[str]:
    """Pieces of at most ``limit`` characters, cut where a reader would: at a paragraph, else a line, else a
    sentence, else a space (a word longer than half a piece is cut where it must). A code block cut in two is
    closed at the end of one piece and opened again, with its language, at the start of the next."""
    pieces: list[str] = []
    rest = text
    fence: str | None = None  # the opening line of a code block the previous piece closed early
    while True:
        prefix = f"{fence}\n" if fence else ""
        if len(prefix) + len(rest) <= limit:
            pieces.append(prefix + rest)
            break
        room = limit - len(prefix) - len(_CLOSE)  # room for the closing fence, in case the cut is inside code
        cut, skip = _cut(rest, room)
        head = prefix + rest[:cut].rstrip()
        fence = _open_fence(head)
        pieces.append(head + _CLOSE if fence else head)
        rest = rest[cut + skip :]
    return pieces if any(pieces) else [""]


_CLOSE = "\n```"
_SENTENCE = re.compile(r"[.!?][)\"'»”]*\s")


def _cut(text: str, room: int) -> tuple[int, int]:
    """Where to cut ``text`` within ``room`` characters, and how many separator characters to drop there."""
    window = text[: room + 1]
    for sep in ("\n\n", "\n"):
        at = window.rfind(sep, 0, room)
        if at >= room // 2:
            return at, len(sep)
    ends = [m.end() for m in _SENTENCE.finditer(window) if m.end() <= room]
    if ends and ends[-1] >= room // 2:
        return ends[-1] - 1, 1
    at = window.rfind(" ", 0, room + 1)
    if at >= room // 2:
        return at, 1
    return max(1, room), 0


def _open_fence(text: str) -> str | None:
    """The opening line (e.g. "```py") of a code block still open at the end of ``text``, else None."""
    opened: str | None = None
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("```"):
            opened = None if opened is not None else stripped
    return opened


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
    allowed = out.get("discord_allowed_channels")  # a list[int] in Settings; None or absent in a partial view
    out["discord_allowed_channels"] = (
        [c for c in allowed if c in guild_channel_ids] if isinstance(allowed, list) else []
    )
    if out.get("dream_channel_id") not in guild_channel_ids:
        out["dream_channel_id"] = None if out.get("dream_channel_id") is None else "(in another server)"
    for name in _HOST_SETTINGS:
        if out.get(name) is not None:
            out[name] = "(owner only)"
    return out
