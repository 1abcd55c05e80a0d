"""Importing conversation history: JSON Lines, or DiscordChatExporter's JSON.

JSON Lines: one object a line with ``id``, ``channel``, ``author`` (a name, or
an object with ``id``, ``name`` and optionally ``username``), ``timestamp`` (ISO 8601), ``text``, and
optionally ``reply_to``, ``bot`` (null is false) and ``channel_name`` (a
``channel`` that is not a number is taken as its own name). DiscordChatExporter:
its channel export (``{"guild": ..., "channel": ..., "messages": [...]}``).
Timestamps are RFC 3339 / ISO 8601, ``Z`` or ``z`` for UTC.

The whole file is checked before anything is written; any malformed record
aborts the import with every problem listed and nothing stored. Messages keep
their own ids and timestamps; a re-import adds nothing twice. The importer
writes only the message log; everything remembered from it is written by the
memory layers, through the same durable absorption as a live message
(memory.absorption): each new person message, and whatever an earlier,
interrupted import of the scope left unabsorbed. The episodes layer makes an
episode of each message the import's write gate admits on its calibrated
salience (memory.salience; so "wrote 0 episode(s)" for a few plain messages
is no failure), and each message's archetype match is logged with its own
timestamp, so the dream cycle sees imported history as history.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from memory.absorption import AbsorbHints, Absorber
from memory.conversation import ConversationStore, NewMessage, StoredMessage, require_scope
from memory.embed import Embedder
from memory.episodic import EpisodicStore
from memory.errors import ImportFileError, InvalidInput
from memory.fields import check_id, check_time, clean_name, clean_text, id_problem
from memory.provenance import forgotten_digest
from memory.salience import batch_novelty
from memory.sources import IMPORTED

log = logging.getLogger(__name__)

SOURCE = IMPORTED
ANALYZE_AFTER = 200  # messages: an import at least this big refreshes the planner's statistics
MAX_FILE_BYTES = 512 * 1024 * 1024
_EMBED_CHUNK = 512
_ABSORB_CHUNK = 256  # messages whose parse the layers batch ahead of absorbing them
_JSONL_FIELDS = ("id", "channel", "author", "timestamp", "text")
_UTC_DESIGNATOR = re.compile(r"[zZ]$")  # RFC 3339 allows "z"; Python's fromisoformat reads only "Z"
# DiscordChatExporter's system notifications (a pin, a join, a call, a renamed channel, a thread opened): Discord's
# words about an event, not a person's. Kinds it has no name for it writes as their number; Discord's system kinds
# among those are 1-18 (DiscordChatExporter's MessageKind.IsSystemNotification).
_SYSTEM_DCE_TYPES = {
    "ChannelPinnedMessage",
    "GuildMemberJoin",
    "RecipientAdd",
    "RecipientRemove",
    "Call",
    "ChannelNameChange",
    "ChannelIconChange",
    "ThreadCreated",
}
_SYSTEM = object()  # what _dce_record returns for a system notification: skipped, and counted apart from "no text"


@dataclass(frozen=True)
class ImportedMessage:
    external_id: str
    channel_id: str
    author_id: str
    author_name: str
    text: str
    created_at: datetime
    reply_to: str | None
    is_bot: bool
    channel_name: str | None = None
    author_username: str | None = None  # the account name, where the file gives it beside the display name


@dataclass(frozen=True)
class ImportReport:
    read: int
    imported: int
    already_present: int
    skipped_empty: int
    episodes: int
    skipped_forgotten: int = 0  # forgotten before (the message itself, or its person): not brought back
    resumed: int = 0  # stored by an earlier, interrupted import but not absorbed then: absorbed now
    skipped_opted_out: int = 0  # said by someone who opted out of being remembered in this scope
    skipped_system: int = 0  # Discord's system notifications in an export (a pin, a join, ...): nobody's words
    repeated: int = 0  # records the file holds twice (overlapping exports): one message each

    def __str__(self) -> str:
        forgotten = f", {self.skipped_forgotten} forgotten before (not brought back)" if self.skipped_forgotten else ""
        forgotten += (
            f", {self.skipped_opted_out} by people who opted out of being remembered here (not stored)"
            if self.skipped_opted_out
            else ""
        )
        system = (
            f", {self.skipped_system} system message(s) (pins, joins, thread openings...)"
            if self.skipped_system
            else ""
        )
        system += f", {self.repeated} repeated in the file (kept once)" if self.repeated else ""
        resumed = (
            f"; absorbed {self.resumed} message(s) an earlier, interrupted import left unabsorbed"
            if self.resumed
            else ""
        )
        return (
            f"read {self.read} message(s): imported {self.imported}, already present {self.already_present}, "
            f"skipped {self.skipped_empty} without text{system}{forgotten}; wrote {self.episodes} episode(s){resumed}"
        )


def _ident(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value).strip() == "":
        raise ValueError(f"{what} must be a non-empty string or integer")
    return check_id(str(value).strip(), what)


def _timestamp(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("timestamp must be an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(_UTC_DESIGNATOR.sub("+00:00", value.strip()))
        return check_time(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC))
    except OverflowError:
        raise ValueError(f"timestamp {value[:40]!r} is out of range") from None
    except ValueError as exc:
        if "outside" in str(exc):
            raise
        raise ValueError(f"timestamp {value[:40]!r} is not ISO 8601") from None


def _text(value: Any, what: str, max_chars: int) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    text = clean_text(value).strip()
    if len(text) > max_chars:
        raise ValueError(f"{what} is {len(text):,} characters; the limit is {max_chars:,}")
    return text


def _jsonl_record(obj: Any, max_chars: int) -> ImportedMessage | None:
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    missing = [k for k in _JSONL_FIELDS if k not in obj]
    if missing:
        raise ValueError("missing field(s): " + ", ".join(missing))
    author = obj["author"]
    username = None
    if isinstance(author, dict):
        author_id = _ident(author.get("id", author.get("name")), "author.id")
        author_name = _ident(author.get("name", author_id), "author.name")
        username = _username(author.get("username"), "author.username")
    else:
        author_name = _ident(author, "author")
        author_id = author_name
    text = _text(obj["text"], "text", max_chars)
    if not text:
        return None
    is_bot = obj.get("bot")
    if is_bot is None:  # absent or null: not known to be a bot
        is_bot = False
    elif not isinstance(is_bot, bool):
        raise ValueError('"bot" must be true or false (JSON booleans), not ' + json.dumps(is_bot)[:20])
    reply_to = obj.get("reply_to")
    channel_id = _ident(obj["channel"], "channel")
    return ImportedMessage(
        external_id=_ident(obj["id"], "id"),
        channel_id=channel_id,
        author_id=author_id,
        author_name=author_name,
        text=text,
        created_at=_timestamp(obj["timestamp"]),
        reply_to=None if reply_to in (None, "") else _ident(reply_to, "reply_to"),
        is_bot=is_bot,
        channel_name=_channel_name(obj.get("channel_name"), channel_id),
        author_username=username,
    )


def _channel_name(name: Any, channel_id: str) -> str | None:
    """What a channel is called: the name given, else its id when that is a name (not a Discord snowflake)."""
    if name is None or name == "":
        return None if channel_id.isdigit() else channel_id
    if not isinstance(name, str):
        raise ValueError("channel_name must be a string")
    return clean_name(name) or None  # a display name: repaired (control characters, length), not refused


def _username(value: Any, what: str) -> str | None:
    """An account name beside the display name: repaired like a display name; None when not given."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    return clean_name(value) or None


def _is_system(kind: Any) -> bool:
    """Whether an exported message's ``type`` is one of Discord's system notifications."""
    if not isinstance(kind, str):
        return False
    return kind in _SYSTEM_DCE_TYPES or (kind.isdigit() and 1 <= int(kind) <= 18)


def _dce_record(
    obj: Any, channel_id: str, max_chars: int, channel_name: str | None = None
) -> ImportedMessage | object | None:
    """One exported message; None when it has no text, ``_SYSTEM`` for a system notification."""
    if not isinstance(obj, dict):
        raise ValueError("expected a message object")
    if _is_system(obj.get("type")):
        return _SYSTEM
    author = obj.get("author")
    if not isinstance(author, dict):
        raise ValueError("author must be an object")
    text = _text(obj.get("content", ""), "content", max_chars)
    if not text:
        return None
    reference = obj.get("reference") or {}
    reply_to = reference.get("messageId") if isinstance(reference, dict) else None
    author_id = _ident(author.get("id"), "author.id")
    return ImportedMessage(
        external_id=_ident(obj.get("id"), "id"),
        channel_id=channel_id,
        author_id=author_id,
        author_name=_ident(author.get("nickname") or author.get("name") or author_id, "author.name"),
        text=text,
        created_at=_timestamp(obj.get("timestamp")),
        reply_to=None if reply_to in (None, "") else _ident(reply_to, "reference.messageId"),
        is_bot=author.get("isBot") is True,
        channel_name=channel_name,
        author_username=_username(author.get("name"), "author.name"),  # the nickname is the display name
    )


def _is_export(whole: Any) -> bool:
    """Whether ``whole`` (the file as one JSON document) is DiscordChatExporter's channel export, however
    malformed its messages, rather than a file of one JSON Lines record."""
    if not isinstance(whole, dict) or all(k in whole for k in _JSONL_FIELDS):
        return False
    return "messages" in whole or "guild" in whole


def _json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    kinds: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    return kinds.get(type(value), "a number")


def _first_line_is_whole(raw: str) -> bool:
    """Whether the first line of ``raw`` is a JSON document of its own (JSON Lines, not a pretty-printed export)."""
    try:
        json.loads(raw.lstrip().split("\n", 1)[0])
    except json.JSONDecodeError:
        return False
    except (ValueError, RecursionError):
        return True
    return True


@dataclass(frozen=True)
class ParsedFile:
    """An import file read: its messages (deduplicated, oldest first), how many records had no text, and how
    many were Discord's system notifications (a pin, a join, ...; DiscordChatExporter exports them)."""

    messages: list[ImportedMessage]
    without_text: int
    system: int = 0
    records: int = 0  # every record of the file: its messages, repeated ones, those without text, notifications

    @property
    def repeated(self) -> int:
        return self.records - len(self.messages) - self.without_text - self.system


def parse_import_file(path: Path, *, max_chars: int) -> tuple[list[ImportedMessage], int]:
    """All messages of ``path`` (deduplicated, oldest first) and how many had no text (see ``read_import_file``)."""
    parsed = read_import_file(path, max_chars=max_chars)
    return parsed.messages, parsed.without_text


def read_import_file(path: Path, *, max_chars: int) -> ParsedFile:
    """All messages of ``path`` (deduplicated, oldest first), with how many records had no text and how many
    were system notifications.

    Raises ImportFileError listing every malformed record, by line number
    (JSON Lines) or message number (DiscordChatExporter).
    """
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ImportFileError(str(path), [(0, f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}")])
        raw = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors) is not content
    except UnicodeDecodeError as exc:
        raise ImportFileError(str(path), [(0, f"not UTF-8 text ({exc.reason})")]) from None
    except OSError as exc:
        raise ImportFileError(str(path), [(0, f"cannot read: {exc.strerror}")]) from None

    problems: list[tuple[int, str]] = []
    parsed: list[ImportedMessage | object | None] = []
    numbers: list[int] = []  # the line (or message) number of each parsed record
    whole: Any = None
    if raw.lstrip().startswith("{"):
        try:
            whole = json.loads(raw)
        except ValueError as exc:  # not one document: JSON Lines, whose lines are checked one by one below
            if not isinstance(exc, json.JSONDecodeError) and not _first_line_is_whole(raw):
                # Python refuses integers of more than 4,300 digits; this file is one (exporter) document.
                raise ImportFileError(str(path), [(0, "a number in it is too long")]) from None
            whole = None
        except RecursionError:
            raise ImportFileError(str(path), [(0, "JSON nested too deeply")]) from None
    exported = _is_export(whole)  # DiscordChatExporter's
    if exported and not isinstance(whole.get("messages"), list):
        found = f'its "messages" is {_json_kind(whole["messages"])}' if "messages" in whole else 'it has no "messages"'
        raise ImportFileError(
            str(path),
            [(0, f'a DiscordChatExporter export, but {found}: expected a list of messages ("messages": [...])')],
        )
    if exported:
        channel = whole.get("channel")
        try:
            channel_name = None
            if channel is None:
                channel_id = check_id(path.stem, "the channel (the file's name, as the export names none)")
            elif isinstance(channel, dict):
                channel_id = _ident(channel.get("id") or channel.get("name") or path.stem, "channel.id")
                # A thread's title is its opener's words: a thread is named by its parent (the export's
                # "category" for a thread), as on Discord (bot.discord.chat.channel_name_of).
                thread = "thread" in str(channel.get("type", "")).lower()
                channel_name = (
                    _channel_name(channel.get("category"), channel_id)
                    if thread and channel.get("category")
                    else None
                    if thread
                    else _channel_name(channel.get("name"), channel_id)
                )
            else:  # some exports give the channel as its name or id
                channel_id = _ident(channel, "channel")
                channel_name = _channel_name(None, channel_id)
        except ValueError as exc:
            raise ImportFileError(str(path), [(0, str(exc))]) from None
        for number, obj in enumerate(whole["messages"], start=1):
            try:
                parsed.append(_dce_record(obj, channel_id, max_chars, channel_name))
                numbers.append(number)
            except ValueError as exc:
                problems.append((number, f"message {number}: {exc}"))
    else:
        for number, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append((number, f"invalid JSON ({exc.msg})"))
                continue
            except RecursionError:
                problems.append((number, "JSON nested too deeply"))
                continue
            except ValueError:  # Python refuses integers of more than 4,300 digits
                problems.append((number, "a number in it is too long"))
                continue
            try:
                parsed.append(_jsonl_record(obj, max_chars))
                numbers.append(number)
            except ValueError as exc:
                problems.append((number, str(exc)))
    if problems:
        raise ImportFileError(str(path), problems)
    if not parsed:
        raise ImportFileError(str(path), [(0, "no messages found")])
    messages: dict[tuple[str, str], ImportedMessage] = {}
    first: dict[tuple[str, str], int] = {}
    for number, m in zip(numbers, parsed):
        if not isinstance(m, ImportedMessage):
            continue
        key = (m.channel_id, m.external_id)
        if key not in messages:
            messages[key], first[key] = m, number
        elif messages[key] != m:  # the same message twice (overlapping exports) is one; two under one id are not
            why = (
                f"id {m.external_id} in channel {m.channel_id} is also the id of a different message "
                f"({'message' if exported else 'line'} {first[key]})"
            )
            problems.append((number, f"message {number}: {why}" if exported else why))
    if problems:
        raise ImportFileError(str(path), problems)
    ordered = sorted(messages.values(), key=lambda m: m.created_at)
    return ParsedFile(
        ordered,
        without_text=sum(1 for m in parsed if m is None),
        system=sum(1 for m in parsed if m is _SYSTEM),
        records=len(parsed),
    )


def private_channel_ids(messages: Collection[ImportedMessage], named: Collection[str]) -> tuple[set[str], list[str]]:
    """The channel ids ``named`` means in ``messages``, and the names none of them is in. A channel is named by
    its id or by its name in the file (``#`` optional, any case: a DiscordChatExporter export names its
    channel), as ``forget`` and ``places`` name one; a name two channels share names both."""
    ids: set[str] = set()
    unknown = []
    for name in named:
        matches = {m.channel_id for m in messages if m.channel_id == name} or {
            m.channel_id
            for m in messages
            if m.channel_name and m.channel_name.casefold() == name.removeprefix("#").casefold()
        }
        ids |= matches
        if not matches:
            unknown.append(name)
    return ids, unknown


def channels_listed(messages: Collection[ImportedMessage]) -> str:
    """The file's channels as a person can name them (the id, and the name where the file gives one)."""
    named = {m.channel_id: m.channel_name for m in messages}
    return ", ".join(f"{c} (#{n})" if n and n != c else c for c, n in sorted(named.items())[:10])


class Importer:
    """Writes an imported history into the message log, then hands each new message to the absorber, which
    gives it to every memory layer as it does a live message. ``episodes`` is read only, for the report."""

    def __init__(
        self,
        conversations: ConversationStore,
        absorber: Absorber,
        embedder: Embedder,
        episodes: EpisodicStore,
        *,
        max_chars: int,
    ) -> None:
        self._conversations = conversations
        self._absorber = absorber
        self._embedder = embedder
        self._episodes = episodes
        self._max_chars = max_chars

    async def run(
        self,
        path: Path,
        scope: str,
        *,
        progress: Callable[[int, int], None] | None = None,
        private_channels: Collection[str] = (),
        absorb_progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Import ``path`` into ``scope``: all the messages or none, then every memory layer absorbs them.

        The messages are written in one transaction, under a per-scope lock
        so that two imports of one file write it once. Then the absorber
        gives every new person message to every memory layer (episodes, the
        graph's facts, and whatever layers exist), marking each absorbed, and
        with them what an earlier, interrupted import into ``scope`` left
        unabsorbed (a re-run finds its messages present). Messages of
        ``private_channels`` are restricted to their channel's audience, and
        so is everything the layers derive from them.
        """
        require_scope(scope)
        for channel in private_channels:
            if problem := id_problem(channel, "a private channel"):
                raise InvalidInput(problem)
        parsed = read_import_file(path, max_chars=self._max_chars)
        messages, empty = parsed.messages, parsed.without_text
        resolved, unknown = private_channel_ids(messages, private_channels)
        if unknown:
            # A misspelt private channel would otherwise leave the real one public.
            raise InvalidInput(
                f"private channel {', '.join(sorted(unknown))}: no message of {path} is in it "
                f"(its channels: {channels_listed(messages)}); nothing imported"
            )
        private = frozenset(resolved)
        channels = sorted({m.channel_id for m in messages})
        stored_as = await self._conversations.restricted_channels(scope, SOURCE, channels)
        if public := sorted(c for c in private if stored_as.get(c) is False):
            # Its messages and all that was derived from them are public already: marking only the new ones
            # would leave the rest where everyone sees it.
            raise InvalidInput(
                f"channel {', '.join(public)} was imported into {scope} before as public, and what was remembered "
                f"from it stays public: forget it first (hippobot forget --scope {scope} --channel "
                f"{public[0]}), then import again with --private-channel; nothing imported"
            )
        # A channel imported before as private stays private, with or without --private-channel this time.
        private |= {c for c, restricted in stored_as.items() if restricted}
        messages, forgotten = await self._not_forgotten(scope, messages)
        # Someone who asked not to be remembered here (/memory optout) is not remembered from a file either.
        opted_out = await self._conversations.opted_out(scope, [m.author_id for m in messages])
        if opted_out:
            kept = [m for m in messages if m.author_id not in opted_out]
            opted_out_count, messages = len(messages) - len(kept), kept
        else:
            opted_out_count = 0
        present = await self._conversations.existing_external_ids(
            scope, SOURCE, [(m.channel_id, m.external_id) for m in messages]
        )
        new = [m for m in messages if (m.channel_id, m.external_id) not in present]
        bare = await self._embed([m.text for m in new], progress)
        # No reply, no surprise: the episodes layer calibrates an imported message's salience from the message
        # itself and its novelty among this batch (memory.salience), which only the import sees whole. CPU
        # work, proportional to the batch squared: off the loop.
        novelty = await asyncio.to_thread(batch_novelty, np.asarray(bare)) if new else np.zeros(0)
        async with self._conversations.transaction() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('import:' || $1, 0))", scope)
            # Another import of the same messages may have committed while this one embedded.
            present = await self._conversations.existing_external_ids(
                scope, SOURCE, [(m.channel_id, m.external_id) for m in messages], conn
            )
            fresh = [i for i, m in enumerate(new) if (m.channel_id, m.external_id) not in present]
            stored = []
            for i in fresh:
                m = new[i]
                stored.append(
                    await self._conversations.add(
                        NewMessage(
                            scope=scope,
                            source=SOURCE,
                            external_id=m.external_id,
                            channel_id=m.channel_id,
                            author_id=m.author_id,
                            author_name=m.author_name,
                            content=m.text,
                            created_at=m.created_at,
                            is_bot=m.is_bot,
                            reply_to_external=m.reply_to,
                            channel_name=m.channel_name,
                            author_username=m.author_username,
                            visible_in=m.channel_id if m.channel_id in private else None,
                        ),
                        conn,
                    )
                )
        # A message's novelty is among what this import stored (what a re-run after an interruption measures it
        # among: _stored_hints), so all it embedded unless another import stored some of those first.
        if len(fresh) != len(new):
            novelty = await asyncio.to_thread(batch_novelty, np.asarray([bare[i] for i in fresh]))
            novelty_of = dict(zip(fresh, novelty))
        else:
            novelty_of = dict(enumerate(novelty))
        # What is remembered of them (episodes, facts, archetype matches, ...) each layer writes, through the
        # absorption a live message takes: from here a crash leaves messages unabsorbed, never half-remembered,
        # and the next import of the scope (or the next start) absorbs them.
        resumed = await self._absorb(scope, stored, [(bare[i], float(novelty_of[i])) for i in fresh], absorb_progress)
        if len(stored) >= ANALYZE_AFTER:
            await self._analyze()
        # The episodes this run wrote: of its new messages, and of those an interrupted import left, which it
        # absorbed too (counting only the new ones said "wrote 0 episode(s)" after a resumed import wrote many).
        absorbed_now = [s.id for s in stored] + resumed
        written = await self._episodes.count_of(scope, absorbed_now) if absorbed_now else 0
        return ImportReport(
            read=parsed.records,
            imported=len(stored),
            already_present=len(messages) - len(stored),
            skipped_empty=empty,
            episodes=written,
            skipped_forgotten=forgotten,
            skipped_opted_out=opted_out_count,
            resumed=len(resumed),
            skipped_system=parsed.system,
            repeated=parsed.repeated,
        )

    async def _not_forgotten(self, scope: str, messages: list[ImportedMessage]) -> tuple[list[ImportedMessage], int]:
        """``messages`` less what was forgotten in this scope (sql/017): a message forgotten itself, or said
        before its person was forgotten; and how many were left out."""
        keys = [
            (
                forgotten_digest("message", scope, m.channel_id, m.external_id),
                forgotten_digest("author", scope, m.author_id),
            )
            for m in messages
        ]
        rows = await self._conversations.forgotten([d for k in keys for d in k])
        if not rows:
            return messages, 0
        kept = [
            m
            for m, (message, author) in zip(messages, keys)
            if message not in rows and not (author in rows and m.created_at <= rows[author])
        ]
        return kept, len(messages) - len(kept)

    async def _analyze(self) -> None:
        """Fresh planner statistics after a bulk import. Autovacuum gets there in its own time; until then
        the graph's queries were planned for empty tables (the facts layer took 120 / 398 ms p50 / p95 per
        question right after importing the hand-written dev chats, 37 / 52 after ANALYZE)."""
        try:
            async with self._conversations.transaction() as conn:
                await conn.execute("ANALYZE")
        except asyncpg.PostgresError as exc:  # e.g. a role that may not analyze some table
            log.warning("ANALYZE after the import failed: %s", exc)

    async def _embed(self, texts: list[str], progress: Callable[[int, int], None] | None = None) -> list[np.ndarray]:
        """``texts``' vectors, in chunks (a message's own text: archetype routing, salience; "Name: text": an
        episode's key)."""
        vectors: list[np.ndarray] = []
        for start in range(0, len(texts), _EMBED_CHUNK):
            vectors += list(await self._embedder.embed_many(texts[start : start + _EMBED_CHUNK]))
            if progress:
                progress(min(start + _EMBED_CHUNK, len(texts)), len(texts))
        return vectors

    async def resume(
        self, scope: str, *, progress: Callable[[int, int], None] | None = None, limit: int | None = None
    ) -> list[int]:
        """Absorb what interrupted imports into ``scope`` left unabsorbed (at most ``limit``, oldest first), as
        those imports would have (``_absorb``), without a file: what a start-up does before its backlog. The
        ids of the messages absorbed."""
        require_scope(scope)
        return await self._absorb(scope, [], [], progress, limit=limit)

    async def _absorb(
        self,
        scope: str,
        stored: list[StoredMessage],
        known_vectors: list[tuple[np.ndarray, float]],
        progress: Callable[[int, int], None] | None,
        *,
        limit: int | None = None,
    ) -> list[int]:
        """Absorb every imported person message of ``scope`` not absorbed yet, oldest first: this import's
        (``stored``, with their vectors and batch novelty at hand) and those an interrupted import left, which a
        re-run finds "already present" and would otherwise leave to the next start of ``chat`` or ``run`` (their
        novelty is measured among the messages that import stored, as it would have been: ``_stored_hints``).
        The ids of the latter. The absorber's own path (the one start-up's backlog takes): absorbed_at marks
        each."""
        hints = {
            s.id: AbsorbHints(text=s.content, vector=v, batch_novelty=n)
            for s, (v, n) in zip(stored, known_vectors)
            if not s.is_bot
        }
        own = {s.id for s in stored}
        pending = await self._conversations.unabsorbed_in(scope, SOURCE)
        if limit is not None:
            pending = pending[:limit]
        if earlier := [i for i in pending if i not in own]:
            hints |= await self._stored_hints(scope, earlier)
        resumed: list[int] = []
        for start in range(0, len(pending), _ABSORB_CHUNK):
            chunk = pending[start : start + _ABSORB_CHUNK]
            # one spaCy batch per layer
            await self._absorber.prepare([t for i in chunk if i in hints and (t := hints[i].text)])
            for done, message_id in enumerate(chunk, start=start + 1):
                if (
                    message_id in hints
                    and await self._absorber.absorb(message_id, hints[message_id])
                    and message_id not in own
                ):
                    resumed.append(message_id)
                if progress and (done % 50 == 0 or done == len(pending)):
                    progress(done, len(pending))
        if resumed:
            log.info("import into %s absorbed %d message(s) an interrupted import left unabsorbed", scope, len(resumed))
        return resumed

    async def _stored_hints(self, scope: str, message_ids: list[int]) -> dict[int, AbsorbHints]:
        """What absorbing ``message_ids`` (stored by an earlier import, not absorbed) needs: each one's vector, and
        its novelty among every message its import stored, as that import measured it before it was
        interrupted. Measured among only those left unabsorbed (or per chunk of them), a line said again before
        the interruption looked new after it, and a resumed import wrote more episodes than one run in one go.
        The batch is embedded again in the order and chunks the import embedded it, so the vectors are the
        same ones."""
        wanted = set(message_ids)
        hints: dict[int, AbsorbHints] = {}
        for batch in await self._conversations.stored_together(scope, SOURCE, message_ids):
            vectors = await self._embed([m.content for m in batch])
            novelty = await asyncio.to_thread(batch_novelty, np.asarray(vectors))
            hints |= {
                m.id: AbsorbHints(text=m.content, vector=v, batch_novelty=float(n))
                for m, v, n in zip(batch, vectors, novelty)
                if m.id in wanted
            }
        return hints
