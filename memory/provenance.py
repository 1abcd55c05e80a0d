"""Provenance: forgetting a message or a person removes what was derived from them.

Derived rows reference their source messages with ON DELETE CASCADE (a
reply references the message it answered, an episode both of its messages,
an archetype match its message), so deleting the sources is the whole job;
this module counts what goes, inside one transaction, for the caller's report.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from memory.conversation import require_scope


@dataclass(frozen=True)
class ForgetReport:
    messages: int
    episodes: int
    facts: int = 0  # knowledge-graph edges that lose their last supporting message

    def __str__(self) -> str:
        return f"forgot {self.messages} message(s), {self.episodes} episode(s) and {self.facts} fact(s)"


# All messages reachable from the roots through derived_from_id: what cascades.
_CLOSURE = """
WITH RECURSIVE doomed(id) AS (
    SELECT id FROM messages WHERE scope = $1 AND {roots}
    UNION
    SELECT m.id FROM messages m JOIN doomed d ON m.derived_from_id = d.id
)
"""


class Provenance:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def _forget(self, scope: str, roots: str, arg: object) -> ForgetReport:
        require_scope(scope)
        async with self._pool.acquire() as conn, conn.transaction():
            closure = _CLOSURE.format(roots=roots)
            episodes = await conn.fetchval(
                closure
                + """SELECT count(*) FROM episodes e WHERE e.scope = $1 AND (
                         e.message_id IN (SELECT id FROM doomed) OR e.reply_message_id IN (SELECT id FROM doomed))""",
                scope,
                arg,
            )
            messages = await conn.fetchval(
                closure + "SELECT count(*) FROM doomed",
                scope,
                arg,
            )
            facts = await conn.fetchval(
                closure
                + """SELECT count(*) FROM kg_edges e WHERE e.scope = $1
                       AND EXISTS (SELECT 1 FROM kg_edge_sources s WHERE s.edge_id = e.id
                                   AND s.message_id IN (SELECT id FROM doomed))
                       AND NOT EXISTS (SELECT 1 FROM kg_edge_sources s WHERE s.edge_id = e.id
                                       AND s.message_id NOT IN (SELECT id FROM doomed))""",
                scope,
                arg,
            )
            await conn.execute(f"DELETE FROM messages WHERE scope = $1 AND {roots}", scope, arg)
        return ForgetReport(messages=messages, episodes=episodes, facts=facts)

    async def forget_message(self, scope: str, message_id: int) -> ForgetReport:
        """Delete one stored message (by row id) and everything derived from it."""
        return await self._forget(scope, "id = $2", message_id)

    async def forget_external_message(self, scope: str, external_id: str) -> ForgetReport:
        """Delete a message by its Discord / import id, and everything derived from it."""
        return await self._forget(scope, "external_id = $2", external_id)

    async def forget_transport_message(self, source: str, channel_id: str, external_id: str) -> ForgetReport | None:
        """Delete a transport's message (a Discord message id in its channel) wherever it is stored.

        The (source, channel, id) triple names one message; its own scope is
        used, so nothing outside that scope is touched. None when not stored.
        """
        row = await self._pool.fetchrow(
            "SELECT scope, id FROM messages WHERE source = $1 AND channel_id = $2 AND external_id = $3",
            source, channel_id, external_id,
        )
        if row is None:
            return None
        return await self.forget_message(row["scope"], row["id"])

    async def forget_author(self, scope: str, author_id: str) -> ForgetReport:
        """Delete everything one person said in this scope, and everything derived from it."""
        return await self._forget(scope, "author_id = $2 AND NOT is_bot", author_id)
