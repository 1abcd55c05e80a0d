"""Read-only queries behind the admin commands: one guild's data, or every scope's for the bot's owner.

A guild admin sees only rows of the guild's own scope (and, for dream runs,
the nightly runs over every scope, whose reports name no other guild's data);
``all_scopes`` is for the owner's ``!hippobot stats`` alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

from dream.governance import Governance
from memory.conversation import require_scope


@dataclass(frozen=True)
class DreamRunRow:
    id: int
    trigger: str
    started_at: datetime
    status: str
    scope: str | None  # None: the nightly run over every scope


@dataclass(frozen=True)
class ScopeCounts:
    scope: str
    messages: int
    people: int
    episodes: int
    pending_proposals: int


class GuildView:
    def __init__(self, pool: asyncpg.Pool, governance: Governance) -> None:
        """``governance``: the proposals' counts are its (no SQL on proposals outside it)."""
        self._pool = pool
        self._governance = governance

    async def pending_proposals(self, scope: str) -> int:
        """Pending proposals made from this scope's data."""
        require_scope(scope)
        return (await self._governance.pending_counts([scope])).get(scope, 0)

    async def dream_runs(self, scope: str, limit: int = 5) -> list[DreamRunRow]:
        """This scope's own runs and the nightly runs over every scope, newest first."""
        require_scope(scope)
        rows = await self._pool.fetch(
            """SELECT id, trigger, started_at, status, scope FROM dream_runs
               WHERE scope = $1 OR scope IS NULL ORDER BY id DESC LIMIT $2""",
            scope,
            limit,
        )
        return [DreamRunRow(r["id"], r["trigger"], r["started_at"], r["status"], r["scope"]) for r in rows]

    async def all_scopes(self) -> list[ScopeCounts]:
        """Every scope that holds messages, with its counts (the owner's overview)."""
        rows = await self._pool.fetch(
            """SELECT m.scope, count(*) AS messages,
                       count(DISTINCT m.author_id) FILTER (WHERE NOT m.is_bot) AS people,
                       (SELECT count(*) FROM episodes e WHERE e.scope = m.scope) AS episodes
                FROM messages m GROUP BY m.scope ORDER BY m.scope"""
        )
        pending = await self._governance.pending_counts([r["scope"] for r in rows])
        return [
            ScopeCounts(r["scope"], r["messages"], r["people"], r["episodes"], pending.get(r["scope"], 0)) for r in rows
        ]
