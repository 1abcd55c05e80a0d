"""The places layer (seed 001 SMPD): where things are discussed in this server, and how to get there.

Absorb assigns each person message to a place (a channel's topic code) and
integrates the path (memory.places.graph); the spatial gate decides what
each move does to the graph. Recall, when the archetype's plan asks for it
(``place_depth`` > 0), plans with A* from the person's channel and adds a
short "where this is discussed" note. ``where_to`` and ``where_discussed``
serve ``/whereto`` and ``hippobot places``. The dream merges similar places
and drops those unused for a TTL. Forgetting rebuilds what the messages
shaped. Everything is filtered on the audience: a restricted channel's
places and moves are seen only there.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import asyncpg
import numpy as np

from memory.conversation import StoredMessage, require_scope
from memory.embed import Embedder
from memory.errors import InvalidInput
from memory.fields import check_text
from memory.layers.base import MEMORY, AbsorbedTurn, BaseLayer, LayerStep, MemoryItem, RecallQuery, Section, StepResult
from memory.places.codes import channel_label, name_text, topic_of
from memory.places.gate import GateConfig
from memory.places.graph import MERGE_SIMILARITY, PLACE_TTL, Observation, PlaceGraph, PlaceStore
from memory.places.planner import NAME_WEIGHT, Route, discussed, plan


def _blend(topic_vector: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """A "where" question's topic (its frame words left out) and the whole question, as one direction. The
    topic alone loses context ("my coroutines run one after another"); the whole question keeps the frame.
    Right channel first on the dev splits, 13 + 65 questions: 70 with the topic alone, 71 with the whole
    question alone, 72 with both (bench/places_eval.py)."""
    v = np.asarray(topic_vector, dtype=np.float32) + np.asarray(whole, dtype=np.float32)
    return v / (np.linalg.norm(v) or 1.0)

log = logging.getLogger(__name__)

MAX_TOPIC_CHARS = 500
_NAME_CACHE = 4096  # channel-name vectors kept (names change rarely; a few per server)
_ASKS_WHERE = re.compile(r"\b(?:where|which (?:channel|room|thread))\b", re.I)


def topic_text(topic: str | None) -> str:
    """A topic or problem someone asks about, as it can be embedded; InvalidInput when empty or too long."""
    text = check_text(topic, "the topic", MAX_TOPIC_CHARS, example="say what it is, e.g. 'docker networking'")
    if not any(ch.isalnum() for ch in text):  # "???" (what a lone surrogate becomes), "!!!": nothing to place
        raise InvalidInput("the topic has no words; say what it is, e.g. 'docker networking'")
    return text


class PlacesLayer(BaseLayer):
    name = "places"

    def __init__(self, pool: asyncpg.Pool, embedder: Embedder, *, gate: GateConfig | None = None,
                 merge_similarity: float = MERGE_SIMILARITY, ttl: timedelta = PLACE_TTL,
                 name_weight: float = NAME_WEIGHT) -> None:
        self.store = PlaceStore(pool, gate=gate)
        self.embedder = embedder
        self.merge_similarity = merge_similarity
        self.ttl = ttl
        self.name_weight = name_weight  # the channel name's share of a place's fit (0: names unused)
        self._name_vectors: dict[str, np.ndarray] = {}  # name text -> its unit vector

    # --- recall --------------------------------------------------------------------------------------------

    async def recall(self, query: RecallQuery) -> Section | None:
        depth = getattr(query.plan, "place_depth", 0)
        if depth <= 0 or not query.text.strip():
            return None
        # A "where do I ask about X?" message is embedded again as X (blended with the whole message, as
        # where_to does); anything else (a problem, a question) is already what it is about: its own vector,
        # no second embedding before the reply.
        vector = (_blend(await self.embedder.embed(topic_of(query.text)), query.vector)
                  if _ASKS_WHERE.search(query.text) else query.vector)
        graph = await self.store.graph(query.scope, query.audience.visible_channel)
        routes = plan(graph, vector, start_channel=query.audience.channel_id, k=depth, names=await self._names(graph),
                      name_weight=self.name_weight)
        if not routes:
            return None
        items = tuple(MemoryItem("place", r.fit, _route_text(r), "Discussed in " + _route_text(r), (),
                                 ref=r.destination.id, payload=r) for r in routes)
        return Section(self.name, "Where this is discussed", items, placement=MEMORY, priority=80,
                       meta={"limit": depth})

    async def where_to(self, scope: str, topic: str, *, channel_id: str | None = None,
                       visible_channel: str | None = None, k: int = 3) -> list[Route]:
        """"Where do I ask about ``topic``?": up to ``k`` routes (each to a different channel), best first, from
        ``channel_id`` for the audience of ``visible_channel`` (None: what everyone may see)."""
        vector = await self._topic_vector(scope, topic, k)
        graph = await self.store.graph(scope, visible_channel)
        return plan(graph, vector, start_channel=channel_id, k=k, names=await self._names(graph),
                    name_weight=self.name_weight)

    async def where_discussed(self, scope: str, topic: str, *, visible_channel: str | None = None,
                              k: int = 5) -> list[Route]:
        """"Where has ``topic`` been discussed?": the best-fitting place of each channel, best first."""
        vector = await self._topic_vector(scope, topic, k)
        graph = await self.store.graph(scope, visible_channel)
        return discussed(graph, vector, k=k)

    async def _names(self, graph: PlaceGraph) -> dict[str, np.ndarray]:
        """Unit vectors of the graph's channel names, by channel id (embedded once per name, then cached)."""
        texts = {n.channel_id: t for n in graph.nodes.values() if (t := name_text(n.name))}
        missing = sorted(set(texts.values()) - self._name_vectors.keys())
        if missing and len(self._name_vectors) + len(missing) > _NAME_CACHE:
            self._name_vectors.clear()
            missing = sorted(set(texts.values()))
        if missing:
            for t, v in zip(missing, await self.embedder.embed_many(missing)):
                self._name_vectors[t] = np.asarray(v, dtype=np.float32) / (np.linalg.norm(v) or 1.0)
        return {c: self._name_vectors[t] for c, t in texts.items()}

    async def _topic_vector(self, scope: str, topic: str, k: int) -> np.ndarray:
        require_scope(scope)
        text = " ".join(topic_text(topic).split())
        if not 1 <= k <= 10:
            raise InvalidInput("ask for 1 to 10 places")
        topic_vector, whole = await self.embedder.embed_many([topic_of(text), text])
        return _blend(topic_vector, whole)

    # --- absorb, edits, forgetting -------------------------------------------------------------------------

    async def absorb(self, turn: AbsorbedTurn) -> None:
        await self.observe(turn.message, turn.vector, turn.now)

    async def observe(self, message: StoredMessage, vector: np.ndarray, now: datetime) -> Observation | None:
        return await self.store.observe(message, vector, now)

    async def resolved(self, message: StoredMessage) -> int | None:
        """A ✅ reaction (or a solved tag) on ``message``: its conversation ended well (the reactions cog calls
        this)."""
        return await self.store.mark_resolved(message)

    async def edited(self, message: StoredMessage, conn: asyncpg.Connection) -> None:
        await self.store.forgetting(conn, [message.id])

    async def after_edit(self, message: StoredMessage, now: datetime) -> None:
        await self.store.observe(message, await self.embedder.embed(message.content), now)

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        return await self.store.forgetting(conn, message_ids)

    # --- stats and dream -----------------------------------------------------------------------------------

    async def stats(self, scope: str) -> dict[str, int]:
        """For /memory stats: places, edges and the spatial gate's counters."""
        counts = await self.store.counts(scope)
        counts.update({f"spatial gate {k}": v for k, v in (await self.store.gate_counts(scope)).items()})
        return counts

    def dream_steps(self) -> Sequence[tuple[str, LayerStep]]:
        return (("place_merge", self.merge_step), ("place_ttl", self.ttl_step))

    async def merge_step(self, now: datetime, scope: str | None) -> StepResult:
        merged = await self.store.merge_similar(scope, self.merge_similarity)
        return StepResult(counts={"places_merged": merged})

    async def ttl_step(self, now: datetime, scope: str | None) -> StepResult:
        dropped = await self.store.drop_unused(now, scope, self.ttl)
        notes = [f"{dropped} place(s) unused for {self.ttl.days} days dropped"] if dropped else []
        return StepResult(counts={"places_dropped": dropped}, notes=notes)


def _route_text(r: Route) -> str:
    hops = " → ".join(channel_label(p.channel_id) for p in r.places)
    return f"{hops}: {r.reason}"
