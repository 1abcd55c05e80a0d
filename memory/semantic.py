"""Semantic memory: a knowledge graph of triples with FSRS-6 forgetting and an admission gate.

Seeds 004 (GhostKG) and 001 (SGC-RSS). Statements in people's messages are
turned into triples (memory/extract.py) after the reply; each passes the
relational gate (seed 001, 5.6):

    S = w_conf * confidence + w_schema * schema_fit + w_rec * recency - w_hub * degree_penalty

An edge that exists is aggregated (more evidence, fresher, a review); a new
one is inserted when S >= threshold; otherwise the tuple is routed to
episodic memory (its message already is an episode) and the decision, with
the tuple, is logged. Nothing is dropped; every decision is in kg_gate_log.

Nodes and edges carry an FSRS-6 card from the ``fsrs`` package: saying a fact
again or using it in a reply is a review; retrievability falls with time and
ranks what is recalled. Retrieval starts from the entities of the incoming
message and walks the plan's ``triple_depth`` hops, within one scope.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import numpy as np
from fsrs import Card, Rating, Scheduler, State

from memory.conversation import StoredMessage, require_scope
from memory.embed import Embedder
from memory.extract import BOT, USER, Triple, TripleExtractor

COMMON_RELATIONS = {"has", "is", "like", "love", "hate", "named", "live_in", "work_at", "work_as", "play", "adopt",
                    "not_like", "enjoy", "prefer", "study", "speak", "visit", "move_to", "grow_up_in"}
_CARD_COLUMNS = "fsrs_state, fsrs_step, stability, difficulty, due, last_review, reps"


@dataclass(frozen=True)
class GateConfig:
    enabled: bool = True
    threshold: float = 0.6
    w_conf: float = 0.6
    w_schema: float = 0.5
    w_rec: float = 0.2
    w_hub: float = 0.4
    max_degree: int = 64
    recency_days: float = 30.0
    min_confidence: float = 0.5  # seed 001's tuple_conf_min: below it a tuple never enters the graph directly


@dataclass(frozen=True)
class GateDecision:
    action: str  # insert | aggregate | route_to_episodic
    reason: str
    score: float | None
    triple: Triple


@dataclass(frozen=True)
class Fact:
    edge_id: int
    subject: str
    subject_name: str  # node key: 'user:<id>', 'bot', or an entity
    relation: str
    object: str
    object_name: str
    sentiment: float
    confidence: float
    evidence: int
    retrievability: float
    message_ids: tuple[int, ...]
    speakers: tuple[str, ...]
    hops: int = 0

    def view(self, author_id: str | None) -> str:
        """GhostKG's views: what the bot holds, what this user said of themselves, the world, others."""
        if self.subject_name == "bot":
            return "self"
        if author_id is not None and self.subject_name == f"user:{author_id}":
            return "user"
        if self.subject_name.startswith("user:"):
            return "others"
        return "world"

    def sentence(self) -> str:
        """The fact in words, from the bot's point of view ("I ..." for its own)."""
        subject = "I" if self.subject_name == "bot" else self.subject
        relation = self.relation.replace("not_", "not ").replace("_", " ")
        obj = "me" if self.object_name == "bot" else self.object
        return f"{subject} {relation} {obj}"


@dataclass
class GateCounters:
    attempts: int = 0
    inserted: int = 0
    aggregated: int = 0
    routed_to_episodic: int = 0

    def add(self, action: str) -> None:
        self.attempts += 1
        if action == "insert":
            self.inserted += 1
        elif action == "aggregate":
            self.aggregated += 1
        else:
            self.routed_to_episodic += 1


def _card(row: asyncpg.Record | dict[str, Any], card_id: int) -> Card:
    return Card(card_id=card_id, state=State(row["fsrs_state"]), step=row["fsrs_step"], stability=row["stability"],
                difficulty=row["difficulty"], due=row["due"], last_review=row["last_review"])


def _card_values(card: Card) -> tuple[int, int | None, float | None, float | None, datetime, datetime | None]:
    return (int(card.state), card.step, card.stability, card.difficulty, card.due, card.last_review)


@dataclass
class SemanticMemory:
    pool: asyncpg.Pool
    extractor: TripleExtractor
    embedder: Embedder
    gate: GateConfig = field(default_factory=GateConfig)
    bot_name: str = "hippobot"
    fsrs: Scheduler = field(default_factory=lambda: Scheduler(enable_fuzzing=False))
    counters: GateCounters = field(default_factory=GateCounters)
    # A capable LLM may extract instead of spaCy (None: spaCy only). Empty answers fall back to spaCy.
    llm_extract: Callable[[str], Awaitable[list[Triple]]] | None = None

    # --- writing ----------------------------------------------------------------

    async def absorb(self, message: StoredMessage, now: datetime) -> list[GateDecision]:
        """Extract triples from a person's message and pass each through the gate. Never for bot messages."""
        require_scope(message.scope)
        if message.is_bot:
            return []
        triples = await self._extract(message.content)
        if not triples:
            return []
        names = sorted({n for t in triples for n, d in ((t.subject, t.subject_display), (t.object, t.object_display))
                        if n not in (USER, BOT)})
        vectors = dict(zip(names, await self.embedder.embed_many(names))) if names else {}
        decisions = []
        async with self.pool.acquire() as conn, conn.transaction():
            for triple in triples:
                decision = await self._admit(conn, message, triple, vectors, now)
                decisions.append(decision)
                self.counters.add(decision.action)
        return decisions

    async def _extract(self, text: str) -> list[Triple]:
        if self.llm_extract is not None and not await asyncio.to_thread(self.extractor.is_question, text):
            triples = await self.llm_extract(text)
            if triples:
                return triples
        return await asyncio.to_thread(self.extractor.extract, text)

    async def _node(self, conn: asyncpg.Connection, scope: str, key: str, display: str, message: StoredMessage,
                    vectors: dict[str, np.ndarray], now: datetime) -> int:
        if key == USER:
            name, display, kind = f"user:{message.author_id}", message.author_name, "person"
        elif key == BOT:
            name, display, kind = "bot", self.bot_name, "bot"
        else:
            name, kind = key, "entity"
        row = await conn.fetchrow("SELECT id FROM kg_nodes WHERE scope = $1 AND name = $2", scope, name)
        if row is not None:
            return row["id"]
        card, _ = self.fsrs.review_card(Card(), Rating.Good, now)
        return await conn.fetchval(
            f"""INSERT INTO kg_nodes (scope, name, display, kind, embedding, {_CARD_COLUMNS}, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 1, $12)
                ON CONFLICT (scope, name) DO UPDATE SET display = kg_nodes.display RETURNING id""",
            scope, name, display, kind, vectors.get(key), *_card_values(card), now,
        )

    async def _admit(self, conn: asyncpg.Connection, message: StoredMessage, t: Triple,
                     vectors: dict[str, np.ndarray], now: datetime) -> GateDecision:
        scope = message.scope
        source = await self._node(conn, scope, t.subject, t.subject_display, message, vectors, now)
        target = await self._node(conn, scope, t.object, t.object_display, message, vectors, now)
        edge = await conn.fetchrow(
            f"SELECT id, confidence, sentiment, evidence_count, {_CARD_COLUMNS} FROM kg_edges "
            "WHERE scope = $1 AND source_id = $2 AND relation = $3 AND target_id = $4",
            scope, source, t.relation, target,
        )
        payload = {"subject": t.subject_display, "relation": t.relation, "object": t.object_display,
                   "confidence": t.confidence, "sentiment": t.sentiment}
        if edge is not None:
            card, _ = self.fsrs.review_card(_card(edge, edge["id"]), Rating.Good, now)
            n = edge["evidence_count"]
            await conn.execute(
                f"""UPDATE kg_edges SET evidence_count = evidence_count + 1, last_seen = $2,
                        confidence = GREATEST(confidence, $3), sentiment = (sentiment * $4 + $5) / ($4 + 1),
                        ({_CARD_COLUMNS}) = ($6, $7, $8, $9, $10, $11, reps + 1)
                    WHERE id = $1""",
                edge["id"], now, t.confidence, n, t.sentiment, *_card_values(card),
            )
            await self._source(conn, edge["id"], message)
            return await self._log(conn, message, GateDecision("aggregate", "edge exists", None, t), payload, now)
        score, parts = await self._score(conn, scope, source, t, message, now)
        if self.gate.enabled and (score < self.gate.threshold or t.confidence < self.gate.min_confidence):
            reason = (f"confidence {t.confidence:.2f} < {self.gate.min_confidence:.2f}"
                      if t.confidence < self.gate.min_confidence
                      else f"score {score:.2f} < {self.gate.threshold:.2f} ({parts})")
            return await self._log(conn, message, GateDecision("route_to_episodic", reason, score, t), payload, now)
        card, _ = self.fsrs.review_card(Card(), Rating.Good, now)
        edge_id = await conn.fetchval(
            f"""INSERT INTO kg_edges (scope, source_id, relation, target_id, sentiment, confidence, first_seen,
                                      last_seen, {_CARD_COLUMNS})
                VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, $12, $13, 1) RETURNING id""",
            scope, source, t.relation, target, t.sentiment, t.confidence, message.created_at, *_card_values(card),
        )
        await self._source(conn, edge_id, message)
        reason = f"score {score:.2f} >= {self.gate.threshold:.2f} ({parts})" if self.gate.enabled else "gate off"
        return await self._log(conn, message, GateDecision("insert", reason, score, t), payload, now)

    async def _score(self, conn: asyncpg.Connection, scope: str, source: int, t: Triple, message: StoredMessage,
                     now: datetime) -> tuple[float, str]:
        g = self.gate
        seen = await conn.fetchval("SELECT count(*) FROM kg_edges WHERE scope = $1 AND relation = $2", scope, t.relation)
        schema = 1.0 if seen else (0.7 if t.relation.removeprefix("not_") in COMMON_RELATIONS else 0.4)
        age_days = max((now - message.created_at).total_seconds() / 86400, 0.0)
        recency = math.exp(-age_days / g.recency_days)
        degree = await conn.fetchval(
            "SELECT count(*) FROM kg_edges WHERE source_id = $1 OR target_id = $1", source)
        hub = min(degree / g.max_degree, 1.0)
        score = g.w_conf * t.confidence + g.w_schema * schema + g.w_rec * recency - g.w_hub * hub
        return score, f"conf {t.confidence:.2f}, schema {schema:.2f}, recency {recency:.2f}, hub {hub:.2f}"

    async def _source(self, conn: asyncpg.Connection, edge_id: int, message: StoredMessage) -> None:
        await conn.execute(
            "INSERT INTO kg_edge_sources (edge_id, message_id, speaker_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            edge_id, message.id, message.author_id,
        )

    async def _log(self, conn: asyncpg.Connection, message: StoredMessage, d: GateDecision,
                   payload: dict[str, Any], now: datetime) -> GateDecision:
        await conn.execute(
            """INSERT INTO kg_gate_log (scope, message_id, action, reason, score, payload, decided_at)
               VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)""",
            message.scope, message.id, d.action, d.reason, d.score, payload, now,
        )
        return d

    # --- reading ------------------------------------------------------------------------

    async def facts_for(self, scope: str, text: str, *, author_id: str | None, depth: int, now: datetime,
                        limit: int = 12) -> list[Fact]:
        """Facts around the entities of ``text``, ``depth`` hops out, best first (retrievability x weight)."""
        require_scope(scope)
        if depth <= 0:
            return []
        entities = await asyncio.to_thread(self.extractor.entities, text)
        names = []
        for e in entities:
            if e == USER:
                if author_id is not None:
                    names.append(f"user:{author_id}")
            elif e == BOT:
                names.append("bot")
            else:
                names.append(e)
        seeds: dict[int, int] = {}
        found: set[str] = set()
        if names:
            for r in await self.pool.fetch(
                    "SELECT id, name FROM kg_nodes WHERE scope = $1 AND name = ANY($2::text[])", scope, names):
                seeds[r["id"]] = 0
                found.add(r["name"])
        # Names said differently ("kitty" for "cat"): nearest node by embedding. Skipped when the
        # scope's graph is empty, since embedding the names is most of this step's cost.
        plain = [n for n in names if not n.startswith("user:") and n != "bot" and n not in found]
        if plain and await self.pool.fetchval(
                "SELECT EXISTS (SELECT 1 FROM kg_nodes WHERE scope = $1 AND embedding IS NOT NULL)", scope):
            for vector in await self.embedder.embed_many(plain):
                row = await self.pool.fetchrow(
                    """SELECT id, 1 - (embedding <=> $2) / 2 AS sim FROM kg_nodes
                       WHERE scope = $1 AND embedding IS NOT NULL ORDER BY embedding <=> $2 LIMIT 1""",
                    scope, vector)
                if row is not None and row["sim"] >= 0.9:
                    seeds.setdefault(row["id"], 0)
        if not seeds:
            return []
        hops = dict(seeds)
        frontier = set(seeds)
        edges: dict[int, int] = {}
        for hop in range(1, depth + 1):
            rows = await self.pool.fetch(
                """SELECT id, source_id, target_id FROM kg_edges
                   WHERE scope = $1 AND (source_id = ANY($2::bigint[]) OR target_id = ANY($2::bigint[]))""",
                scope, list(frontier))
            nxt = set()
            for r in rows:
                edges.setdefault(r["id"], hop)
                for node in (r["source_id"], r["target_id"]):
                    if node not in hops:
                        hops[node] = hop
                        nxt.add(node)
            frontier = nxt
            if not frontier:
                break
        facts = await self._facts(scope, list(edges), now, hops=edges)
        facts.sort(key=lambda f: f.retrievability * f.confidence * (1 + math.log(f.evidence)) * 0.8 ** (f.hops - 1),
                   reverse=True)
        return facts[:limit]

    async def _facts(self, scope: str, edge_ids: Sequence[int], now: datetime,
                     hops: dict[int, int] | None = None) -> list[Fact]:
        if not edge_ids:
            return []
        rows = await self.pool.fetch(
            f"""SELECT e.id, e.relation, e.sentiment, e.confidence, e.evidence_count,
                       {', '.join('e.' + c for c in _CARD_COLUMNS.split(', '))},
                       s.display AS s_display, s.name AS s_name, t.display AS t_display, t.name AS t_name,
                       array_agg(src.message_id ORDER BY src.message_id) AS message_ids,
                       array_agg(DISTINCT src.speaker_id) AS speakers
                FROM kg_edges e JOIN kg_nodes s ON s.id = e.source_id JOIN kg_nodes t ON t.id = e.target_id
                JOIN kg_edge_sources src ON src.edge_id = e.id
                WHERE e.scope = $1 AND e.id = ANY($2::bigint[])
                GROUP BY e.id, s.id, t.id""",
            scope, list(edge_ids))
        return [
            Fact(edge_id=r["id"], subject=r["s_display"], subject_name=r["s_name"], relation=r["relation"],
                 object=r["t_display"], object_name=r["t_name"], sentiment=r["sentiment"],
                 confidence=r["confidence"], evidence=r["evidence_count"],
                 retrievability=self.retrievability(r, r["id"], now), message_ids=tuple(r["message_ids"]),
                 speakers=tuple(r["speakers"]), hops=(hops or {}).get(r["id"], 0))
            for r in rows
        ]

    def retrievability(self, row: asyncpg.Record | dict[str, Any], card_id: int, now: datetime) -> float:
        if row["last_review"] is None:
            return 1.0
        return float(self.fsrs.get_card_retrievability(_card(row, card_id), now))

    async def review(self, scope: str, edge_ids: Sequence[int], now: datetime,
                     conn: asyncpg.Connection | None = None) -> None:
        """Facts used in a reply were remembered: an FSRS review (Good) of each edge and its nodes."""
        require_scope(scope)
        if not edge_ids:
            return
        db = conn or self.pool
        rows = await db.fetch(f"SELECT id, source_id, target_id, {_CARD_COLUMNS} FROM kg_edges "
                              "WHERE scope = $1 AND id = ANY($2::bigint[])", scope, list(edge_ids))
        nodes: set[int] = set()
        for r in rows:
            card, _ = self.fsrs.review_card(_card(r, r["id"]), Rating.Good, now)
            await db.execute(f"UPDATE kg_edges SET ({_CARD_COLUMNS}) = ($2, $3, $4, $5, $6, $7, reps + 1) "
                             "WHERE id = $1", r["id"], *_card_values(card))
            nodes |= {r["source_id"], r["target_id"]}
        for r in await db.fetch(f"SELECT id, {_CARD_COLUMNS} FROM kg_nodes WHERE id = ANY($1::bigint[])", list(nodes)):
            card, _ = self.fsrs.review_card(_card(r, r["id"]), Rating.Good, now)
            await db.execute(f"UPDATE kg_nodes SET ({_CARD_COLUMNS}) = ($2, $3, $4, $5, $6, $7, reps + 1) "
                             "WHERE id = $1", r["id"], *_card_values(card))

    async def about_author(self, scope: str, author_id: str, now: datetime, limit: int = 50) -> list[Fact]:
        """Facts that this person's messages support (for /whatdoyouknow)."""
        require_scope(scope)
        rows = await self.pool.fetch(
            """SELECT DISTINCT e.id FROM kg_edges e JOIN kg_edge_sources s ON s.edge_id = e.id
               WHERE e.scope = $1 AND s.speaker_id = $2 LIMIT $3""", scope, author_id, limit)
        return await self._facts(scope, [r["id"] for r in rows], now)

    async def gate_counts(self, scope: str) -> dict[str, int]:
        rows = await self.pool.fetch("SELECT action, count(*) AS n FROM kg_gate_log WHERE scope = $1 GROUP BY action",
                                     scope)
        counts = {r["action"]: r["n"] for r in rows}
        return {"attempts": sum(counts.values()), "inserted": counts.get("insert", 0),
                "aggregated": counts.get("aggregate", 0), "routed_to_episodic": counts.get("route_to_episodic", 0)}

    # --- maintenance (dream steps) ---------------------------------------------------------------

    async def prune(self, now: datetime, *, min_retrievability: float, min_confidence: float) -> int:
        """Delete unpinned edges whose retrievability and confidence both fell below the thresholds."""
        rows = await self.pool.fetch(
            f"SELECT id, confidence, {_CARD_COLUMNS} FROM kg_edges WHERE NOT pinned AND confidence < $1",
            min_confidence)
        doomed = [r["id"] for r in rows if self.retrievability(r, r["id"], now) < min_retrievability]
        if doomed:
            await self.pool.execute("DELETE FROM kg_edges WHERE id = ANY($1::bigint[])", doomed)
        await self.pool.execute(
            "DELETE FROM kg_nodes n WHERE NOT EXISTS (SELECT 1 FROM kg_edges e WHERE e.source_id = n.id "
            "OR e.target_id = n.id) AND n.created_at < $1", now - timedelta(days=1))
        return len(doomed)

    async def merge_near_duplicates(self, *, similarity: float = 0.97) -> int:
        """Merge entity nodes of one scope whose names embed as near-duplicates ("cats"/"cat")."""
        pairs = await self.pool.fetch(
            """SELECT a.id AS keep, b.id AS drop FROM kg_nodes a JOIN kg_nodes b
                 ON a.scope = b.scope AND a.id < b.id AND a.kind = 'entity' AND b.kind = 'entity'
               WHERE 1 - (a.embedding <=> b.embedding) / 2 >= $1""", similarity)
        merged = 0
        gone: set[int] = set()
        for p in pairs:
            if p["keep"] in gone or p["drop"] in gone:
                continue
            async with self.pool.acquire() as conn, conn.transaction():
                for column, other in (("source_id", "target_id"), ("target_id", "source_id")):
                    # move edges unless the same edge already exists on the kept node
                    await conn.execute(
                        f"""UPDATE kg_edges e SET {column} = $1 WHERE {column} = $2 AND NOT EXISTS (
                               SELECT 1 FROM kg_edges x WHERE x.{column} = $1 AND x.{other} = e.{other}
                               AND x.relation = e.relation)""", p["keep"], p["drop"])
                await conn.execute("DELETE FROM kg_nodes WHERE id = $1", p["drop"])
            gone.add(p["drop"])
            merged += 1
        return merged
