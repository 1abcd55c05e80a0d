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

import asyncio
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
from memory.places.classifier import PER_CHANNEL, ChannelClassifier
from memory.places.codes import FRAME_WORDS, asks_for_directions, channel_label, content_words, name_text, topic_of
from memory.places.gate import GateConfig
from memory.places.graph import MERGE_SIMILARITY, PLACE_TTL, Observation, PlaceGraph, PlaceStore
from memory.places.planner import MODEL_WEIGHT, NAME_WEIGHT, Route, discussed, plan


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
_MODEL_CACHE = 256  # learned channel models kept, one per scope and audience
_ASKS_WHERE = re.compile(r"\b(?:where|which (?:channel|room|thread))\b", re.I)


def topic_text(topic: str | None) -> str:
    """A topic or problem someone asks about, as it can be embedded; InvalidInput when empty or too long."""
    text = check_text(topic, "the topic", MAX_TOPIC_CHARS, example="say what it is, e.g. 'docker networking'")
    if not any(ch.isalnum() for ch in text):  # "???" (what a lone surrogate becomes), "!!!": nothing to place
        raise InvalidInput("the topic has no words; say what it is, e.g. 'docker networking'")
    if not [w for w in content_words(text) if w not in FRAME_WORDS]:  # "where do I ask?", "help"
        raise InvalidInput("that asks where, but not about what; say the topic, e.g. 'docker networking'")
    return text


class PlacesLayer(BaseLayer):
    name = "places"

    def __init__(
        self,
        pool: asyncpg.Pool,
        embedder: Embedder,
        *,
        gate: GateConfig | None = None,
        merge_similarity: float = MERGE_SIMILARITY,
        ttl: timedelta = PLACE_TTL,
        name_weight: float = NAME_WEIGHT,
        model_weight: float = MODEL_WEIGHT,
    ) -> None:
        self.store = PlaceStore(pool, gate=gate)
        self.embedder = embedder
        self.merge_similarity = merge_similarity
        self.ttl = ttl
        self.name_weight = name_weight  # the channel name's share of a place's fit (0: names unused)
        self.model_weight = model_weight  # the learned model's share of it (0: no model is trained)
        self._name_vectors: dict[str, np.ndarray] = {}  # name text -> its unit vector
        # (scope, audience) -> ((memberships, newest id) it learned from, the model or None: too little to learn)
        self._models: dict[tuple[str, str | None], tuple[tuple[int, int], ChannelClassifier | None]] = {}
        self._training: dict[tuple[str, str | None], asyncio.Task] = {}
        self._generation = 0  # bumped when an edit or a forgetting makes every model suspect

    # --- recall --------------------------------------------------------------------------------------------

    async def recall(self, query: RecallQuery) -> Section | None:
        depth = getattr(query.plan, "place_depth", 0)
        if depth <= 0 and asks_for_directions(query.text):
            depth = 1  # "which channel is for X?" is this layer's question whatever the archetype planned
        if depth <= 0 or not query.text.strip():
            return None
        # A "where do I ask about X?" message is embedded again as X (blended with the whole message, as
        # where_to does); anything else (a problem, a question) is already what it is about: its own vector,
        # no second embedding before the reply.
        vector = (
            _blend(await self.embedder.embed(topic_of(query.text)), query.vector)
            if _ASKS_WHERE.search(query.text)
            else query.vector
        )
        graph = await self.store.graph(query.scope, query.audience.visible_channel)
        model = await self._model(query.scope, query.audience.visible_channel, wait=False)  # never delays a reply
        routes = plan(
            graph,
            vector,
            start_channel=query.audience.channel_id,
            k=depth,
            names=await self._names(graph),
            name_weight=self.name_weight,
            likelihoods=model.probabilities(vector) if model else None,
            model_weight=self.model_weight,
        )
        routes = [r for r in routes if not r.unsure]  # a small model repeats a wrong channel as if it knew
        if not routes:
            return None
        items = tuple(
            MemoryItem(
                "place", r.fit, _route_text(r), "Discussed in " + _route_text(r), (), ref=r.destination.id, payload=r
            )
            for r in routes
        )
        return Section(
            self.name, "Where this is discussed", items, placement=MEMORY, priority=80, meta={"limit": depth}
        )

    async def where_to(
        self, scope: str, topic: str, *, channel_id: str | None = None, visible_channel: str | None = None, k: int = 3
    ) -> list[Route]:
        """ "Where do I ask about ``topic``?": up to ``k`` routes (each to a different channel), best first, from
        ``channel_id`` for the audience of ``visible_channel`` (None: what everyone may see)."""
        vector = await self._topic_vector(scope, topic, k)
        graph = await self.store.graph(scope, visible_channel)
        model = await self._model(scope, visible_channel, wait=True)
        return plan(
            graph,
            vector,
            start_channel=channel_id,
            k=k,
            names=await self._names(graph),
            name_weight=self.name_weight,
            likelihoods=model.probabilities(vector) if model else None,
            model_weight=self.model_weight,
        )

    async def _model(self, scope: str, visible_channel: str | None, *, wait: bool) -> ChannelClassifier | None:
        """The audience's learned channel model, if one may be used: learned only from messages that are all
        still here (new ones may have come since; it is relearned in the background once they are a tenth of
        it). With none usable, ``wait`` learns one now; otherwise one is learned in the background and this
        answer goes without."""
        if not self.model_weight:
            return None
        if visible_channel is not None and not await self.store.has_restricted(scope, visible_channel):
            visible_channel = None  # this audience sees what everyone sees: one model serves them all
        key = (scope, visible_channel)
        cached = self._models.get(key)
        if cached is not None:
            (n, last), model = cached
            total, _, new = await self.store.memberships(scope, visible_channel, last)
            if total - new == n:  # nothing it learned from was forgotten since
                if new >= max(10, n // 10):
                    self._learn_later(key)
                return model
            del self._models[key]
        if wait:
            return await self._learn(key)
        self._learn_later(key)
        return None

    def _learn_later(self, key: tuple[str, str | None]) -> None:
        if key not in self._training:
            task = asyncio.create_task(self._learn(key))
            self._training[key] = task
            task.add_done_callback(lambda t: self._training.pop(key, None) if self._training.get(key) is t else None)

    async def _learn(self, key: tuple[str, str | None]) -> ChannelClassifier | None:
        generation = self._generation
        try:
            vectors, channels, version = await self.store.training_set(*key, PER_CHANNEL)
            model = await asyncio.to_thread(ChannelClassifier.train, vectors, channels)
        except Exception:  # the topic codes still answer; the next question tries again
            log.warning("learning the channel model of %s failed", key, exc_info=True)
            return None
        if generation == self._generation:  # no edit or forgetting since the read: keep it
            if len(self._models) >= _MODEL_CACHE:
                self._models.clear()
            self._models[key] = (version, model)
        return model

    async def close(self) -> None:
        """Cancel the models being learned (before the pool they read from closes)."""
        tasks = list(self._training.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _forget_models(self) -> None:
        self._generation += 1
        self._models.clear()

    async def where_discussed(
        self, scope: str, topic: str, *, visible_channel: str | None = None, k: int = 5
    ) -> list[Route]:
        """ "Where has ``topic`` been discussed?": the best-fitting place of each channel, best first."""
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

    async def signal(self, signal: Signal) -> None:
        """A person's "solved" mark on a person's message: its conversation ended well."""
        m = signal.message
        if signal.kind == "reaction" and signal.added and signal.verdict is True and m is not None and not m.is_bot:
            await self.resolved(m)

    async def resolved(self, message: StoredMessage) -> int | None:
        """A ✅ reaction (or a solved tag) on ``message``: its conversation ended well (the reactions cog calls
        this)."""
        return await self.store.mark_resolved(message)

    async def edited(self, message: StoredMessage, conn: asyncpg.Connection) -> None:
        self._forget_models()  # one may have learned from the old words, under the same message id
        await self.store.forgetting(conn, [message.id])

    async def after_edit(self, message: StoredMessage, now: datetime) -> None:
        self._forget_models()  # again, now the edit has committed: a model learned in between saw the old words
        await self.store.observe(message, await self.embedder.embed(message.content), now)

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        self._forget_models()
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
        return StepResult(counts={"places_merged": merged}, headline=told((merged, "place{s} merged")))

    async def ttl_step(self, now: datetime, scope: str | None) -> StepResult:
        dropped = await self.store.drop_unused(now, scope, self.ttl)
        notes = [f"{dropped} place(s) unused for {self.ttl.days} days dropped"] if dropped else []
        return StepResult(
            counts={"places_dropped": dropped}, notes=notes, headline=told((dropped, "unused place{s} dropped"))
        )


def _route_text(r: Route) -> str:
    hops = " → ".join(channel_label(p.channel_id) for p in r.places)
    return f"{hops}: {r.reason}"
