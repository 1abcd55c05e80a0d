"""Recall: ask every registered memory layer, concurrently, for its section of one message's context.

A layer that fails or takes longer than ``timeout`` seconds is logged,
counted and skipped: memory is an aid to the reply, never a reason not to
give one. A memory item that repeats a message already in the transcript
(the recent turns) is dropped, and each section is cut to its own limit.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memory.archetypes import ContextPlan
from memory.conversation import StoredMessage, require_scope
from memory.episodic import EpisodeHit
from memory.layers.base import MEMORY, PREAMBLE, TRANSCRIPT, Audience, MemoryItem, MemoryLayer, RecallQuery, Section
from memory.semantic import Fact

log = logging.getLogger(__name__)

DEFAULT_LAYER_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class ContextBundle:
    """Everything recalled for one message: the plan and one section per layer that answered."""

    scope: str
    plan: ContextPlan
    sections: tuple[Section, ...] = ()
    author_id: str | None = None
    skipped: tuple[str, ...] = ()  # layers that failed or timed out
    recalled: tuple[Section, ...] = ()  # the sections as the layers gave them, before the tidying

    def as_fresh_question(self, keep: Collection[int] = ()) -> ContextBundle:
        """This bundle as `hippobot ask` recalls a fresh question: no recent turns but those of ``keep`` (the
        message replied to), and back in the memory sections the items that only repeated a recent turn."""
        sections = []
        for s in self.recalled or self.sections:
            if s.placement == TRANSCRIPT:
                items = tuple(i for i in s.items if set(i.message_ids) & set(keep))
                if not items:
                    continue
                s = replace(s, items=items)
            sections.append(s)
        return replace(self, sections=tuple(_tidy(sections)), recalled=())

    def section(self, layer: str) -> Section | None:
        return next((s for s in self.sections if s.layer == layer), None)

    def _payloads(self, layer: str) -> list[Any]:
        s = self.section(layer)
        return [i.payload for i in s.items] if s else []

    @property
    def turns(self) -> list[StoredMessage]:
        """The recent turns, oldest first."""
        return self._payloads("turns")

    @property
    def episodes(self) -> list[EpisodeHit]:
        """The recalled episodes (not the logged messages found only by their words)."""
        return [p for p in self._payloads("episodes") if isinstance(p, EpisodeHit)]

    @property
    def facts(self) -> list[Fact]:
        return self._payloads("facts")

    @property
    def nearest_similarity(self) -> float | None:
        s = self.section("episodes")
        return None if s is None else s.meta.get("nearest_similarity")

    @property
    def adapter(self) -> Any:
        """The adapter the engine should apply for this scope (the weights layer's ``AdapterRef``), or None."""
        return next((s.meta["adapter"] for s in self.sections if s.meta.get("adapter") is not None), None)

    @property
    def boosts(self) -> dict[int, float]:
        """Every section's token boosts, summed."""
        total: Counter[int] = Counter()
        for s in self.sections:
            total.update(s.boosts)
        return dict(total)

    def items(self, *, preamble: bool = True) -> list[MemoryItem]:
        """What was recalled: memory sections by priority (each best first), the recent turns newest first,
        then the preamble sections (the bot's own state, e.g. its persona: not a recalled memory, so never
        ahead of one in a ranking)."""
        ordered = sorted((s for s in self.sections if s.placement == MEMORY), key=lambda s: s.priority)
        out = [i for s in ordered for i in s.items]
        for s in self.sections:
            if s.placement == TRANSCRIPT:
                out += list(reversed(s.items))
        if preamble:
            for s in sorted((s for s in self.sections if s.placement == PREAMBLE), key=lambda s: s.priority):
                out += list(s.items)
        return out

    def as_dict(self) -> dict[str, object]:
        return {
            "scope": self.scope,
            "archetype": self.plan.archetype,
            "best_archetype": self.plan.best_archetype,
            "similarity": round(self.plan.similarity, 4),
            "plan": {
                "turns": self.plan.turns,
                "vectors": self.plan.vectors,
                "similarity_threshold": self.plan.similarity_threshold,
                "triple_depth": self.plan.triple_depth,
                "memory_words": self.plan.memory_words,
            },
            "items": [i.as_dict() for i in self.items(preamble=False)],
            # the bot's own state (its persona), not recalled memories
            "preamble": [i.as_dict() for s in self.sections if s.placement == PREAMBLE for i in s.items],
            "skipped_layers": list(self.skipped),
        }


@dataclass
class Recall:
    layers: Sequence[MemoryLayer]
    timeout: float = DEFAULT_LAYER_TIMEOUT_S
    failures: Counter[str] = field(default_factory=Counter)  # layer -> recalls skipped (errors and timeouts)

    async def gather(self, query: RecallQuery, *, timeout: float | None = None) -> ContextBundle:
        """Every layer's section for ``query``, within the audience; failing or slow layers skipped
        (``timeout``: this call's limit per layer instead of the live one, e.g. for offline batches)."""
        require_scope(query.scope)
        limit = self.timeout if timeout is None else timeout
        results = await asyncio.gather(*(self._one(layer, query, limit) for layer in self.layers))
        sections = [s for s in results if isinstance(s, Section)]
        skipped = tuple(layer.name for layer, s in zip(self.layers, results) if s is _SKIPPED)
        kept = await self._current(query.scope, _tidy(sections), limit)
        return ContextBundle(query.scope, query.plan, tuple(kept), query.author_id, skipped, recalled=tuple(sections))

    async def _current(self, scope: str, sections: list[Section], limit: float) -> list[Section]:
        """The sections without the memories a newer memory beside them corrected ("I live in Lisbon" beside "I
        moved from Lisbon to Porto": the reader answered "Lisbon."), as the layers know them (``superseded``).
        An item that holds its own correction stays; a layer that fails or is slow here removes nothing."""
        ids = sorted({i for s in sections if s.placement == MEMORY for item in s.items for i in item.message_ids})
        if len(ids) < 2:
            return sections

        async def one(layer: MemoryLayer) -> Mapping[int, frozenset[int]]:
            try:
                async with asyncio.timeout(limit):
                    return await layer.superseded(scope, ids)
            except Exception:
                log.warning(
                    "memory layer %s could not tell superseded memories; none left out", layer.name, exc_info=True
                )
                return {}

        corrected: dict[int, frozenset[int]] = {}
        for found in await asyncio.gather(*(one(layer) for layer in self.layers)):
            corrected.update(found)
        if not corrected:
            return sections

        def stale(item: MemoryItem) -> bool:
            own = set(item.message_ids)
            return any(m in corrected and not corrected[m] & own for m in own)

        return [
            replace(s, items=tuple(i for i in s.items if not stale(i))) if s.placement == MEMORY else s
            for s in sections
        ]

    async def prepare(self, texts: Sequence[str], *, timeout: float | None = None) -> None:
        """Let every layer that can do batch work for many recalls do it (a failure only costs speed)."""
        limit = self.timeout if timeout is None else timeout

        async def one(layer: MemoryLayer) -> None:
            try:
                async with asyncio.timeout(limit):
                    await layer.prepare(texts)
            except Exception:
                log.warning("memory layer %s could not prepare %d queries", layer.name, len(texts), exc_info=True)

        await asyncio.gather(*(one(layer) for layer in self.layers))

    async def _one(self, layer: MemoryLayer, query: RecallQuery, timeout: float) -> Section | None | object:
        try:
            async with asyncio.timeout(timeout):  # unlike wait_for on 3.11, never swallows the caller's cancel
                return await layer.recall(query)
        except TimeoutError:
            self.failures[layer.name] += 1
            log.warning("memory layer %s took over %.1f s for scope %s; skipped", layer.name, timeout, query.scope)
        except Exception:
            self.failures[layer.name] += 1
            log.exception("memory layer %s failed for scope %s; skipped", layer.name, query.scope)
        return _SKIPPED


_SKIPPED = object()


def _tidy(sections: list[Section]) -> list[Section]:
    """Drop memory items that repeat a transcript message (a preamble is kept whole), then cut each section
    to its limit."""
    in_transcript = {i for s in sections if s.placement == TRANSCRIPT for item in s.items for i in item.message_ids}
    out = []
    for s in sections:
        items = s.items
        if s.placement == MEMORY and in_transcript:
            items = tuple(i for i in items if not set(i.message_ids) & in_transcript)
        limit = s.meta.get("limit")
        if limit is not None:
            items = items[: max(int(limit), 0)]
        out.append(replace(s, items=items))
    return out


def recall_query(scope: str, text: str, vector: Any, plan: ContextPlan, now: datetime, **kw: Any) -> RecallQuery:
    """A RecallQuery for a scope (audience fields and the rest as keywords)."""
    audience = Audience(scope, kw.pop("channel_id", None), kw.pop("visible_channel", None))
    return RecallQuery(audience, text, vector, plan, now, **kw)
