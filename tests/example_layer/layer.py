"""The example layer: a note of each absorbed person message's length, recalled, forgotten and tallied."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

import asyncpg

from memory.layers.base import (
    AbsorbedTurn,
    BaseLayer,
    LayerContext,
    LayerStep,
    MemoryItem,
    RecallQuery,
    Section,
    SourceRef,
    StepResult,
    told,
)

SCHEMA = Path(__file__).with_name("schema.sql")
SHOWN = 3  # the latest notes recalled


class ExampleLayer(BaseLayer):
    name = "example"

    def __init__(self, shared: LayerContext) -> None:
        self.pool = shared.pool

    async def install(self, conn: asyncpg.Connection) -> None:
        await conn.execute(SCHEMA.read_text("utf-8"))

    async def absorb(self, turn: AbsorbedTurn) -> None:
        m = turn.message
        await self.pool.execute(
            """INSERT INTO example_notes (message_id, scope, visible_in, words, noted_at) VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT (message_id) DO UPDATE SET words = excluded.words""",
            m.id,
            m.scope,
            m.visible_in,
            len(m.content.split()),
            turn.now,
        )

    async def recall(self, query: RecallQuery) -> Section | None:
        # the audience sees the scope's public notes, and a restricted channel's own
        rows = await self.pool.fetch(
            """SELECT n.message_id, n.words, m.external_id, m.channel_id, m.source, m.created_at
               FROM example_notes n JOIN messages m ON m.id = n.message_id
               WHERE n.scope = $1 AND (n.visible_in IS NULL OR n.visible_in = $2)
               ORDER BY n.message_id DESC LIMIT $3""",
            query.scope,
            query.audience.visible_channel,
            SHOWN,
        )
        if not rows:
            return None
        items = tuple(
            MemoryItem(
                "note",
                None,
                f"a message of {r['words']} words",
                f"- {r['words']} words",
                (r["message_id"],),
                r["created_at"],
                ref=r["message_id"],
                sources=(SourceRef(r["message_id"], r["external_id"], r["channel_id"], r["source"]),),
            )
            for r in rows
        )
        return Section(self.name, "Message lengths", items, priority=90)

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        # the rows go by cascade with their messages; this counts them for the report
        n = await conn.fetchval(
            "SELECT count(*) FROM example_notes WHERE message_id = ANY($1::bigint[])", list(message_ids)
        )
        return {"example_notes": n} if n else {}

    def dream_steps(self) -> Sequence[tuple[str, LayerStep]]:
        return (("example_tally", self.tally),)

    async def tally(self, now: datetime, scope: str | None) -> StepResult:
        status = await self.pool.execute(
            "UPDATE example_notes SET dreamt_at = $1 WHERE dreamt_at IS NULL AND ($2::text IS NULL OR scope = $2)",
            now,
            scope,
        )
        n = int(status.split()[-1])
        return StepResult(counts={"tallied": n}, headline=told((n, "note{s} tallied")))

    async def stats(self, scope: str) -> Mapping[str, object]:
        return {"example notes": await self.pool.fetchval("SELECT count(*) FROM example_notes WHERE scope = $1", scope)}
