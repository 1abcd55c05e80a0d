"""Recall: assemble what the plan asks for into one ContextBundle.

The plan (from the archetype) says how many recent turns of this
conversation, how many episodes and above which similarity. Episodes that
are already in the recent-turns window are not repeated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from memory.archetypes import ContextPlan
from memory.conversation import ConversationStore, StoredMessage, require_scope
from memory.episodic import EpisodeHit, EpisodicStore
from memory.semantic import Fact, SemanticMemory


def novelty(nearest_similarity: float) -> float:
    """Seed 001's novelty, 1 - max cos, from a similarity on the (1 + cos) / 2 scale."""
    return min(max(2.0 * (1.0 - nearest_similarity), 0.0), 1.0)


@dataclass(frozen=True)
class MemoryItem:
    """One piece of recalled context, as shown to admins and the CLI."""

    kind: str  # 'turn' | 'episode' | 'fact'
    score: float | None
    text: str
    message_ids: tuple[int, ...]
    created_at: datetime | None

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "score": None if self.score is None else round(self.score, 4),
            "text": self.text,
            "message_ids": list(self.message_ids),
            "created_at": self.created_at.isoformat() if self.created_at else None,
        }


@dataclass(frozen=True)
class ContextBundle:
    scope: str
    plan: ContextPlan
    turns: list[StoredMessage] = field(default_factory=list)  # oldest first
    episodes: list[EpisodeHit] = field(default_factory=list)  # best first, above threshold
    nearest_similarity: float | None = None  # best episode similarity, thresholded or not
    facts: list[Fact] = field(default_factory=list)  # knowledge-graph facts, best first
    author_id: str | None = None  # whose message this context is for (GhostKG's "user" view)

    @property
    def novelty(self) -> float:
        """1 - max cosine to this scope's episodes, in [0, 1] (1.0 for an empty scope)."""
        return 1.0 if self.nearest_similarity is None else novelty(self.nearest_similarity)

    def items(self) -> list[MemoryItem]:
        """Facts, then episodes best first, then the recent turns newest first."""
        out = [
            MemoryItem("fact", f.retrievability, f"[{f.view(self.author_id)}] {f.sentence()}", f.message_ids, None)
            for f in self.facts
        ]
        out += [
            MemoryItem("episode", h.similarity, h.episode.content, h.episode.message_ids, h.episode.created_at)
            for h in self.episodes
        ]
        out += [
            MemoryItem("turn", None, f"{m.author_name}: {m.content}", (m.id,), m.created_at)
            for m in reversed(self.turns)
        ]
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
            },
            "items": [i.as_dict() for i in self.items()],
        }


class Recall:
    def __init__(self, conversations: ConversationStore, episodes: EpisodicStore,
                 semantic: SemanticMemory | None = None) -> None:
        self._conversations = conversations
        self._episodes = episodes
        self._semantic = semantic

    async def gather(
        self,
        scope: str,
        vector: np.ndarray,
        plan: ContextPlan,
        *,
        channel_id: str | None = None,
        before_message_id: int | None = None,
        extra_turns: Sequence[StoredMessage] = (),
        text: str | None = None,
        author_id: str | None = None,
        now: datetime | None = None,
    ) -> ContextBundle:
        """Recent turns of ``channel_id`` (before the current message) and episodes above threshold.

        ``extra_turns`` are messages known to the caller but maybe not yet
        written (a reply whose write is still queued); they are merged in.
        """
        require_scope(scope)
        # The graph walk (a spaCy parse, some lookups) does not depend on the rest: run it alongside.
        facts_task = None
        if self._semantic is not None and text is not None and plan.triple_depth > 0:
            facts_task = asyncio.create_task(self._semantic.facts_for(
                scope, text, author_id=author_id, depth=plan.triple_depth, now=now or datetime.now(UTC)))
        try:
            turns = await self._turns(scope, plan, channel_id, before_message_id, extra_turns)
            hits, nearest = await self._episodes_for(scope, vector, plan, turns, before_message_id)
            facts: list[Fact] = await facts_task if facts_task is not None else []
        finally:
            if facts_task is not None and not facts_task.done():
                facts_task.cancel()
        return ContextBundle(scope=scope, plan=plan, turns=turns, episodes=hits, nearest_similarity=nearest,
                             facts=facts, author_id=author_id)

    async def _turns(self, scope: str, plan: ContextPlan, channel_id: str | None, before_message_id: int | None,
                     extra_turns: Sequence[StoredMessage]) -> list[StoredMessage]:
        if channel_id is None or plan.turns <= 0:
            return []
        turns = await self._conversations.recent(scope, channel_id, plan.turns, before_id=before_message_id)
        stored = {m.external_id for m in turns}
        pending = [
            m for m in extra_turns
            if m.external_id not in stored and m.scope == scope and m.channel_id == channel_id
        ]
        if pending:
            turns = sorted(turns + pending, key=lambda m: m.created_at)[-plan.turns :]
        return turns

    async def _episodes_for(self, scope: str, vector: np.ndarray, plan: ContextPlan, turns: list[StoredMessage],
                            before_message_id: int | None) -> tuple[list[EpisodeHit], float | None]:
        if plan.vectors <= 0:
            return [], None
        window = {m.id for m in turns}
        # Ask for a few more so that skipping in-window episodes still leaves k.
        candidates = await self._episodes.search(scope, vector, plan.vectors + len(window))
        nearest = candidates[0].similarity if candidates else None
        hits = [
            h
            for h in candidates
            if h.similarity >= plan.similarity_threshold and not (set(h.episode.message_ids) & window)
            and h.episode.message_id != before_message_id
        ][: plan.vectors]
        return hits, nearest
