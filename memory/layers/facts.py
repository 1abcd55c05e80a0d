"""The facts layer (seeds 004 GhostKG and 001 SGC-RSS): knowledge-graph triples owned by people.

A thin adapter from the seam to ``SemanticMemory``: recall walks the graph
from the message's entities to the plan's depth (only facts the audience
may see); absorb extracts triples from the person's own words (never the
bot's reply) and reviews the facts that reached the prompt; an edit retracts
what the old text supported and absorbs the new text; its dream step prunes
faded facts and merges near-duplicate nodes.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg
import numpy as np

from memory.conversation import StoredMessage
from memory.layers.base import (
    MEMORY,
    AbsorbedTurn,
    BaseLayer,
    LayerStep,
    MemoryItem,
    RecallQuery,
    Section,
    StepResult,
    sources_of,
    told,
)
from memory.embed import similarity
from memory.semantic import Fact, SemanticMemory
from memory.sources import SourceRef


# After the episodes (20), in the prompt and in a ranking: on the hand-written dev split any fact ahead of
# them cost recall_any@10 (0.787 -> 0.777 with the two most similar), on the generated one it gained 0.017.
FACTS_PRIORITY = 30
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself)\b", re.IGNORECASE)


@dataclass(frozen=True)
class FactRelevance:
    """Which of the facts the walk reaches are recalled (chosen by bench/memory_eval.py on the dev splits).

    The walk from a question's things reaches everything linked to them: every fact about a person the
    question names. Ranked ahead of the episodes, a dozen of those in retrievability order pushed the
    evidence out of the top 10 on long conversations (recall_any@10 on the hand-written dev split 0.596,
    without the graph 0.787). So each fact's sentence is compared with the question and only the similar
    ones stay, most similar first; and the section ranks after the episodes (FACTS_PRIORITY).
    """

    # Facts taken from the walk (best retrievability first: the dozen recall returned before). Each one's
    # sentence vector is stored when it is written (sql/012); one written before is embedded here (MiniLM on 2
    # cores: 7 ms for one, 20 ms for 12, 48 ms for 40).
    candidates: int = 40  # 12 cut a person's own facts on a busy server (bench/dream_months.py: see docs/dream.md)
    # On the (1 + cos) / 2 scale; 0: no relevance ranking (retrievability order). Ranked ahead of the episodes,
    # 0.6-0.75 scored alike on the generated dev split and 0.75 best on the hand-written one; after them it
    # changes no ranking, so it is set for the prompt: low enough for "where does my sister live?" to keep
    # "ana's sister live in Lisbon" (0.75) and "ana has sister" (0.74), high enough to drop her cat (0.65).
    min_similarity: float = 0.7
    limit: int = 6  # facts recalled at most


class FactsLayer(BaseLayer):
    name = "facts"

    def __init__(
        self,
        semantic: SemanticMemory,
        *,
        prune_retrievability: float = 0.6,
        prune_confidence: float = 0.6,
        relevance: FactRelevance | None = None,
    ) -> None:
        self.semantic = semantic
        self._prune_retrievability = prune_retrievability
        self._prune_confidence = prune_confidence
        self.relevance = relevance or FactRelevance()

    async def recall(self, query: RecallQuery) -> Section | None:
        if query.plan.triple_depth <= 0:
            return None
        cfg = self.relevance
        facts = await self.semantic.facts_for(
            query.scope,
            query.text,
            author_id=query.author_id,
            depth=query.plan.triple_depth,
            now=query.now,
            visible_channel=query.audience.visible_channel,
            limit=cfg.candidates,
        )
        facts = [f for f in facts if not f.contradicted]  # a newer claim won: the old one is no longer so
        scored = [(f.retrievability, f) for f in facts]
        if cfg.min_similarity > 0 and facts:
            # The walk finds what is linked to the question's things; only what is about the question stays.
            missing = [f.sentence() for f in facts if f.vector is None]  # written before sql/012
            fresh = iter(await self.semantic.embedder.embed_many(missing) if missing else ())
            vectors = np.stack([f.vector if f.vector is not None else next(fresh) for f in facts])
            sims = similarity(vectors @ np.asarray(query.vector, dtype=np.float32))
            sims = np.maximum(sims, await self._first_person(query, facts))
            scored = sorted(
                ((float(s), f) for s, f in zip(sims, facts) if s >= cfg.min_similarity), key=lambda p: -p[0]
            )
        scored = scored[: cfg.limit]
        refs = await sources_of(self.semantic.pool, sorted({i for _, f in scored for i in f.message_ids}))
        items = tuple(_item(f, query.author_id, refs, score) for score, f in scored)
        return Section(self.name, "What {bot} knows", items, placement=MEMORY, priority=FACTS_PRIORITY)

    async def _first_person(self, query: RecallQuery, facts: Sequence[Fact]) -> np.ndarray:
        """For a question in the first person, each of the asker's own facts compared as the asker would say it
        ("where do I live?" with "I live in Lisbon", 0.73 on the (1 + cos) / 2 scale; with the stored "alex live in
        Lisbon", 0.60, under every threshold), like with like; 0 for the rest. One embedding batch, of the asker's
        facts only, and only when the question says I, me or my."""
        out = np.zeros(len(facts), dtype=np.float32)
        if query.author_id is None or not _FIRST_PERSON.search(query.text):
            return out
        person = f"user:{query.author_id}"
        mine = [i for i, f in enumerate(facts) if person in (f.subject_name, f.subject_owner)]
        if not mine:
            return out
        vectors = np.asarray(await self.semantic.embedder.embed_many([facts[i].said_by(person) for i in mine]))
        out[mine] = similarity(vectors @ np.asarray(query.vector, dtype=np.float32))
        return out

    async def prepare(self, texts: Sequence[str]) -> None:
        """The queries' mentions in one spaCy batch (recall parses each query otherwise)."""
        await asyncio.to_thread(self.semantic.extractor.mentions_many, texts)

    async def prepare_absorb(self, texts: Sequence[str]) -> None:
        """A batch of messages parsed ahead of their absorption (an import)."""
        await asyncio.to_thread(self.semantic.extractor.parse_many, texts)

    async def superseded(self, scope: str, message_ids: Sequence[int]) -> Mapping[int, frozenset[int]]:
        return await self.semantic.superseded(scope, message_ids)

    async def denied(
        self, scope: str, message_ids: Sequence[int], people: Sequence[str]
    ) -> Mapping[int, frozenset[str]]:
        found = await self.semantic.denied(scope, message_ids, people)
        return {m: frozenset(names) for m, names in found.items()}

    async def told_by(self, scope: str, author_id: str, now: datetime, *, visible_channel: str | None) -> Sequence[int]:
        # A message with a claim a newer one beat is not current ("I live in Porto, moved here in 2024" beside the
        # move to Lisbon, P7), as recall leaves it out (``SemanticMemory.superseded``).
        facts = await self.semantic.about_author(scope, author_id, now, visible_channel=visible_channel)
        lost = {i for f in facts if f.contradicted for i in f.message_ids}
        return sorted({i for f in facts if not f.contradicted for i in f.message_ids} - lost)

    async def held_from(
        self, scope: str, author_id: str, now: datetime, *, visible_channel: str | None
    ) -> Section | None:
        facts = await self.semantic.about_author(scope, author_id, now, visible_channel=visible_channel)
        items = tuple(
            MemoryItem(
                "fact",
                None,
                line := (
                    f"{f.sentence(readable=True)} (messages {', '.join(map(str, f.message_ids))}; "
                    f"recall {f.retrievability:.0%})"
                ),
                line,
                f.message_ids,
            )
            for f in facts
        )
        return Section(self.name, "Facts I hold from what you said (with the messages they came from)", items)

    async def pin(self, scope: str, message_id: int, now: datetime) -> int:
        return await self.semantic.pin(scope, message_id, now)

    def people_in(self, text: str) -> Sequence[str]:
        return self.semantic.extractor.people(text)  # the parse recall made of the message, cached

    async def stats(self, scope: str) -> Mapping[str, object]:
        out: dict[str, object] = {f"graph gate {k}": v for k, v in (await self.semantic.gate_counts(scope)).items()}
        out["graph edges"] = await self.semantic.pool.fetchval("SELECT count(*) FROM kg_edges WHERE scope = $1", scope)
        return out

    async def absorb(self, turn: AbsorbedTurn) -> None:
        used = turn.used.get(self.name, ())
        if used:
            await self.semantic.review(turn.message.scope, used, turn.now)
        # Only the person's own words: never the bot's reply, never what was just recalled.
        await self.semantic.absorb(turn.message, turn.now)

    async def edited(self, message: StoredMessage, conn: asyncpg.Connection) -> None:
        await self.semantic.retract(message.id, conn)

    async def after_edit(self, message: StoredMessage, now: datetime) -> None:
        """After the edit's transaction: the new text's facts (extraction runs outside the transaction)."""
        await self.semantic.absorb(message, now)

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        # Remove the support now (the trigger drops edges left without any), then the nodes those
        # edges leave alone: a person's own node and their things carry their name.
        scopes = [
            r["scope"]
            for r in await conn.fetch(
                "SELECT DISTINCT scope FROM messages WHERE id = ANY($1::bigint[]) ORDER BY scope", list(message_ids)
            )
        ]
        for scope in scopes:  # the graph's writers of these scopes wait (absorb takes the same lock), in one order
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('kg:' || $1, 0))", scope)
        n = await conn.fetchval(
            """SELECT count(*) FROM kg_edges e
               WHERE EXISTS (SELECT 1 FROM kg_edge_sources s WHERE s.edge_id = e.id
                             AND s.message_id = ANY($1::bigint[]))
                 AND NOT EXISTS (SELECT 1 FROM kg_edge_sources s WHERE s.edge_id = e.id
                                 AND NOT s.message_id = ANY($1::bigint[]))""",
            list(message_ids),
        )
        await conn.execute("DELETE FROM kg_edge_sources WHERE message_id = ANY($1::bigint[])", list(message_ids))
        await conn.execute(
            """DELETE FROM kg_nodes n WHERE n.scope = ANY($1::text[]) AND NOT EXISTS (
                   SELECT 1 FROM kg_edges e WHERE e.source_id = n.id OR e.target_id = n.id)""",
            scopes,
        )
        return {"facts": n}

    fast_track = 5  # edges of a relation the scope's graph needs before one more is admitted at once (the seed's
    # schema fast-track); bench/memory_eval.py --dream --ablation raises it out of reach

    def dream_steps(self) -> Sequence[tuple[str, LayerStep]]:
        return (("knowledge_graph_consolidation", self._consolidate), ("knowledge_graph", self._maintain))

    async def _consolidate(self, now: datetime, scope: str | None) -> StepResult:
        """Admit the routed tuples that gathered support (or whose relation the graph knows well)."""
        counts = await self.semantic.consolidate(now, scope=scope, fast_track=self.fast_track)
        notes = []
        if counts["contradictions"]:
            notes.append(f"{counts['contradictions']} contradicted fact(s) lost confidence to newer evidence")
        headline = told(
            (counts["admitted"] + counts["fast_tracked"], "fact{s} consolidated from what people said"),
            (counts["joined_existing"], "more mention{s} of facts already held"),
            (counts["contradictions"], "fact{s} contradicted by newer ones"),
        )
        return StepResult(counts=dict(counts), notes=notes, headline=headline)

    async def _maintain(self, now: datetime, scope: str | None) -> StepResult:
        """Prune faded, doubtful edges (never pinned ones) and merge near-duplicate nodes of one owner."""
        pruned = await self.semantic.prune(
            now, min_retrievability=self._prune_retrievability, min_confidence=self._prune_confidence, scope=scope
        )
        merged = await self.semantic.merge_near_duplicates(now, scope=scope)
        return StepResult(
            counts={"pruned_edges": pruned, "merged_nodes": merged},
            headline=told((pruned, "faded fact{s} let go"), (merged, "duplicate name{s} merged")),
        )


# GhostKG's views, as the prompt names them: the bot's own stance, what the asking person said, the world,
# what others said (a world fact needs no label).
VIEW_LABELS = {"self": "my own view", "user": "you told me", "others": "others said", "world": ""}
STANCE = 0.4  # |sentiment| from which a person's stance toward the thing is shown


def stance(f: Fact) -> str:
    """' (positive)' or ' (negative)' when someone's claim carries a clear stance; '' otherwise."""
    if f.subject_name == f.object_name or abs(f.sentiment) < STANCE:
        return ""
    return " (positive)" if f.sentiment > 0 else " (negative)"


def prompt_line(f: Fact, author_id: str | None) -> str:
    label = VIEW_LABELS[f.view(author_id)]
    line = f.sentence() + stance(f)
    return f"{label}: {line}" if label else line


def _item(f: Fact, author_id: str | None, refs: Mapping[int, SourceRef], score: float) -> MemoryItem:
    sources = tuple(refs[i] for i in f.message_ids if i in refs)
    return MemoryItem(
        "fact",
        score,
        f"[{f.view(author_id)}] {f.sentence(readable=True)}{stance(f)}",
        prompt_line(f, author_id),
        f.message_ids,
        None,
        ref=f.edge_id,
        sources=sources,
        payload=f,
    )
