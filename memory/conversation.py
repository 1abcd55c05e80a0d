"""The conversation log: every message in and every reply out, persisted first.

Rows are never shared between scopes; every read takes a scope and a missing
one is an error, not "all scopes".
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import asyncpg

from memory.fields import check_time, clean_name, clean_text, id_problem
from memory.errors import InvalidInput, ScopeError
from memory.db import session_lock
from memory.digests import optout_digest
from memory.sources import SourceRef, sources_of

_COLUMNS = (
    "id, scope, source, external_id, channel_id, author_id, author_name, is_bot, content, "
    "derived_from_id, created_at, visible_in, thread_parent_id, channel_name"
)


def absorb_lock_key(message_id: int) -> int:
    """The advisory-lock key of absorbing one message: a 64-bit hash, so in practice it never meets another
    message's or the fixed keys of the dream, the outbox and migrations."""
    digest = hashlib.blake2b(f"hippobot:absorb:{message_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def require_scope(scope: str | None) -> str:
    """The scope itself, or ScopeError when it is missing, blank or malformed."""
    if scope is None or not str(scope).strip():
        raise ScopeError("a memory scope is required (a guild id, dm:<user id>, or a console scope)")
    if problem := id_problem(str(scope), "the scope"):
        raise ScopeError(problem)
    return str(scope)


@dataclass(frozen=True)
class NewMessage:
    scope: str
    source: str  # 'discord' | 'console' | 'import'
    external_id: str
    channel_id: str
    author_id: str
    author_name: str
    content: str
    created_at: datetime
    is_bot: bool = False
    derived_from_id: int | None = None
    reply_to_external: str | None = None
    visible_in: str | None = None  # None: everyone in the scope; else the channel whose audience may see it
    thread_parent_id: str | None = None  # a thread's parent channel
    channel_name: str | None = None  # what the channel (or thread) is called; None: unknown
    author_username: str | None = None  # the author's account name (Discord's username); None: unknown


def storable(message: NewMessage) -> NewMessage:
    """``message`` as it can be stored, or InvalidInput naming what cannot be.

    The one check every write passes (import, console, Discord): ids are
    refused when malformed (NUL, control characters, over 200 characters,
    a lone surrogate), since a repaired id would no longer name the message;
    the text and the author's display name are repaired instead, so nobody's
    words are lost over one bad character.
    """
    require_scope(message.scope)
    for what, value in (
        ("the message id", message.external_id),
        ("the channel id", message.channel_id),
        ("the author id", message.author_id),
        ("the replied-to id", message.reply_to_external),
        ("the visible channel", message.visible_in),
        ("the parent channel", message.thread_parent_id),
    ):
        if value is not None and (problem := id_problem(str(value), what)):
            raise InvalidInput(problem)
    try:
        created_at = check_time(message.created_at, "the message's time")
    except (ValueError, OverflowError) as exc:
        raise InvalidInput(str(exc)) from None
    return replace(
        message,
        content=clean_text(message.content),
        created_at=created_at,
        author_name=clean_name(message.author_name) or message.author_id,
        channel_name=clean_name(message.channel_name or "") or None,
        author_username=clean_name(message.author_username or "") or None,
    )


@dataclass(frozen=True)
class StoredMessage:
    id: int
    scope: str
    source: str
    external_id: str
    channel_id: str
    author_id: str
    author_name: str
    is_bot: bool
    content: str
    derived_from_id: int | None
    created_at: datetime
    visible_in: str | None = None
    thread_parent_id: str | None = None
    channel_name: str | None = None


def _stored(row: asyncpg.Record) -> StoredMessage:
    return StoredMessage(**dict(row))


class ConversationStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[asyncpg.Connection]:
        """A connection in a transaction, for writes that must land together."""
        async with self._pool.acquire() as conn, conn.transaction():
            yield conn

    async def add(self, message: NewMessage, conn: asyncpg.Connection | None = None) -> StoredMessage:
        """Persist a message; a re-delivered one (same ids) returns the stored row.

        Raises InvalidInput (nothing written) for an id that cannot be stored; see ``storable``.
        """
        message = storable(message)
        db = conn or self._pool
        row = await db.fetchrow(
            f"""INSERT INTO messages (scope, source, external_id, channel_id, author_id, author_name,
                                      is_bot, content, derived_from_id, reply_to_external, created_at,
                                      visible_in, thread_parent_id, channel_name, author_username)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                ON CONFLICT (scope, source, channel_id, external_id) DO NOTHING
                RETURNING {_COLUMNS}""",
            message.scope,
            message.source,
            message.external_id,
            message.channel_id,
            message.author_id,
            message.author_name,
            message.is_bot,
            message.content,
            message.derived_from_id,
            message.reply_to_external,
            message.created_at,
            message.visible_in,
            message.thread_parent_id,
            message.channel_name,
            message.author_username,
        )
        if row is None:
            row = await db.fetchrow(
                f"""SELECT {_COLUMNS} FROM messages
                    WHERE scope = $1 AND source = $2 AND channel_id = $3 AND external_id = $4""",
                message.scope,
                message.source,
                message.channel_id,
                message.external_id,
            )
        return _stored(row)

    async def channels_named(self, scope: str, name: str) -> list[str]:
        """The stored channel ids ``name`` may mean in this scope: the id itself, the console's ``console:NAME``,
        or the channels called NAME in the history (``#`` optional, any case; a thread is named by its own id).
        Exactly the id (or the console's) when it is stored, so an id never turns ambiguous."""
        require_scope(scope)
        rows = await self._pool.fetch(
            """SELECT DISTINCT channel_id FROM messages
               WHERE scope = $1 AND (channel_id = ANY($2::text[])
                                     OR (thread_parent_id IS NULL AND lower(channel_name) = lower($3)))
               ORDER BY channel_id""",
            scope,
            [name, f"console:{name}"],
            name.removeprefix("#"),
        )
        ids = [r["channel_id"] for r in rows]
        exact = [c for c in ids if c in (name, f"console:{name}")]
        return exact[:1] or ids

    async def channel_names(self, scope: str) -> dict[str, str]:
        """Each named channel of this scope by id, with its newest name in the history (a terminal shows "#trips"
        where Discord renders "<#901>")."""
        require_scope(scope)
        rows = await self._pool.fetch(
            """SELECT DISTINCT ON (channel_id) channel_id, channel_name FROM messages
               WHERE scope = $1 AND channel_name IS NOT NULL AND channel_name <> ''
               ORDER BY channel_id, created_at DESC, id DESC""",
            scope,
        )
        return {r["channel_id"]: r["channel_name"] for r in rows}

    async def authors_named(self, scope: str, name: str) -> list[str]:
        """The people (author ids, never the bot) of this scope whom ``name`` names: by id, display name or
        username in the history, any case (as ``hippobot forget --person`` reads a name)."""
        require_scope(scope)
        rows = await self._pool.fetch(
            """SELECT DISTINCT author_id FROM messages
               WHERE scope = $1 AND NOT is_bot
                 AND (author_id = $2 OR lower(author_name) = lower($2) OR lower(author_username) = lower($2))
               ORDER BY author_id""",
            scope,
            name,
        )
        return [r["author_id"] for r in rows]

    async def forgotten(self, digests: Sequence[str]) -> dict[str, datetime]:
        """Which of these tombstones (memory.provenance.forgotten_digest) exist, and when each was forgotten."""
        rows = await self._pool.fetch(
            "SELECT digest, forgotten_at FROM forgotten WHERE digest = ANY($1::text[])", list(digests)
        )
        return {r["digest"]: r["forgotten_at"] for r in rows}

    async def opted_out(self, scope: str, author_ids: Sequence[str]) -> set[str]:
        """Which of ``author_ids`` asked not to be remembered in ``scope`` (``/memory optout``, sql/024)."""
        by_digest = {optout_digest(scope, a): a for a in set(author_ids)}
        rows = await self._pool.fetch(
            "SELECT digest FROM memory_optouts WHERE scope = $1 AND digest = ANY($2::text[])", scope, list(by_digest)
        )
        return {by_digest[r["digest"]] for r in rows}

    async def restricted_channels(
        self, scope: str, source: str, channel_ids: Sequence[str], conn: asyncpg.Connection | None = None
    ) -> dict[str, bool]:
        """For each of ``channel_ids`` with stored messages in this scope: whether they are restricted to the
        channel's audience (True) or public (False). A channel with both counts as restricted."""
        require_scope(scope)
        rows = await (conn or self._pool).fetch(
            """SELECT channel_id, bool_or(visible_in IS NOT NULL) AS restricted FROM messages
               WHERE scope = $1 AND source = $2 AND channel_id = ANY($3::text[]) GROUP BY channel_id""",
            scope,
            source,
            list(channel_ids),
        )
        return {r["channel_id"]: bool(r["restricted"]) for r in rows}

    async def channel_audience(self, scope: str, channel_id: str) -> tuple[str | None, str | None]:
        """(visible_in, thread_parent_id) that a new message in a stored channel takes from the channel's own:
        a message said in a restricted channel (or a thread of one) is restricted to the same audience, however
        it arrives (the console speaking in an imported channel). (None, None) for a public or unknown one."""
        require_scope(scope)
        row = await self._pool.fetchrow(
            """SELECT max(visible_in) AS visible_in, max(thread_parent_id) AS thread_parent_id FROM messages
               WHERE scope = $1 AND channel_id = $2""",
            scope,
            channel_id,
        )
        return (row["visible_in"], row["thread_parent_id"]) if row is not None else (None, None)

    async def existing_external_ids(
        self, scope: str, source: str, keys: Sequence[tuple[str, str]], conn: asyncpg.Connection | None = None
    ) -> set[tuple[str, str]]:
        """Which (channel_id, external_id) pairs are already stored in this scope."""
        require_scope(scope)
        if not keys:
            return set()
        rows = await (conn or self._pool).fetch(
            """SELECT m.channel_id, m.external_id FROM messages m
               JOIN unnest($3::text[], $4::text[]) AS k(channel_id, external_id)
                 ON m.channel_id = k.channel_id AND m.external_id = k.external_id
               WHERE m.scope = $1 AND m.source = $2""",
            scope,
            source,
            [k[0] for k in keys],
            [k[1] for k in keys],
        )
        return {(r["channel_id"], r["external_id"]) for r in rows}

    async def recent(
        self,
        scope: str,
        channel_id: str,
        limit: int,
        *,
        before_id: int | None = None,
        visible_channel: str | None = None,
    ) -> list[StoredMessage]:
        """The last ``limit`` messages of a conversation that the audience may see, oldest first."""
        require_scope(scope)
        if limit <= 0:
            return []
        rows = await self._pool.fetch(
            f"""SELECT {_COLUMNS} FROM messages
                WHERE scope = $1 AND channel_id = $2 AND ($3::bigint IS NULL OR id < $3)
                  AND (visible_in IS NULL OR visible_in = $5::text)
                ORDER BY created_at DESC, id DESC LIMIT $4""",
            scope,
            channel_id,
            before_id,
            limit,
            visible_channel if visible_channel is not None else channel_id,
        )
        return [_stored(r) for r in reversed(rows)]

    async def get(self, scope: str, message_id: int) -> StoredMessage | None:
        require_scope(scope)
        row = await self._pool.fetchrow(
            f"SELECT {_COLUMNS} FROM messages WHERE scope = $1 AND id = $2", scope, message_id
        )
        return _stored(row) if row else None

    async def sources(self, message_ids: Sequence[int]) -> dict[int, SourceRef]:
        """The user-facing ids of stored messages, by row id (``memory.sources``)."""
        return await sources_of(self._pool, message_ids)

    async def many(self, scope: str, message_ids: Sequence[int]) -> dict[int, StoredMessage]:
        """The scope's stored messages among ``message_ids``, by id (others' ids are simply not found)."""
        require_scope(scope)
        if not message_ids:
            return {}
        rows = await self._pool.fetch(
            f"SELECT {_COLUMNS} FROM messages WHERE scope = $1 AND id = ANY($2::bigint[])", scope, list(message_ids)
        )
        return {r["id"]: _stored(r) for r in rows}

    async def by_id(self, message_id: int) -> StoredMessage | None:
        """A message by its row id, in whatever scope (for the absorber, which was handed the id)."""
        row = await self._pool.fetchrow(f"SELECT {_COLUMNS} FROM messages WHERE id = $1", message_id)
        return _stored(row) if row else None

    async def reply_to(self, message_id: int) -> StoredMessage | None:
        """The bot's latest reply to a message, if one was stored."""
        row = await self._pool.fetchrow(
            f"""SELECT {_COLUMNS} FROM messages WHERE derived_from_id = $1 AND is_bot
                ORDER BY created_at DESC, id DESC LIMIT 1""",
            message_id,
        )
        return _stored(row) if row else None

    async def is_absorbed(self, message_id: int) -> bool:
        return bool(await self._pool.fetchval("SELECT absorbed_at IS NOT NULL FROM messages WHERE id = $1", message_id))

    async def keep_private(self, message_id: int, at: datetime) -> None:
        """Mark a message that asked not to be passed on absorbed with no memory made of it, and seen by no audience
        from now on ('private:<author>' is no channel's id): the log keeps it for forgetting and export, but no
        recall, transcript or search shows it to anyone again."""
        await self._pool.execute(
            "UPDATE messages SET absorbed_at = $2, visible_in = 'private:' || author_id WHERE id = $1", message_id, at
        )

    async def mark_absorbed(self, message_id: int, at: datetime) -> None:
        await self._pool.execute("UPDATE messages SET absorbed_at = $2 WHERE id = $1", message_id, at)

    def absorbing(self, message_id: int, *, wait: bool = False) -> contextlib.AbstractAsyncContextManager[bool]:
        """The claim on absorbing (or following an edit of) one message, held for the block: yields whether this
        process has it (``wait``: waits for it). It is a PostgreSQL advisory lock, so two processes on one
        database (two shards, or the bot and ``hippobot import``) never absorb the same message at once, and a
        process that dies lets go of it with its connection."""
        return session_lock(self._pool, absorb_lock_key(message_id), wait=wait)

    async def unabsorbed(self, limit: int) -> list[int]:
        """Person messages never absorbed into memory, oldest first (what a crash left behind)."""
        rows = await self._pool.fetch(
            "SELECT id FROM messages WHERE absorbed_at IS NULL AND NOT is_bot ORDER BY id LIMIT $1", limit
        )
        return [r["id"] for r in rows]

    async def unabsorbed_in(self, scope: str, source: str) -> list[int]:
        """Person messages of one scope and source never absorbed, oldest first (what an interrupted import of
        the scope left behind)."""
        require_scope(scope)
        rows = await self._pool.fetch(
            """SELECT id FROM messages WHERE scope = $1 AND source = $2 AND absorbed_at IS NULL AND NOT is_bot
               ORDER BY id""",
            scope,
            source,
        )
        return [r["id"] for r in rows]

    async def unabsorbed_scopes(self, source: str) -> list[str]:
        """The scopes with person messages of ``source`` never absorbed (what interrupted imports left)."""
        rows = await self._pool.fetch(
            """SELECT DISTINCT scope FROM messages WHERE source = $1 AND absorbed_at IS NULL AND NOT is_bot
               ORDER BY scope""",
            source,
        )
        return [r["scope"] for r in rows]

    async def stored_together(self, scope: str, source: str, message_ids: Sequence[int]) -> list[list[StoredMessage]]:
        """The batches ``message_ids`` were stored in: for each time of storing among them, every message of
        ``scope`` and ``source`` stored at that time, bots' too, in the order they were stored. A message's
        ``stored_at`` is its transaction's ``now()``, and an import stores all its messages in one transaction,
        so a batch is what one import stored (what its novelty was measured among, memory.importer)."""
        require_scope(scope)
        if not message_ids:
            return []
        rows = await self._pool.fetch(
            f"""SELECT {_COLUMNS}, stored_at FROM messages
                WHERE scope = $1 AND source = $2 AND stored_at IN (
                    SELECT stored_at FROM messages WHERE scope = $1 AND source = $2 AND id = ANY($3::bigint[]))
                ORDER BY stored_at, id""",
            scope,
            source,
            list(message_ids),
        )
        batches: dict[datetime, list[StoredMessage]] = {}
        for row in rows:
            fields = dict(row)
            batches.setdefault(fields.pop("stored_at"), []).append(StoredMessage(**fields))
        return list(batches.values())

    async def count_unabsorbed(self) -> int:
        return await self._pool.fetchval("SELECT count(*) FROM messages WHERE absorbed_at IS NULL AND NOT is_bot")

    async def find_transport(self, source: str, channel_id: str, external_id: str) -> StoredMessage | None:
        """A transport's message by its own ids (a Discord channel and message id name one message)."""
        row = await self._pool.fetchrow(
            f"SELECT {_COLUMNS} FROM messages WHERE source = $1 AND channel_id = $2 AND external_id = $3",
            source,
            channel_id,
            external_id,
        )
        return _stored(row) if row else None

    async def set_content(
        self, message_id: int, content: str, edited_at: datetime, conn: asyncpg.Connection | None = None
    ) -> None:
        await (conn or self._pool).execute(
            "UPDATE messages SET content = $2, edited_at = $3 WHERE id = $1", message_id, content, edited_at
        )

    async def stats(self, scope: str) -> dict[str, int]:
        require_scope(scope)
        row = await self._pool.fetchrow(
            """SELECT (SELECT count(*) FROM messages WHERE scope = $1) AS messages,
                      (SELECT count(DISTINCT author_id) FROM messages WHERE scope = $1 AND NOT is_bot) AS people,
                      (SELECT count(*) FROM episodes WHERE scope = $1) AS episodes,
                      (SELECT count(*) FROM episodes WHERE scope = $1 AND pinned) AS pinned""",
            scope,
        )
        return dict(row)

    async def holds(self, scope: str) -> bool:
        """Whether anything is stored in ``scope`` (a typo'd scope holds nothing)."""
        require_scope(scope)
        return bool(await self._pool.fetchval("SELECT EXISTS (SELECT 1 FROM messages WHERE scope = $1)", scope))

    async def count(self, scope: str) -> int:
        require_scope(scope)
        return await self._pool.fetchval("SELECT count(*) FROM messages WHERE scope = $1", scope)
