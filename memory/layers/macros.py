"""The macros layer (seed 001 SMPD MacroLib): procedures that worked here, suggested when a problem matches.

Absorb: when a person says a problem was solved ("thanks, that worked"),
the exchange is distilled into a macro (memory.places.macros) and the macros
that reached the prompt of their latest turn here count a success; "still
the same error" counts a failure for them. Recall suggests the best-matching
procedures the audience may see (top 3, above a similarity floor), with
their steps and record. The dream ages strength and merges near-duplicates.
Forgetting removes what the messages alone built.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime

import asyncpg

from memory.conversation import StoredMessage
from memory.embed import Embedder
from memory.layers.base import (
    MEMORY,
    AbsorbedTurn,
    BaseLayer,
    Signal,
    LayerStep,
    MemoryItem,
    RecallQuery,
    Section,
    StepResult,
    told,
)
from memory.places.codes import FAILURE, SUCCESS, outcome
from memory.places.macros import HALF_LIFE, MIN_SIMILARITY, Macro, MacroStore
from memory.vectors import vec

log = logging.getLogger(__name__)

STEPS_SHOWN = 4


class MacrosLayer(BaseLayer):
    name = "macros"
    absorb_after: tuple[str, ...] = ("places",)  # reads the problem vector the places layer stores for the message

    def __init__(
        self, pool: asyncpg.Pool, embedder: Embedder, *, top_k: int = 3, min_similarity: float = MIN_SIMILARITY
    ) -> None:
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        self.store = MacroStore(pool)
        self.embedder = embedder
        self.top_k = top_k
        self.min_similarity = min_similarity

    async def recall(self, query: RecallQuery) -> Section | None:
        if not query.text.strip():
            return None
        found = await self.store.suggest(
            query.scope,
            query.audience.visible_channel,
            query.vector,
            top_k=self.top_k,
            min_similarity=self.min_similarity,
        )
        if not found:
            return None
        items = tuple(
            MemoryItem("macro", m.score, describe(m), prompt_line(m), m.message_ids, m.last_update, ref=m.id, payload=m)
            for m in found
        )
        return Section(
            self.name,
            "Procedures that worked here before",
            items,
            placement=MEMORY,
            priority=60,
            meta={"limit": self.top_k},
        )

    async def suggest(
        self, scope: str, text: str, *, visible_channel: str | None = None, top_k: int | None = None
    ) -> list[Macro]:
        """The best procedures for a problem described in ``text`` (for the CLI, /whereto and the evaluation)."""
        from memory.layers.places import topic_text

        vector = await self.embedder.embed(topic_text(text))
        return await self.store.suggest(
            scope, visible_channel, vector, top_k=top_k or self.top_k, min_similarity=self.min_similarity
        )

    async def absorb(self, turn: AbsorbedTurn) -> None:
        message = turn.message
        if message.is_bot:
            return
        used = turn.used.get(self.name, ())
        said = outcome(message.content)
        if said is not None:  # outcomes first: this message's own macros must not count as their own use
            await self.store.outcome_of_uses(message, said == SUCCESS, turn.now)
        if used:
            await self.store.record_uses(message, used)
        if said == SUCCESS:
            await self.distill(message, turn.now)

    async def distill(self, confirmation: StoredMessage, now: datetime) -> int | None:
        """File the exchange ``confirmation`` ends as a macro; its id, or None when there was nothing to keep."""
        t = await self.store.distill(confirmation)
        if t is None:
            return None
        # the problem's vector as the places layer stored it (its absorb runs first); embedded only without it
        stored = await self.store.pool.fetchval(
            "SELECT embedding FROM place_messages WHERE message_id = $1", t.problem_id
        )
        vector = vec(stored) if stored is not None else await self.embedder.embed(t.problem)
        added = await self.store.add(t, vector, now)
        return None if added is None else added[0]

    async def signal(self, signal: Signal) -> None:
        """The asker's "worked" / "did not work" mark on a reply that suggested procedures (taking it back
        takes it back)."""
        m = signal.message
        if signal.kind != "reaction" or signal.verdict is None or m is None or not m.is_bot:
            return
        worked = signal.verdict if signal.added else None
        if ids := await self.reply_reaction(m, signal.actor_id, worked, signal.now):
            log.info(
                "macros %s: %s on reply %s", ids, "undone" if worked is None else "worked" if worked else "failed", m.id
            )

    async def reply_reaction(
        self, reply: StoredMessage, reactor_id: str, worked: bool | None, now: datetime
    ) -> list[int]:
        """The asker's ✅ (``worked``) or ❌ on a reply that carried suggestions; None: taken back."""
        return await self.store.outcome_of_reply(reply, reactor_id, worked, now)

    async def failed(self, message: StoredMessage, now: datetime) -> list[int]:
        """A ❌ (or "that did not work") on the latest suggestion: a failure for those macros."""
        return await self.store.outcome_of_uses(message, False, now)

    async def edited(self, message: StoredMessage, conn: asyncpg.Connection) -> None:
        await self.store.forgetting(conn, [message.id])  # its words inside macros go with the old text

    async def after_edit(self, message: StoredMessage, now: datetime) -> None:
        if not message.is_bot and outcome(message.content) == SUCCESS:
            await self.distill(message, now)

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        return await self.store.forgetting(conn, message_ids)

    async def stats(self, scope: str) -> dict[str, int]:
        return await self.store.counts(scope)

    def dream_steps(self) -> Sequence[tuple[str, LayerStep]]:
        return (("macro_aging", self.age_step), ("macro_merge", self.merge_step))

    async def age_step(self, now: datetime, scope: str | None) -> StepResult:
        aged, dropped = await self.store.age(now, scope, HALF_LIFE)
        return StepResult(
            counts={"macros_aged": aged, "macros_dropped": dropped},
            headline=told((dropped, "unused procedure{s} dropped")),
        )

    async def merge_step(self, now: datetime, scope: str | None) -> StepResult:
        merged = await self.store.merge_similar(scope)
        return StepResult(counts={"macros_merged": merged}, headline=told((merged, "procedure{s} merged")))


def describe(m: Macro) -> str:
    steps = " ".join(f"{i}) {s}" for i, s in enumerate(m.steps[:STEPS_SHOWN], 1))
    return f"{m.signature} — {steps} (worked {m.successes}x, failed {m.failures}x)"


def prompt_line(m: Macro) -> str:
    steps = " ".join(f"{i}) {s}" for i, s in enumerate(m.steps[:STEPS_SHOWN], 1))
    return f'For "{m.signature}": {steps} (worked {m.successes} time(s))'


__all__ = ["FAILURE", "SUCCESS", "MacrosLayer", "describe", "prompt_line"]
