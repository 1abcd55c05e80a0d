"""Provenance: forgetting a message, a person or a channel removes every copy of what came from it.

In one transaction: the messages to forget (and the bot replies derived from
them, transitively) are collected; every memory layer removes what database
cascades cannot reach and counts what goes; then the messages are deleted,
and the cascades and triggers do the rest: episodes, facts left without
support, archetype matches, gate logs, the forgotten words inside proposals
(examples and evidence redacted, re-posted from the outbox; a proposal whose
name, description, terms and rationale hold the message's words has that
wording redacted too, with the name of an archetype approved from it and the
dream reports that named it: sql/019) and inside approved archetypes'
examples (the centroid is recomputed). Forgetting a person also anonymises
their votes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import asyncpg

from memory.clock import Clock, SystemClock
from memory.conversation import require_scope
from memory.digests import forgotten_digest, optout_digest  # noqa: F401  (re-exported)
from memory.layers.base import MemoryLayer
from memory.proposer import ProposalRecords

# What a report names, in this order, and how.
_KINDS = (
    ("messages", "message(s)"),
    ("episodes", "episode(s)"),
    ("facts", "fact(s)"),
    ("archetype_matches", "archetype match(es)"),
    ("proposals_redacted", "proposal(s) redacted"),
    ("proposal_names_redacted", "proposal name(s) redacted"),
    ("archetype_examples", "archetype example(s)"),
    ("votes_anonymised", "vote(s) anonymised"),
)


@dataclass(frozen=True)
class ForgetReport:
    counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def messages(self) -> int:
        return self.counts.get("messages", 0)

    @property
    def episodes(self) -> int:
        return self.counts.get("episodes", 0)

    @property
    def facts(self) -> int:
        return self.counts.get("facts", 0)

    def __str__(self) -> str:
        names = dict(_KINDS)
        parts = [f"{self.counts.get(k, 0)} {names[k]}" for k, _ in _KINDS[:3]]
        parts += [
            f"{n} {names.get(k, k.replace('_', ' '))}"
            for k, n in self.counts.items()
            if k not in ("messages", "episodes", "facts") and n
        ]
        return "forgot " + ", ".join(parts)


# All messages reachable from the roots through derived_from_id: what cascades.
_CLOSURE = """
WITH RECURSIVE doomed(id) AS (
    SELECT id FROM messages WHERE {roots}
    UNION
    SELECT m.id FROM messages m JOIN doomed d ON m.derived_from_id = d.id
)
SELECT id FROM doomed
"""


class Provenance:
    def __init__(
        self,
        pool: asyncpg.Pool,
        layers: Sequence[MemoryLayer] = (),
        *,
        proposals: ProposalRecords,
        clock: Clock | None = None,
    ) -> None:
        """``proposals``: governance, which owns the proposals and their votes; ``clock``: when a forgetting
        happens (a person's tombstone covers what they said until then, in the app's time, not the server's)."""
        self._pool = pool
        self._clock = clock or SystemClock()
        self._layers = layers  # the composition root's list, shared with Recall and the absorber
        self._proposals = proposals

    async def _forget(
        self,
        roots: str,
        *args: object,
        author: tuple[str, str] | None = None,
        whole_scope: str | None = None,
        tombstone: tuple[str, str] | None = None,
        remember: bool = True,
    ) -> ForgetReport:
        async with self._pool.acquire() as conn, conn.transaction():
            doomed = [r["id"] for r in await conn.fetch(_CLOSURE.format(roots=roots), *args)]
            counts: Counter[str] = Counter(messages=len(doomed))
            if doomed and remember:
                # tombstones, so that an import of an old export does not bring any of it back (sql/017)
                rows = await conn.fetch(
                    "SELECT scope, channel_id, external_id FROM messages WHERE id = ANY($1::bigint[])", doomed
                )
                digests = {forgotten_digest("message", r["scope"], r["channel_id"], r["external_id"]) for r in rows}
                if tombstone is not None:
                    digests |= {
                        forgotten_digest(tombstone[0], scope, tombstone[1]) for scope in {r["scope"] for r in rows}
                    }
                await conn.execute(
                    """INSERT INTO forgotten (digest, forgotten_at) SELECT d, $2 FROM unnest($1::text[]) AS d
                       ON CONFLICT (digest) DO UPDATE SET forgotten_at = excluded.forgotten_at""",
                    sorted(digests),
                    self._clock.now(),
                )
            if doomed:
                for layer in self._layers:
                    counts.update(await layer.forgetting(conn, doomed))
                counts["archetype_matches"] += await conn.fetchval(
                    "SELECT count(*) FROM archetype_matches WHERE message_id = ANY($1::bigint[])", doomed
                )
                counts.update(await self._proposals.forgetting(conn, doomed))
                counts["archetype_examples"] += await conn.fetchval(
                    "SELECT count(*) FROM archetype_example_sources WHERE message_id = ANY($1::bigint[])", doomed
                )
                await conn.execute("DELETE FROM messages WHERE id = ANY($1::bigint[])", doomed)
            if author is not None:
                counts["votes_anonymised"] += await self._proposals.forget_voter(conn, *author)
                await _forget_setter(conn, *author)
            if whole_scope is not None:
                counts.update(await _drop_scope(conn, whole_scope))
        return ForgetReport(dict(counts))

    async def forget_message(self, scope: str, message_id: int) -> ForgetReport:
        """Delete one stored message (by row id) and everything derived from it."""
        require_scope(scope)
        return await self._forget("scope = $1 AND id = $2", scope, message_id)

    async def forget_external_message(self, scope: str, external_id: str) -> ForgetReport:
        """Delete a message by its Discord / import id, and everything derived from it."""
        require_scope(scope)
        return await self._forget("scope = $1 AND external_id = $2", scope, external_id)

    async def forget_transport_message(
        self, source: str, channel_id: str, external_id: str, *, scope: str | None = None
    ) -> ForgetReport | None:
        """Delete a transport's message (a Discord message id in its channel); None when not stored.

        With ``scope``, only a message stored in that scope is touched: an
        admin's link naming another server's channel finds nothing.
        """
        found = await self._pool.fetchval(
            """SELECT count(*) FROM messages WHERE source = $1 AND channel_id = $2 AND external_id = $3
               AND ($4::text IS NULL OR scope = $4)""",
            source,
            channel_id,
            external_id,
            scope,
        )
        if not found:
            return None
        return await self._forget(
            "source = $1 AND channel_id = $2 AND external_id = $3 AND ($4::text IS NULL OR scope = $4)",
            source,
            channel_id,
            external_id,
            scope,
        )

    async def forget_transport_messages(
        self, source: str, channel_id: str, external_ids: Sequence[str], *, scope: str | None = None
    ) -> ForgetReport:
        """A bulk delete: these messages of one channel, and everything derived from them."""
        return await self._forget(
            """source = $1 AND channel_id = $2 AND external_id = ANY($3::text[])
               AND ($4::text IS NULL OR scope = $4)""",
            source,
            channel_id,
            list(external_ids),
            scope,
        )

    async def forget_channel(self, source: str, channel_id: str, *, scope: str | None = None) -> ForgetReport:
        """A deleted channel or thread: its messages, its threads' messages, and everything derived from them.

        No tombstones: a channel is forgotten by whoever runs it (to import it again as private, say), not at
        someone's request; messages and people forgotten before stay forgotten in it."""
        return await self._forget(
            """source = $1 AND (channel_id = $2 OR thread_parent_id = $2)
               AND ($3::text IS NULL OR scope = $3)""",
            source,
            channel_id,
            scope,
            remember=False,
        )

    async def forget_author(self, scope: str, author_id: str) -> ForgetReport:
        """Delete everything one person said in this scope and everything derived from it; anonymise their votes.

        In the person's own DM scope (``dm:<their id>``) the scope itself is
        theirs: every message and every row of any table kept for that scope
        (archetypes, overrides, proposals, dream runs, the graph) goes too.
        """
        require_scope(scope)
        if scope == f"dm:{author_id}":
            return await self._forget(
                "scope = $1", scope, author=(scope, author_id), whole_scope=scope, tombstone=("author", author_id)
            )
        return await self._forget(
            "scope = $1 AND author_id = $2 AND NOT is_bot",
            scope,
            author_id,
            author=(scope, author_id),
            tombstone=("author", author_id),
        )


async def _drop_scope(conn: asyncpg.Connection, scope: str) -> Counter[str]:
    """Delete every row kept for ``scope`` in any table with a ``scope`` column (a layer's new table included)."""
    tables = [
        r["table_name"]
        for r in await conn.fetch(
            """SELECT table_name FROM information_schema.columns
           WHERE table_schema = current_schema() AND column_name = 'scope' ORDER BY table_name"""
        )
    ]
    dropped: Counter[str] = Counter()
    for table in tables:
        status = await conn.execute(f'DELETE FROM "{table}" WHERE scope = $1', scope)
        if n := int(status.split()[-1]):
            dropped[f"{table}_dropped"] += n
    return dropped


# Admin settings that keep who made them, by id, per scope.
_SET_BY = (
    ("channel_settings", "mode_set_by"),
    ("channel_settings", "memory_set_by"),
    ("dream_channels", "set_by"),
    ("archetype_overrides", "set_by"),
)


async def _forget_setter(conn: asyncpg.Connection, scope: str, person_id: str) -> None:
    """The admin settings a forgotten person made in this scope (a channel's mode or memory, the dream channel,
    an archetype switch) read "forgotten" where their id was."""
    for table, column in _SET_BY:
        await conn.execute(
            f"UPDATE {table} SET {column} = 'forgotten' WHERE scope = $1 AND {column} = $2", scope, person_id
        )
