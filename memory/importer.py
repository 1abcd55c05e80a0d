"""Importing conversation history: JSON Lines, or DiscordChatExporter's JSON.

JSON Lines: one object a line with ``id``, ``channel``, ``author`` (a name, or
an object with ``id`` and ``name``), ``timestamp`` (ISO 8601), ``text``, and
optionally ``reply_to`` and ``bot``. DiscordChatExporter: its channel export
(``{"guild": ..., "channel": ..., "messages": [...]}``).

The whole file is checked before anything is written; any malformed record
aborts the import with every problem listed and nothing stored. Messages keep
their own ids and timestamps; a re-import adds nothing twice. Each new
message becomes an episode, and its archetype match is logged with its own
timestamp so the dream cycle sees imported history as history.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memory.archetypes import ArchetypeRouter, ArchetypeStore, MatchRecord
from memory.conversation import ConversationStore, NewMessage, require_scope
from memory.embed import Embedder
from memory.episodic import EpisodicStore, NewEpisode, WriteGate
from memory.errors import ImportFileError

SOURCE = "import"
MAX_FILE_BYTES = 512 * 1024 * 1024
_EMBED_CHUNK = 512
_SKIPPED_DCE_TYPES = {"ChannelPinnedMessage", "GuildMemberJoin", "RecipientAdd", "RecipientRemove", "Call",
                      "ChannelNameChange", "ChannelIconChange", "ThreadCreated"}


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


@dataclass(frozen=True)
class ImportReport:
    read: int
    imported: int
    already_present: int
    skipped_empty: int
    episodes: int

    def __str__(self) -> str:
        return (
            f"read {self.read} message(s): imported {self.imported}, already present {self.already_present}, "
            f"skipped {self.skipped_empty} without text; wrote {self.episodes} episode(s)"
        )


def _ident(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value).strip() == "":
        raise ValueError(f"{what} must be a non-empty string or integer")
    return str(value).strip()


def _timestamp(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("timestamp must be an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"timestamp {value[:40]!r} is not ISO 8601") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _jsonl_record(obj: Any, max_chars: int) -> ImportedMessage | None:
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    missing = [k for k in ("id", "channel", "author", "timestamp", "text") if k not in obj]
    if missing:
        raise ValueError("missing field(s): " + ", ".join(missing))
    author = obj["author"]
    if isinstance(author, dict):
        author_id = _ident(author.get("id", author.get("name")), "author.id")
        author_name = _ident(author.get("name", author_id), "author.name")
    else:
        author_name = _ident(author, "author")
        author_id = author_name
    if not isinstance(obj["text"], str):
        raise ValueError("text must be a string")
    text = obj["text"].replace("\x00", "").strip()
    if len(text) > max_chars:
        raise ValueError(f"text is {len(text):,} characters; the limit is {max_chars:,}")
    if not text:
        return None
    reply_to = obj.get("reply_to")
    return ImportedMessage(
        external_id=_ident(obj["id"], "id"),
        channel_id=_ident(obj["channel"], "channel"),
        author_id=author_id,
        author_name=author_name,
        text=text,
        created_at=_timestamp(obj["timestamp"]),
        reply_to=None if reply_to in (None, "") else _ident(reply_to, "reply_to"),
        is_bot=bool(obj.get("bot", False)),
    )


def _dce_record(obj: Any, channel_id: str, max_chars: int) -> ImportedMessage | None:
    if not isinstance(obj, dict):
        raise ValueError("expected a message object")
    if obj.get("type") in _SKIPPED_DCE_TYPES:
        return None
    author = obj.get("author")
    if not isinstance(author, dict):
        raise ValueError("author must be an object")
    content = obj.get("content", "")
    if not isinstance(content, str):
        raise ValueError("content must be a string")
    text = content.replace("\x00", "").strip()
    if len(text) > max_chars:
        raise ValueError(f"content is {len(text):,} characters; the limit is {max_chars:,}")
    if not text:
        return None
    reference = obj.get("reference") or {}
    reply_to = reference.get("messageId") if isinstance(reference, dict) else None
    author_id = _ident(author.get("id"), "author.id")
    return ImportedMessage(
        external_id=_ident(obj.get("id"), "id"),
        channel_id=channel_id,
        author_id=author_id,
        author_name=str(author.get("nickname") or author.get("name") or author_id),
        text=text,
        created_at=_timestamp(obj.get("timestamp")),
        reply_to=None if reply_to in (None, "") else str(reply_to),
        is_bot=bool(author.get("isBot", False)),
    )


def parse_import_file(path: Path, *, max_chars: int) -> tuple[list[ImportedMessage], int]:
    """All messages of ``path`` (deduplicated, oldest first) and how many had no text.

    Raises ImportFileError listing every malformed record, by line number
    (JSON Lines) or message number (DiscordChatExporter).
    """
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ImportFileError(str(path), [(0, f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}")])
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFileError(str(path), [(0, f"not UTF-8 text ({exc.reason})")]) from None
    except OSError as exc:
        raise ImportFileError(str(path), [(0, f"cannot read: {exc.strerror}")]) from None

    problems: list[tuple[int, str]] = []
    parsed: list[ImportedMessage | None] = []
    whole: Any = None
    if raw.lstrip().startswith("{"):
        try:
            whole = json.loads(raw)
        except json.JSONDecodeError:
            whole = None  # not one document: JSON Lines
    if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
        channel = whole.get("channel") or {}
        channel_id = str(channel.get("id") or channel.get("name") or path.stem)
        for number, obj in enumerate(whole["messages"], start=1):
            try:
                parsed.append(_dce_record(obj, channel_id, max_chars))
            except ValueError as exc:
                problems.append((number, f"message {number}: {exc}"))
    else:
        for number, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                parsed.append(_jsonl_record(json.loads(line), max_chars))
            except json.JSONDecodeError as exc:
                problems.append((number, f"invalid JSON ({exc.msg})"))
            except ValueError as exc:
                problems.append((number, str(exc)))
    if problems:
        raise ImportFileError(str(path), problems)
    if not parsed:
        raise ImportFileError(str(path), [(0, "no messages found")])
    messages: dict[tuple[str, str], ImportedMessage] = {}
    for m in parsed:
        if m is not None:
            messages.setdefault((m.channel_id, m.external_id), m)
    ordered = sorted(messages.values(), key=lambda m: m.created_at)
    return ordered, sum(1 for m in parsed if m is None)


class Importer:
    def __init__(
        self,
        conversations: ConversationStore,
        episodes: EpisodicStore,
        router: ArchetypeRouter,
        archetype_store: ArchetypeStore,
        embedder: Embedder,
        gate: WriteGate,
        *,
        max_chars: int,
    ) -> None:
        self._conversations = conversations
        self._episodes = episodes
        self._router = router
        self._archetype_store = archetype_store
        self._embedder = embedder
        self._gate = gate
        self._max_chars = max_chars

    async def run(
        self, path: Path, scope: str, *, progress: Callable[[int, int], None] | None = None
    ) -> ImportReport:
        """Import ``path`` into ``scope`` in one transaction; all or nothing."""
        require_scope(scope)
        messages, empty = parse_import_file(path, max_chars=self._max_chars)
        present = await self._conversations.existing_external_ids(
            scope, SOURCE, [(m.channel_id, m.external_id) for m in messages]
        )
        new = [m for m in messages if (m.channel_id, m.external_id) not in present]
        vectors = np.zeros((0, self._embedder.dimensions), dtype=np.float32)
        if new:
            chunks = []
            for start in range(0, len(new), _EMBED_CHUNK):
                chunk = new[start : start + _EMBED_CHUNK]
                chunks.append(await self._embedder.embed_many([m.text for m in chunk]))
                if progress:
                    progress(min(start + _EMBED_CHUNK, len(new)), len(new))
            vectors = np.concatenate(chunks)
        written = 0
        async with self._conversations.transaction() as conn:
            stored = []
            for m in new:
                stored.append(
                    await self._conversations.add(
                        NewMessage(
                            scope=scope, source=SOURCE, external_id=m.external_id, channel_id=m.channel_id,
                            author_id=m.author_id, author_name=m.author_name, content=m.text,
                            created_at=m.created_at, is_bot=m.is_bot, reply_to_external=m.reply_to,
                        ),
                        conn,
                    )
                )
            # No reply, no surprise: salience calibrated from each message itself (memory.salience),
            # so decay forgets imported trivia, never most of a history. CPU work: off the loop.
            import asyncio

            from memory.salience import imported_saliences

            saliences = await asyncio.to_thread(imported_saliences, [s.content for s in stored], vectors)
            written = await self._episodes.add_many(
                [
                    NewEpisode(
                        scope=scope, channel_id=s.channel_id, author_id=s.author_id, message_id=s.id,
                        content=f"{s.author_name}: {s.content}", embedding=v, created_at=s.created_at,
                        salience=salience,
                    )
                    for s, v, salience in zip(stored, vectors, saliences)
                ],
                conn,
            )
            await self._archetype_store.record_matches(
                [
                    MatchRecord(scope, s.id, self._router.classify(v, scope), s.created_at, v)
                    for s, v in zip(stored, vectors) if not s.is_bot
                ],
                conn,
            )
        return ImportReport(
            read=len(messages), imported=len(new), already_present=len(present), skipped_empty=empty,
            episodes=written,
        )
