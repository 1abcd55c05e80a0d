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

Ownership: a person's own things are their own nodes (owner 'user:<id>'),
so two people's "my sister" never meet; "your X" is the bot's (owner 'bot');
world things are shared (owner ''). Audiences: each edge's sources keep the
visibility of the message they came from, and a reader sees an edge only when
one of its sources is visible to them (public, or said in their channel).
Absorbing a message is idempotent, and ``retract`` takes back what one
message said (an edit: retract the old text, absorb the new).

Nothing is cached in memory here (only running gate counters): every read
goes to the database, so forgetting needs no cache eviction in this module.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import numpy as np
from fsrs import Card, Rating, Scheduler, State

from memory.conversation import StoredMessage, require_scope
from memory.embed import Embedder
from memory.salience import content_words
from memory.vectors import vec
from memory.extract import BOT, USER, Mention, Triple, TripleExtractor, owned_name

log = logging.getLogger(__name__)

COMMON_RELATIONS = {
    "has",
    "is",
    "like",
    "love",
    "hate",
    "named",
    "live_in",
    "work_at",
    "work_as",
    "play",
    "adopt",
    "not_like",
    "enjoy",
    "prefer",
    "study",
    "speak",
    "visit",
    "move_to",
    "grow_up_in",
}
_CARD_COLUMNS = "fsrs_state, fsrs_step, stability, difficulty, due, last_review, reps"
# Relations a thing has one value of at a time: a new value contradicts the old one.
ONE_VALUED_RELATIONS = frozenset({"live_in", "work_at", "work_as", "named"})
# Where someone lives, said either way ("I live in Porto", "I moved to Porto"): one value across the group.
LIVING = frozenset({"live_in", "move_to", "relocate_to", "move_into"})
# Where someone no longer lives ("I moved from Lisbon", "I moved out of Lisbon"): contradicts living there.
LEFT = frozenset({"move_from", "move_out_of", "relocate_from", "leave"})
# Where someone no longer works ("I quit the bank", "I left my job at the bank", memory.extract): contradicts
# working there, as LEFT does living there. A new place of work contradicts the old by ONE_VALUED_RELATIONS.
# "leave" a place: one lived or worked at, either; a job turned down is one never taken ("I turned down Spotify")
QUIT = frozenset({"quit", "resign_from", "leave", "turn_down"})
# Where someone works, said either way ("I work at the bank", "I teach at Riverside college"): one value across the
# group, as LIVING is (P9: "ben teaches at school" stayed beside the newer "ben teaches at Riverside college").
WORKING = frozenset({"work_at", "teach_at"})


def _introduces(triple: Triple, author_name: str) -> bool:
    """Whether ``triple`` is the speaker saying their own name ("hi! I am ana"): the message's author says it
    already, and as a fact it kept a message current after its only other fact was corrected ("I work at a bank"
    beside "I got the job at the museum"; ``superseded``)."""
    return (
        triple.subject == USER
        and triple.relation in ("is", "named")
        and triple.object_owner is None
        and triple.object.lower() == author_name.strip().lower()
    )


def rivals(relation: str) -> tuple[list[str], list[str]]:
    """The relations a new ``relation`` edge contradicts: (those that contradict it with another target, those
    that contradict it with the same target). "not_like jazz" / "like jazz"; "live_in Porto" / "live_in Lisbon"
    and "move_to Lisbon"; "move_from Lisbon" / "live_in Lisbon" (and the other way round); "quit bank" / "work_at
    bank" (and the other way round: hired back)."""
    same = [relation.removeprefix("not_") if relation.startswith("not_") else "not_" + relation]
    other: list[str] = []
    if relation in LIVING:
        other, same = sorted(LIVING), same + sorted(LEFT)
    elif relation in LEFT | QUIT:
        same = same + (sorted(LIVING) if relation in LEFT else []) + (sorted(WORKING) if relation in QUIT else [])
    elif relation in WORKING:
        other, same = sorted(WORKING), same + sorted(QUIT)
    elif relation in ONE_VALUED_RELATIONS:
        other = [relation]
    return other, same


REHEARSAL_WINDOW = timedelta(hours=12)  # an episode replayed this long before consolidation was replayed tonight
_MESSAGE_FIELDS = (
    "id",
    "scope",
    "source",
    "external_id",
    "channel_id",
    "author_id",
    "author_name",
    "is_bot",
    "content",
    "derived_from_id",
    "created_at",
    "visible_in",
    "thread_parent_id",
)
WORLD, BOT_OWNER = "", "bot"  # kg_nodes.owner of shared things and of the bot's own; a person's is 'user:<id>'


def _visible(edge: str, channel_param: str) -> str:
    """SQL: edge ``edge`` has a source the audience may see (public, or said in its channel)."""
    return (
        f"EXISTS (SELECT 1 FROM kg_edge_sources vs WHERE vs.edge_id = {edge}.id "
        f"AND (vs.visible_in IS NULL OR vs.visible_in = {channel_param}::text))"
    )


def _fact_rows(with_clause: str, edges: str, hop: str = "0") -> str:
    """SQL: the edges of scope $1 that ``edges`` selects, as fact rows (both ends, their owners' names, FSRS
    cards, and only the sources audience $3 may see), each with ``hop``; ``with_clause`` may define what
    ``edges`` and ``hop`` read."""
    cards = _CARD_COLUMNS.split(", ")
    return f"""{with_clause}SELECT e.id, e.relation, e.sentiment, e.confidence, e.evidence_count, e.embedding,
                   e.contradicted_at IS NOT NULL AS contradicted,
                   {", ".join("e." + c for c in cards)},
                   s.display AS s_display, s.name AS s_name, s.owner AS s_owner, so.display AS s_owner_name,
                   t.display AS t_display, t.name AS t_name, t.owner AS t_owner, tod.display AS t_owner_name,
                   {", ".join(f"s.{c} AS s_{c}" for c in cards)},
                   {", ".join(f"t.{c} AS t_{c}" for c in cards)},
                   array_agg(src.message_id ORDER BY src.message_id) AS message_ids,
                   array_agg(DISTINCT src.speaker_id) AS speakers, {hop} AS hop
            FROM kg_edges e JOIN kg_nodes s ON s.id = e.source_id JOIN kg_nodes t ON t.id = e.target_id
            LEFT JOIN kg_nodes so ON so.scope = s.scope AND so.owner = '' AND so.name = s.owner
            LEFT JOIN kg_nodes tod ON tod.scope = t.scope AND tod.owner = '' AND tod.name = t.owner
            JOIN kg_edge_sources src ON src.edge_id = e.id
                 AND (src.visible_in IS NULL OR src.visible_in = $3::text)
            WHERE e.scope = $1 AND {edges}
            GROUP BY e.id, s.id, t.id, so.display, tod.display"""


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
    # Whose each end is ('' shared, 'bot', 'user:<id>') and the owner's display name.
    subject_owner: str = WORLD
    object_owner: str = WORLD
    subject_owner_name: str = ""
    object_owner_name: str = ""
    vector: np.ndarray | None = field(default=None, compare=False, repr=False)  # sentence()'s, when stored
    node_retrievability: float = 1.0  # the mean of its two nodes' FSRS cards (GhostKG's node cards)
    contradicted: bool = False  # a newer claim won over it (``SemanticMemory._contradict``): no longer current

    def view(self, author_id: str | None) -> str:
        """GhostKG's views: what the bot holds, what this user said of themselves (and their things),
        the world, others."""
        if BOT_OWNER in (self.subject_name, self.subject_owner):
            return "self"
        if author_id is not None and f"user:{author_id}" in (self.subject_name, self.subject_owner):
            return "user"
        if self.subject_name.startswith("user:") or self.subject_owner.startswith("user:"):
            return "others"
        return "world"

    def sentence(self, *, readable: bool = False) -> str:
        """The fact in words, from the bot's point of view ("I ..." for its own, "my X" for its things);
        a person's things carry the person's name ("ana's sister"), so two sisters read apart. The relation
        stays as the graph keeps it ("tom work as nurse": the words its vector and the reader's prompt lines
        were made from) unless ``readable``: then its verb agrees with the subject ("tom works as nurse", "ana
        does not like olives"), as shown to people."""
        subject = (
            "I" if self.subject_name == "bot" else _owned(self.subject, self.subject_owner, self.subject_owner_name)
        )
        relation = self.relation.replace("not_", "not ").replace("_", " ")
        if readable and subject != "I":
            relation = third_person(relation)
        if self.object_name == "bot":
            obj = "me"
        elif self.object_owner and self.object_owner == self.subject_name and not self.subject_owner:
            obj = self.object  # "ana has sister", not "ana has ana's sister"
        else:
            obj = _owned(self.object, self.object_owner, self.object_owner_name)
        return f"{subject} {relation} {obj}"

    def said_by(self, person: str) -> str:
        """The fact as ``person`` (a node key, 'user:<id>') would say it: "I live in Lisbon", "my dog named
        Biscuit". A question in the first person ("where do I live?") is compared with this, like with like: the
        stored sentence's name ("alex live in Lisbon") is no word of the question."""
        return self._spoken(person, "I", "my", "me", bot="you")

    def _spoken(self, person: str, i: str, my: str, me: str, *, bot: str) -> str:
        """The fact with ``person`` as ``i``/``my``/``me`` and the bot as ``bot``."""
        if person not in (self.subject_name, self.subject_owner, self.object_name, self.object_owner):
            return self.sentence()
        if self.subject_name == person:
            subject = i
        elif self.subject_owner == person:
            subject = f"{my} {self.subject}"
        else:
            subject = (
                bot if self.subject_name == "bot" else _owned(self.subject, self.subject_owner, self.subject_owner_name)
            )
        relation = self.relation.replace("not_", "not ").replace("_", " ")
        if self.object_name == person:
            obj = me
        elif self.object_owner == person:
            obj = self.object if self.subject_name == person else f"{my} {self.object}"
        elif self.object_name == "bot":
            obj = "me" if bot == "I" else bot
        else:
            obj = _owned(self.object, self.object_owner, self.object_owner_name)
        return f"{subject} {relation} {obj}"


def fact_rank(f: Fact) -> float:
    """The graph's order for recall: the edge's own retrievability x confidence x evidence, one hop further
    costs a fifth, and the nodes' cards weigh in (an edge between things long unmentioned ranks lower than
    the same edge between things talked about yesterday)."""
    return (
        f.retrievability
        * f.confidence
        * (1 + math.log(f.evidence))
        * 0.8 ** (f.hops - 1)
        * (0.5 + 0.5 * f.node_retrievability)
    )


# English's irregular present tense for he, she and it, and forms that already agree or need no agreement.
_IRREGULAR = {"have": "has", "be": "is", "do": "does", "go": "goes", "are": "is"}
_AGREED = frozenset({"has", "is", "was", "does", "can", "will", "may", "must", "should", "would", "could"})


def third_person(relation: str) -> str:
    """``relation`` (a verb first: "work as", "not like") as said of someone else: "works as", "does not like"."""
    words = relation.split(" ")
    verb = words[0]
    if verb == "not":  # "not has" (the relation of "I have" is "has"): "does not have"; "not is": "is not"
        rest = words[1:]
        if rest and rest[0] in ("is", "be"):
            return " ".join(["is not", *rest[1:]])
        if rest and rest[0] == "has":
            rest = ["have", *rest[1:]]
        return " ".join(["does not", *rest])
    if verb in _AGREED or verb.endswith("ed") or not verb.isalpha():
        return relation
    if verb in _IRREGULAR:
        verb = _IRREGULAR[verb]
    elif verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        verb += "es"
    elif len(verb) > 2 and verb.endswith("y") and verb[-2] not in "aeiou":
        verb = verb[:-1] + "ies"
    else:
        verb += "s"
    return " ".join([verb, *words[1:]])


def _owned(display: str, owner: str, owner_name: str) -> str:
    if not owner:
        return display
    if owner == BOT_OWNER:
        return f"my {display}"
    return f"{owner_name or 'someone'}'s {display}"


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
    return Card(
        card_id=card_id,
        state=State(row["fsrs_state"]),
        step=row["fsrs_step"],
        stability=row["stability"],
        difficulty=row["difficulty"],
        due=row["due"],
        last_review=row["last_review"],
    )


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
        """Extract triples from a person's message and pass each through the gate. Never for bot messages.

        Idempotent per message: a message that already has gate decisions (absorbed before a crash, or
        twice by two paths) returns [] and counts no evidence again. A message deleted meanwhile
        leaves nothing behind (the delete wins).
        """
        require_scope(message.scope)
        if message.is_bot or await self._absorbed(self.pool, message):
            return []
        triples = [
            _with_owners(t) for t in await self._extract(message.content) if not _introduces(t, message.author_name)
        ]
        if not triples:
            return []
        names = sorted({n for t in triples for n in (t.subject, t.object) if n not in (USER, BOT)})
        vectors = dict(zip(names, await self.embedder.embed_many(names))) if names else {}
        decisions = []
        try:
            async with self.pool.acquire() as conn, conn.transaction():
                await self._lock(conn, message.scope)
                if await self._absorbed(conn, message):  # another path absorbed it while we parsed
                    return []
                for triple in triples:
                    decisions.append(await self._admit(conn, message, triple, vectors, now))
        except asyncpg.ForeignKeyViolationError:
            log.info("message %s was deleted while its facts were absorbed; nothing kept", message.id)
            return []
        for decision in decisions:
            self.counters.add(decision.action)
        if any(d.action == "insert" for d in decisions):
            await self._embed_facts(
                message.scope,
                [
                    r["id"]
                    for r in await self.pool.fetch(
                        """SELECT e.id FROM kg_edges e JOIN kg_edge_sources s ON s.edge_id = e.id
                   WHERE s.message_id = $1 AND e.embedding IS NULL""",
                        message.id,
                    )
                ],
                now,
            )
        return decisions

    async def _embed_facts(self, scope: str, edge_ids: Sequence[int], now: datetime) -> None:
        """Store the sentence vector of these facts (recall compares it with the question). Best effort: a
        fact left without one is embedded whenever it is recalled."""
        if not edge_ids:
            return
        try:
            audiences = await self.pool.fetch(
                """SELECT DISTINCT visible_in FROM kg_edge_sources WHERE edge_id = ANY($1::bigint[])""", list(edge_ids)
            )
            facts: dict[int, Fact] = {}
            for a in audiences:  # a fact said only in a restricted channel is seen from there
                for f in await self._facts(scope, edge_ids, now, visible_channel=a["visible_in"]):
                    facts.setdefault(f.edge_id, f)
            if not facts:
                return
            vectors = await self.embedder.embed_many([f.sentence() for f in facts.values()])
            await self.pool.executemany(
                "UPDATE kg_edges SET embedding = $2 WHERE id = $1", [(i, v) for i, v in zip(facts, vectors)]
            )
        except Exception:
            log.warning("could not store the vectors of %d facts in scope %s", len(edge_ids), scope, exc_info=True)

    async def retract(self, message_id: int, conn: asyncpg.Connection | None = None) -> int:
        """Take back what one message said (its text was edited): its support leaves every edge (edges
        nothing else supports go, the others lose that evidence), its gate decisions are dropped (so the
        new text is absorbed afresh) and nodes left without edges go. Returns how many edges went."""
        if conn is None:
            async with self.pool.acquire() as own, own.transaction():
                return await self._retract(own, message_id)
        return await self._retract(conn, message_id)

    async def _retract(self, conn: asyncpg.Connection, message_id: int) -> int:
        scope = await conn.fetchval("SELECT scope FROM messages WHERE id = $1", message_id)
        if scope is None:
            return 0  # deleted: the cascades already took its support
        await self._lock(conn, scope)
        touched = await conn.fetchval(
            """SELECT array_agg(DISTINCT n) FROM kg_edge_sources s JOIN kg_edges e ON e.id = s.edge_id,
                      unnest(ARRAY[e.source_id, e.target_id]) AS n WHERE s.message_id = $1""",
            message_id,
        )
        removed = await conn.fetchval(
            """SELECT count(*) FROM kg_edge_sources s WHERE s.message_id = $1 AND NOT EXISTS (
                   SELECT 1 FROM kg_edge_sources o WHERE o.edge_id = s.edge_id AND o.message_id <> $1)""",
            message_id,
        )
        # the kg_edge_source_removed trigger lowers evidence and deletes edges left without support
        await conn.execute("DELETE FROM kg_edge_sources WHERE message_id = $1", message_id)
        await conn.execute("DELETE FROM kg_gate_log WHERE scope = $2 AND message_id = $1", message_id, scope)
        if touched:
            await conn.execute(
                """DELETE FROM kg_nodes n WHERE n.id = ANY($1::bigint[]) AND NOT EXISTS (
                       SELECT 1 FROM kg_edges e WHERE e.source_id = n.id OR e.target_id = n.id)""",
                touched,
            )
        log.info("retracted message %s: %d edges removed", message_id, removed)
        return int(removed)

    @staticmethod
    async def _lock(conn: asyncpg.Connection, scope: str) -> None:
        # Graph writes of one scope take turns: no two absorbs of one message both pass the
        # idempotency check, and retract never deletes a node another absorb is about to use.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('kg:' || $1, 0))", scope)

    @staticmethod
    async def _absorbed(db: asyncpg.Pool | asyncpg.Connection, message: StoredMessage) -> bool:
        # Every admission is logged; the scope narrows the log (it has no index on message_id).
        return bool(
            await db.fetchval(
                """SELECT EXISTS (SELECT 1 FROM kg_edge_sources WHERE message_id = $1)
                   OR EXISTS (SELECT 1 FROM kg_gate_log WHERE scope = $2 AND message_id = $1)""",
                message.id,
                message.scope,
            )
        )

    async def _extract(self, text: str) -> list[Triple]:
        if self.llm_extract is not None and not await asyncio.to_thread(self.extractor.is_question, text):
            triples = await self.llm_extract(text)
            if triples:
                return triples
        return await asyncio.to_thread(self.extractor.extract, text)

    def _owner_key(self, owner: str | None, message: StoredMessage) -> str:
        if owner == USER:
            return f"user:{message.author_id}"
        if owner == BOT:
            return BOT_OWNER
        return WORLD

    async def _node(
        self,
        conn: asyncpg.Connection,
        scope: str,
        key: str,
        display: str,
        owner: str | None,
        message: StoredMessage,
        vectors: dict[str, np.ndarray],
        now: datetime,
    ) -> int:
        if key == USER:
            name, display, kind, owner_key = f"user:{message.author_id}", message.author_name, "person", WORLD
        elif key == BOT:
            name, display, kind, owner_key = "bot", self.bot_name, "bot", WORLD
        else:
            name, kind, owner_key = key, "entity", self._owner_key(owner, message)
        row = await conn.fetchrow(
            "SELECT id FROM kg_nodes WHERE scope = $1 AND owner = $2 AND name = $3", scope, owner_key, name
        )
        if row is not None:
            return row["id"]
        card, _ = self.fsrs.review_card(Card(), Rating.Good, now)
        return await conn.fetchval(
            f"""INSERT INTO kg_nodes (scope, owner, name, display, kind, embedding, {_CARD_COLUMNS}, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 1, $13)
                ON CONFLICT (scope, owner, name) DO UPDATE SET display = kg_nodes.display RETURNING id""",
            scope,
            owner_key,
            name,
            display,
            kind,
            vectors.get(key),
            *_card_values(card),
            now,
        )

    async def _admit(
        self, conn: asyncpg.Connection, message: StoredMessage, t: Triple, vectors: dict[str, np.ndarray], now: datetime
    ) -> GateDecision:
        scope = message.scope
        source = await self._node(conn, scope, t.subject, t.subject_display, t.subject_owner, message, vectors, now)
        target = await self._node(conn, scope, t.object, t.object_display, t.object_owner, message, vectors, now)
        edge = await conn.fetchrow(
            f"SELECT id, confidence, sentiment, evidence_count, contradicted_at, {_CARD_COLUMNS} FROM kg_edges "
            "WHERE scope = $1 AND source_id = $2 AND relation = $3 AND target_id = $4",
            scope,
            source,
            t.relation,
            target,
        )
        payload = {
            "subject": t.subject_display,
            "relation": t.relation,
            "object": t.object_display,
            "confidence": t.confidence,
            "sentiment": t.sentiment,
            "subject_key": t.subject,
            "object_key": t.object,
        }
        payload |= {k: v for k, v in (("subject_owner", t.subject_owner), ("object_owner", t.object_owner)) if v}
        if edge is not None:
            if not await self._source(conn, edge["id"], message):
                # one message saying a thing twice is one piece of evidence
                return await self._log(
                    conn, message, GateDecision("aggregate", "already said in this message", None, t), payload, now
                )
            card, _ = self.fsrs.review_card(_card(edge, edge["id"]), _rating(t, message), now)
            n = edge["evidence_count"]
            await conn.execute(
                f"""UPDATE kg_edges SET evidence_count = evidence_count + 1, last_seen = $2,
                        confidence = GREATEST(confidence, $3), sentiment = (sentiment * $4 + $5) / ($4 + 1),
                        ({_CARD_COLUMNS}) = ($6, $7, $8, $9, $10, $11, reps + 1)
                    WHERE id = $1""",
                edge["id"],
                now,
                t.confidence,
                n,
                t.sentiment,
                *_card_values(card),
            )
            if edge["contradicted_at"] is not None:  # said again after it lost ("I live in Lisbon again"): current
                await conn.execute(
                    "UPDATE kg_edges SET contradicted_at = NULL, contradicted_by = NULL WHERE id = $1", edge["id"]
                )
                await self._contradict(conn, scope, source, t.relation, target, edge["id"], now)
            return await self._log(conn, message, GateDecision("aggregate", "edge exists", None, t), payload, now)
        score, parts = await self._score(conn, scope, source, t, message, now)
        if self.gate.enabled and (score < self.gate.threshold or t.confidence < self.gate.min_confidence):
            reason = (
                f"confidence {t.confidence:.2f} < {self.gate.min_confidence:.2f}"
                if t.confidence < self.gate.min_confidence
                else f"score {score:.2f} < {self.gate.threshold:.2f} ({parts})"
            )
            return await self._log(conn, message, GateDecision("route_to_episodic", reason, score, t), payload, now)
        card, _ = self.fsrs.review_card(Card(), _rating(t, message), now)
        edge_id = await conn.fetchval(
            f"""INSERT INTO kg_edges (scope, source_id, relation, target_id, sentiment, confidence, first_seen,
                                      last_seen, {_CARD_COLUMNS})
                VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, $12, $13, 1) RETURNING id""",
            scope,
            source,
            t.relation,
            target,
            t.sentiment,
            t.confidence,
            message.created_at,
            *_card_values(card),
        )
        await self._source(conn, edge_id, message)
        await self._contradict(conn, scope, source, t.relation, target, edge_id, now)
        reason = f"score {score:.2f} >= {self.gate.threshold:.2f} ({parts})" if self.gate.enabled else "gate off"
        return await self._log(conn, message, GateDecision("insert", reason, score, t), payload, now)

    async def _contradict(
        self, conn: asyncpg.Connection, scope: str, source: int, relation: str, target: int, edge_id: int, now: datetime
    ) -> int:
        """Settle what a new edge contradicts: the same claim negated ("likes jazz" / "not_like jazz"), or
        another value of a one-valued relation ("lives in Porto" / "lives in Lisbon", "moved to Porto"; see
        ``rivals``), never a claim of the same message ("I live in Lisbon, in a flat"). By recency and
        evidence: the older claim loses unless it has more than twice the newer one's evidence. The loser
        keeps its edge and history, with its confidence halved, ``contradicted_at`` set and the winner in
        ``contradicted_by`` (sql/029: the winner's removal undoes it). Only a current claim is contradicted.
        Returns how many contradictions were settled."""
        other, same = rivals(relation)
        rows = await conn.fetch(
            """SELECT id, evidence_count, last_seen FROM kg_edges
               WHERE scope = $1 AND source_id = $2 AND id <> $3 AND contradicted_at IS NULL
                 AND ((relation = ANY($4::text[]) AND target_id = $5)
                      OR (relation = ANY($6::text[]) AND target_id <> $5))
                 AND NOT EXISTS (SELECT 1 FROM kg_edge_sources mine JOIN kg_edge_sources theirs
                                     ON theirs.message_id = mine.message_id
                                 WHERE mine.edge_id = $3 AND theirs.edge_id = kg_edges.id)""",
            scope,
            source,
            edge_id,
            same,
            target,
            other,
        )
        if not rows:
            return 0
        new = await conn.fetchrow("SELECT evidence_count, last_seen FROM kg_edges WHERE id = $1", edge_id)
        for old in rows:
            newer_wins = old["last_seen"] <= new["last_seen"] and old["evidence_count"] <= 2 * new["evidence_count"]
            loser, winner = (old["id"], edge_id) if newer_wins else (edge_id, old["id"])
            row = await conn.fetchrow(f"SELECT id, {_CARD_COLUMNS} FROM kg_edges WHERE id = $1", loser)
            card, _ = self.fsrs.review_card(_card(row, loser), Rating.Again, now)  # a lapse
            await conn.execute(
                # kg_contradicted_factor() (sql/030): the trigger that undoes a contradiction divides by it.
                f"""UPDATE kg_edges SET confidence = confidence * kg_contradicted_factor(), contradicted_at = $2,
                        contradicted_by = $3, ({_CARD_COLUMNS}) = ($4, $5, $6, $7, $8, $9, reps + 1) WHERE id = $1""",
                loser,
                now,
                winner,
                *_card_values(card),
            )
            if not newer_wins:
                break  # the new claim lost: it is contradicted once, by the claim that outweighs it
        return len(rows)

    async def denied(self, scope: str, message_ids: Sequence[int], people: Sequence[str]) -> dict[int, set[str]]:
        """What the facts from each of ``message_ids`` say ``people`` (graph nodes: 'user:<id>' for a speaker,
        a name for someone spoken of) are not, or no longer, related to: the objects of negated claims, of where
        they moved from and where they quit ("I moved from Lisbon to Porto": lisbon; "I don't like jazz": jazz),
        by message, and the objects of the claims a claim of the message beat ("I moved to Lisbon": hamburg, where
        they lived before). A yes to "do I live in Lisbon?" that message holds is a no. What one left counts only
        beside a move or a new job in the same message ("I moved to Porto, I left Lisbon for good"): "we left the
        party early" denies nothing of having been there."""
        require_scope(scope)
        if not message_ids or not people:
            return {}
        rows = await self.pool.fetch(
            """SELECT s.message_id, t.name FROM kg_edge_sources s JOIN kg_edges w ON w.id = s.edge_id
                   JOIN kg_edges e ON e.contradicted_by = w.id JOIN kg_nodes t ON t.id = e.target_id
                   JOIN kg_nodes n ON n.id = e.source_id
               WHERE w.scope = $1 AND s.message_id = ANY($2::bigint[]) AND n.name = ANY($3::text[])
               UNION
               SELECT DISTINCT s.message_id, t.name FROM kg_edge_sources s JOIN kg_edges e ON e.id = s.edge_id
                   JOIN kg_nodes t ON t.id = e.target_id JOIN kg_nodes n ON n.id = e.source_id
               WHERE e.scope = $1 AND s.message_id = ANY($2::bigint[]) AND n.name = ANY($3::text[])
                 AND (e.relation LIKE 'not\\_%' OR e.relation = ANY($4::text[])
                      OR e.relation = 'leave' AND EXISTS (
                          SELECT 1 FROM kg_edge_sources o JOIN kg_edges oe ON oe.id = o.edge_id
                          WHERE o.message_id = s.message_id AND oe.source_id = e.source_id
                            AND oe.relation = ANY($5::text[])))""",
            scope,
            list(message_ids),
            list(people),
            sorted((LEFT | QUIT) - {"leave"}),
            sorted(LIVING | WORKING),
        )
        out: dict[int, set[str]] = {}
        for r in rows:
            out.setdefault(r["message_id"], set()).add(r["name"])
        return out

    async def superseded(self, scope: str, message_ids: Sequence[int]) -> dict[int, frozenset[int]]:
        """Of ``message_ids``, those with a fact that lost to a newer claim made by another of them ("I live in
        Lisbon" beside "I moved from Lisbon to Porto"; "I live in Hamburg, near the harbour" beside "I moved to
        Lisbon", its other fact kept in the graph), each with the messages that won. A message with no fact is
        never superseded. (Every fact lost, as this first was, left P7's old homes and jobs in the prompt beside
        their corrections, 7 changes of 8, and the reader answered with the old.)"""
        require_scope(scope)
        if len(message_ids) < 2:
            return {}
        rows = await self.pool.fetch(
            """SELECT s.message_id AS m,
                      ARRAY(SELECT w.message_id FROM kg_edge_sources w
                            WHERE w.edge_id = e.contradicted_by AND w.message_id = ANY($2::bigint[])
                              AND w.message_id <> s.message_id) AS winners
               FROM kg_edge_sources s JOIN kg_edges e ON e.id = s.edge_id
               WHERE s.message_id = ANY($2::bigint[]) AND e.scope = $1""",
            scope,
            list(message_ids),
        )
        lost: dict[int, set[int]] = {}
        for r in rows:
            if r["winners"]:
                lost.setdefault(r["m"], set()).update(r["winners"])
        return {m: frozenset(w) for m, w in lost.items()}

    async def pin(self, scope: str, message_id: int, now: datetime, *, pinned: bool = True) -> int:
        """Pin (or unpin) the facts a message supports: a pinned edge is never pruned, and pinning is an
        Easy review of it. Returns how many edges changed."""
        require_scope(scope)
        async with self.pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                f"""SELECT e.id, {_CARD_COLUMNS} FROM kg_edges e JOIN kg_edge_sources s ON s.edge_id = e.id
                    WHERE e.scope = $1 AND s.message_id = $2 AND e.pinned <> $3 FOR UPDATE OF e""",
                scope,
                message_id,
                pinned,
            )
            for r in rows:
                if pinned:
                    card, _ = self.fsrs.review_card(_card(r, r["id"]), Rating.Easy, now)
                    await conn.execute(
                        f"UPDATE kg_edges SET pinned = true, ({_CARD_COLUMNS}) = "
                        "($2, $3, $4, $5, $6, $7, reps + 1) WHERE id = $1",
                        r["id"],
                        *_card_values(card),
                    )
                else:
                    await conn.execute("UPDATE kg_edges SET pinned = false WHERE id = $1", r["id"])
        return len(rows)

    # --- consolidation (the dream's replay) ----------------------------------------------

    async def consolidate(
        self, now: datetime, *, scope: str | None = None, min_support: int = 2, fast_track: int = 5, limit: int = 5000
    ) -> dict[str, int]:
        """Re-read the tuples the gate routed to episodic memory and admit those that have gathered
        support (seed 001's consolidation): one said in at least ``min_support`` messages, or at once
        when the scope's graph already knows its relation well (``fast_track`` edges of it: the schema
        fast-track). A tuple whose edge exists by now joins it as evidence. Each admitted edge keeps
        every supporting message as a source (forgetting them forgets it) and settles what it
        contradicts. Tuples still short of support wait for the next night."""
        rows = await self.pool.fetch(
            f"""SELECT g.id AS log_id, g.payload, {", ".join("m." + c for c in _MESSAGE_FIELDS)}
                FROM kg_gate_log g JOIN messages m ON m.id = g.message_id
                WHERE g.action = 'route_to_episodic' AND g.consolidated_at IS NULL
                  AND ($1::text IS NULL OR g.scope = $1)
                ORDER BY g.id LIMIT $2""",
            scope,
            limit,
        )
        counts = {
            "routed_reviewed": len(rows),
            "admitted": 0,
            "fast_tracked": 0,
            "joined_existing": 0,
            "contradictions": 0,
            "waiting": 0,
        }
        groups: dict[tuple[Any, ...], list[tuple[int, StoredMessage, Triple]]] = {}
        unreadable: list[int] = []
        reparsed: dict[int, list[Triple]] = {}
        for r in rows:
            message = StoredMessage(**{c: r[c] for c in _MESSAGE_FIELDS})
            t = await self._routed_triple(r["payload"], message, reparsed)
            if t is None:
                unreadable.append(r["log_id"])
                continue
            key = (
                message.scope,
                self._identity(t.subject, t.subject_owner, message),
                t.relation,
                self._identity(t.object, t.object_owner, message),
            )
            groups.setdefault(key, []).append((r["log_id"], message, t))
        if unreadable:
            await self.pool.execute(
                "UPDATE kg_gate_log SET consolidated_at = $2 WHERE id = ANY($1::bigint[])", unreadable, now
            )
        new_edges: dict[str, list[int]] = {}
        for (group_scope, _, relation, _), items in groups.items():
            outcome = await self._consolidate_group(group_scope, relation, items, now, min_support, fast_track)
            if outcome is None:
                counts["waiting"] += len(items)
                continue
            kind, edge_id, contradictions = outcome
            counts[kind] += 1
            counts["contradictions"] += contradictions
            if kind != "joined_existing":
                new_edges.setdefault(group_scope, []).append(edge_id)
        for group_scope, ids in new_edges.items():
            await self._embed_facts(group_scope, ids, now)
        counts["rehearsed"] = await self.rehearse_replayed(now, scope=scope)
        counts["episodes_consolidated"] = await self.mark_consolidated(now, scope=scope, min_support=min_support)
        return counts

    async def rehearse_replayed(self, now: datetime, *, scope: str | None = None) -> int:
        """Replay teaches the graph (seed 001, 5.3): the facts stated by the episodes replayed this night
        (``last_replayed_at`` within REHEARSAL_WINDOW before ``now``) get an FSRS review (Good), once a
        night each (not again once reviewed since that replay). What replay's priority picks is what the graph keeps: a fact said once and rehearsed
        grows its stability and outlives its episode; one never rehearsed fades and is pruned. Returns
        how many facts were rehearsed."""
        rows = await self.pool.fetch(
            """SELECT DISTINCT e.scope, e.id FROM episodes ep
               JOIN kg_edge_sources s ON s.message_id = ep.message_id JOIN kg_edges e ON e.id = s.edge_id
               WHERE ($1::text IS NULL OR ep.scope = $1) AND ep.last_replayed_at > $2 AND ep.last_replayed_at <= $3
                 AND e.contradicted_at IS NULL AND (e.last_review IS NULL OR e.last_review < ep.last_replayed_at)""",
            scope,
            now - REHEARSAL_WINDOW,
            now,
        )
        by_scope: dict[str, list[int]] = {}
        for r in rows:
            by_scope.setdefault(r["scope"], []).append(r["id"])
        for edge_scope, ids in by_scope.items():
            async with self.pool.acquire() as conn, conn.transaction():
                await self._lock(conn, edge_scope)
                await self.review(edge_scope, ids, now, conn)
        return len(rows)

    async def mark_consolidated(self, now: datetime, *, scope: str | None = None, min_support: int = 2) -> int:
        """Mark the episodes the graph has taken over: every fact their message states is held on its own
        (said in ``min_support`` messages, and not superseded by a newer value), none of its tuples still waits for support, and the facts say most of what the message says
        (CONSOLIDATED_COVERAGE of its content words). Decay (dream.replay) lets them go after a while
        unreinforced; the facts keep the message as their source. Returns how many were marked."""
        rows = await self.pool.fetch(
            """SELECT ep.id, m.content, m.author_name,
                      array_agg(concat_ws(' ', sn.display, e.relation, tn.display)) AS said
               FROM episodes ep JOIN messages m ON m.id = ep.message_id
               JOIN kg_edge_sources s ON s.message_id = ep.message_id JOIN kg_edges e ON e.id = s.edge_id
               JOIN kg_nodes sn ON sn.id = e.source_id JOIN kg_nodes tn ON tn.id = e.target_id
               WHERE ep.consolidated_at IS NULL AND ($1::text IS NULL OR ep.scope = $1)
                 AND EXISTS (SELECT 1 FROM kg_edge_sources s WHERE s.message_id = ep.message_id)
                 AND NOT EXISTS (
                     SELECT 1 FROM kg_edge_sources s JOIN kg_edges e ON e.id = s.edge_id
                     WHERE s.message_id = ep.message_id
                       AND (e.contradicted_at IS NOT NULL OR e.evidence_count < $2))
                 AND NOT EXISTS (
                     SELECT 1 FROM kg_gate_log g WHERE g.scope = ep.scope AND g.message_id = ep.message_id
                       AND g.action = 'route_to_episodic' AND g.consolidated_at IS NULL)
               GROUP BY ep.id, m.content, m.author_name""",
            scope,
            min_support,
        )
        # Only what the facts say in full: "I ran 27 km along the river" is more than (ana, run, km).
        held = [r["id"] for r in rows if _covered(r["content"], [r["author_name"], *r["said"]])]
        if held:
            await self.pool.execute("UPDATE episodes SET consolidated_at = $2 WHERE id = ANY($1::bigint[])", held, now)
        return len(held)

    async def _consolidate_group(
        self,
        scope: str,
        relation: str,
        items: list[tuple[int, StoredMessage, Triple]],
        now: datetime,
        min_support: int,
        fast_track: int,
    ) -> tuple[str, int, int] | None:
        first_message, first = items[0][1], items[0][2]
        supporters = {m.id: m for _, m, _ in items}
        names = sorted({n for n in (first.subject, first.object) if n not in (USER, BOT)})
        vectors = dict(zip(names, await self.embedder.embed_many(names))) if names else {}
        try:
            async with self.pool.acquire() as conn, conn.transaction():
                await self._lock(conn, scope)
                known = await conn.fetchval(
                    "SELECT count(*) FROM kg_edges WHERE scope = $1 AND relation = $2", scope, relation
                )
                source = await self._existing_node(conn, scope, first.subject, first.subject_owner, first_message)
                target = await self._existing_node(conn, scope, first.object, first.object_owner, first_message)
                edge_id = None
                if source is not None and target is not None:
                    edge_id = await conn.fetchval(
                        "SELECT id FROM kg_edges WHERE scope = $1 AND source_id = $2 AND relation = $3 "
                        "AND target_id = $4",
                        scope,
                        source,
                        relation,
                        target,
                    )
                if edge_id is not None:
                    kind = "joined_existing"
                    for m in supporters.values():
                        if await self._source(conn, edge_id, m):
                            await conn.execute(
                                "UPDATE kg_edges SET evidence_count = evidence_count + 1, "
                                "last_seen = GREATEST(last_seen, $2) WHERE id = $1",
                                edge_id,
                                m.created_at,
                            )
                    contradictions = 0
                elif len(supporters) >= min_support or known >= fast_track:
                    kind = "admitted" if len(supporters) >= min_support else "fast_tracked"
                    source = await self._node(
                        conn,
                        scope,
                        first.subject,
                        first.subject_display,
                        first.subject_owner,
                        first_message,
                        vectors,
                        now,
                    )
                    target = await self._node(
                        conn, scope, first.object, first.object_display, first.object_owner, first_message, vectors, now
                    )
                    card, _ = self.fsrs.review_card(Card(), Rating.Good, now)
                    said = [m.created_at for m in supporters.values()]
                    edge_id = await conn.fetchval(
                        f"""INSERT INTO kg_edges (scope, source_id, relation, target_id, sentiment, confidence,
                                                  evidence_count, first_seen, last_seen, {_CARD_COLUMNS})
                            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 1)
                            RETURNING id""",
                        scope,
                        source,
                        relation,
                        target,
                        sum(t.sentiment for _, _, t in items) / len(items),
                        max(t.confidence for _, _, t in items),
                        len(supporters),
                        min(said),
                        max(said),
                        *_card_values(card),
                    )
                    for m in supporters.values():
                        await self._source(conn, edge_id, m)
                    contradictions = await self._contradict(conn, scope, source, relation, target, edge_id, now)
                else:
                    return None
                await conn.execute(
                    "UPDATE kg_gate_log SET consolidated_at = $2 WHERE id = ANY($1::bigint[])",
                    [log_id for log_id, _, _ in items],
                    now,
                )
        except asyncpg.ForeignKeyViolationError:  # a supporting message was deleted meanwhile: next night
            log.info("a message behind a routed tuple in scope %s went during consolidation", scope)
            return None
        return kind, edge_id, contradictions

    def _identity(self, key: str, owner: str | None, message: StoredMessage) -> tuple[str, str]:
        """(owner, name) of the node ``_node`` would use for this end of a triple."""
        if key == USER:
            return WORLD, f"user:{message.author_id}"
        if key == BOT:
            return WORLD, "bot"
        return self._owner_key(owner, message), key

    async def _existing_node(
        self, conn: asyncpg.Connection, scope: str, key: str, owner: str | None, message: StoredMessage
    ) -> int | None:
        owner_key, name = self._identity(key, owner, message)
        return await conn.fetchval(
            "SELECT id FROM kg_nodes WHERE scope = $1 AND owner = $2 AND name = $3", scope, owner_key, name
        )

    async def _routed_triple(
        self, payload: Any, message: StoredMessage, reparsed: dict[int, list[Triple]]
    ) -> Triple | None:
        """The tuple a gate decision logged: from its payload, or (decisions logged before the payload
        kept the node keys) from the message parsed again, matched by relation and names."""
        if isinstance(payload, str):
            payload = json.loads(payload)
        if "subject_key" in payload:
            return Triple(
                subject=payload["subject_key"],
                relation=payload["relation"],
                object=payload["object_key"],
                sentiment=float(payload.get("sentiment", 0.0)),
                confidence=float(payload["confidence"]),
                subject_display=payload["subject"],
                object_display=payload["object"],
                subject_owner=payload.get("subject_owner"),
                object_owner=payload.get("object_owner"),
            )
        if message.id not in reparsed:
            reparsed[message.id] = [
                _with_owners(t) for t in await asyncio.to_thread(self.extractor.extract, message.content)
            ]
        return next(
            (
                t
                for t in reparsed[message.id]
                if t.relation == payload["relation"]
                and t.subject_display == payload["subject"]
                and t.object_display == payload["object"]
            ),
            None,
        )

    async def _score(
        self, conn: asyncpg.Connection, scope: str, source: int, t: Triple, message: StoredMessage, now: datetime
    ) -> tuple[float, str]:
        g = self.gate
        seen = await conn.fetchval(
            "SELECT count(*) FROM kg_edges WHERE scope = $1 AND relation = $2", scope, t.relation
        )
        schema = 1.0 if seen else (0.7 if t.relation.removeprefix("not_") in COMMON_RELATIONS else 0.4)
        age_days = max((now - message.created_at).total_seconds() / 86400, 0.0)
        recency = math.exp(-age_days / g.recency_days)
        degree = await conn.fetchval("SELECT count(*) FROM kg_edges WHERE source_id = $1 OR target_id = $1", source)
        hub = min(degree / g.max_degree, 1.0)
        score = g.w_conf * t.confidence + g.w_schema * schema + g.w_rec * recency - g.w_hub * hub
        return score, f"conf {t.confidence:.2f}, schema {schema:.2f}, recency {recency:.2f}, hub {hub:.2f}"

    async def _source(self, conn: asyncpg.Connection, edge_id: int, message: StoredMessage) -> bool:
        """Record that ``message`` supports the edge, with its audience; False when it already did."""
        status = await conn.execute(
            """INSERT INTO kg_edge_sources (edge_id, message_id, speaker_id, visible_in) VALUES ($1, $2, $3, $4)
               ON CONFLICT DO NOTHING""",
            edge_id,
            message.id,
            message.author_id,
            message.visible_in,
        )
        return status.endswith(" 1")

    async def _log(
        self, conn: asyncpg.Connection, message: StoredMessage, d: GateDecision, payload: dict[str, Any], now: datetime
    ) -> GateDecision:
        await conn.execute(
            """INSERT INTO kg_gate_log (scope, message_id, action, reason, score, payload, decided_at)
               VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)""",
            message.scope,
            message.id,
            d.action,
            d.reason,
            d.score,
            payload,
            now,
        )
        return d

    # --- reading ------------------------------------------------------------------------

    async def facts_for(
        self,
        scope: str,
        text: str,
        *,
        author_id: str | None,
        depth: int,
        now: datetime,
        limit: int = 12,
        visible_channel: str | None = None,
    ) -> list[Fact]:
        """Facts around the things ``text`` talks about, ``depth`` hops out, best first
        (retrievability x weight), only those the audience may see: with ``visible_channel`` None
        a public audience (public sources only), else also what was said in that channel.

        "my X" is the asking author's X, "your X" the bot's, a bare "X" the shared X (see _seeds).
        The walk follows visible edges only, so nothing is reached through what the audience
        may not see.
        """
        require_scope(scope)
        if depth <= 0:
            return []
        mentions = await asyncio.to_thread(self.extractor.mentions, text)
        words = {w.removesuffix("'s") for w in re.findall(r"[a-z][a-z'-]*", text.lower().replace("’", "'"))}
        seeds = await self._seeds(scope, mentions, author_id, visible_channel, words=words)
        if not seeds:
            return []
        # The walk, breadth first, and the facts it reaches, in one query: each node's hop is its distance from
        # the seeds, each edge's one more than its nearer end's (the hop it is first reached at); only visible
        # edges are followed.
        walk = f"""WITH RECURSIVE walk(node, hop) AS (
                       SELECT unnest($2::bigint[]), 0
                       UNION
                       SELECT CASE WHEN e.source_id = w.node THEN e.target_id ELSE e.source_id END, w.hop + 1
                       FROM walk w JOIN kg_edges e ON e.scope = $1 AND (e.source_id = w.node OR e.target_id = w.node)
                       WHERE w.hop + 1 < $4 AND {_visible("e", "$3")}),
                   nodes AS (SELECT node, min(hop) AS hop FROM walk GROUP BY node),
                   reached AS (
                       SELECT e.id, min(n.hop) + 1 AS hop FROM nodes n
                       JOIN kg_edges e ON e.scope = $1 AND (e.source_id = n.node OR e.target_id = n.node)
                       WHERE {_visible("e", "$3")}
                       GROUP BY e.id)"""
        rows = await self.pool.fetch(
            _fact_rows(
                walk + "\n", "e.id IN (SELECT id FROM reached)", "(SELECT hop FROM reached WHERE reached.id = e.id)"
            ),
            scope,
            list(seeds),
            visible_channel,
            depth,
        )
        facts = [self._fact(r, now, r["hop"]) for r in rows]
        facts.sort(key=fact_rank, reverse=True)
        return facts[:limit]

    async def _seeds(
        self,
        scope: str,
        mentions: Sequence[Mention],
        author_id: str | None,
        visible_channel: str | None,
        *,
        words: Iterable[str] = (),
    ) -> set[int]:
        """The nodes a question starts from, among those with an edge the audience may see.

        "my X": the author's own X; failing that, a shared X linked to the author (graphs written
        before ownership, and extractors that give no owners). "your X": the bot's, the same way.
        A bare "X": the shared X; failing that, the author's own X ("where does the cat sleep?" is
        about one's own cat). Never someone else's X: that is exactly the mix-up ownership prevents.
        Their things stay reachable through them ("what does ben's sister do?" walks from ben).
        ``words``: the question's words; one that is a person's name here starts the walk at them too, a name the
        parse took for none ("where does ivy work?": ivy is a plant to it).
        """
        me = f"user:{author_id}" if author_id is not None else None
        # A bare name may be a person of this scope ("where does Mina live?"): their node is 'user:<id>',
        # shown by their name; without this the facts people told about themselves were never reached by name.
        bare = sorted({m.name for m in mentions if m.owner is None and m.name not in (USER, BOT)})
        named = set(words) - set(bare) - {m.name for m in mentions}
        people: dict[str, list[str]] = {}
        if bare or named:
            for r in await self.pool.fetch(
                """SELECT lower(display) AS said, name FROM kg_nodes
                       WHERE scope = $1 AND owner = '' AND kind = 'person' AND lower(display) = ANY($2::text[])""",
                scope,
                sorted({*bare, *named}),
            ):
                people.setdefault(r["said"], []).append(r["name"])
        # per mention, in order of preference: (owner, name, the node a shared fallback must touch)
        wanted: list[list[tuple[str, str, str | None]]] = []
        for m in mentions:
            options: list[tuple[str, str, str | None]]
            if m.name == USER:
                options = [(WORLD, me, None)] if me else []
            elif m.name == BOT:
                options = [(WORLD, "bot", None)]
            elif m.owner in (USER, BOT):
                owner = me if m.owner == USER else BOT_OWNER
                options = [(owner, m.name, None), (WORLD, m.name, owner)] if owner else []
            else:
                options = [(WORLD, m.name, None)]
                if me:
                    options.append((me, m.name, None))
                options += [(WORLD, person, None) for person in people.get(m.name, ())]
            wanted.append(options)
        wanted += [[(WORLD, person, None) for person in people[w]] for w in sorted(named & people.keys())]
        keys = {(o, n) for options in wanted for o, n, _ in options}
        if not keys:
            return set()
        owners, names = zip(*keys)
        rows = await self.pool.fetch(
            f"""SELECT n.id, n.owner, n.name,
                       array_agg(DISTINCT o.name) FILTER (WHERE o.name IS NOT NULL) AS neighbours
                FROM unnest($2::text[], $3::text[]) AS k(owner, name)
                JOIN kg_nodes n ON n.scope = $1 AND n.owner = k.owner AND n.name = k.name
                JOIN kg_edges e ON (e.source_id = n.id OR e.target_id = n.id) AND {_visible("e", "$4")}
                LEFT JOIN kg_nodes o ON o.owner = '' AND o.id = CASE WHEN e.source_id = n.id
                                                                     THEN e.target_id ELSE e.source_id END
                GROUP BY n.id""",
            scope,
            list(owners),
            list(names),
            visible_channel,
        )
        found = {(r["owner"], r["name"]): (r["id"], set(r["neighbours"] or ())) for r in rows}
        seeds: set[int] = set()
        unmatched: list[tuple[str, list[str]]] = []
        for options in wanted:
            for owner, name, link in options:
                hit = found.get((owner, name))
                if hit is not None and (link is None or link in hit[1]):
                    seeds.add(hit[0])
                    break
            else:
                if options and options[0][1] != "bot" and not options[0][1].startswith("user:"):
                    # "my X" said differently is looked for among its owner's things only
                    unmatched.append((options[0][1], [o for o, _, link in options if link is None]))
        # Names said differently ("kitty" for "cat"): the nearest node of a fitting owner by
        # embedding. Skipped when the scope's graph is empty: embedding is most of this step's cost.
        if unmatched and await self.pool.fetchval(
            "SELECT EXISTS (SELECT 1 FROM kg_nodes WHERE scope = $1 AND embedding IS NOT NULL)", scope
        ):
            # One at a time through the embedder's queue: concurrent recalls (a batch of queries) share batches.
            vectors = await asyncio.gather(*(self.embedder.embed(n) for n, _ in unmatched))
            for (_, allowed), vector in zip(unmatched, vectors):
                row = await self.pool.fetchrow(
                    f"""SELECT n.id, 1 - (n.embedding <=> $2) / 2 AS sim FROM kg_nodes n
                        WHERE n.scope = $1 AND n.embedding IS NOT NULL AND n.owner = ANY($3::text[])
                          AND EXISTS (SELECT 1 FROM kg_edges e WHERE (e.source_id = n.id OR e.target_id = n.id)
                                      AND {_visible("e", "$4")})
                        ORDER BY n.embedding <=> $2 LIMIT 1""",
                    scope,
                    vector,
                    allowed,
                    visible_channel,
                )
                if row is not None and row["sim"] >= 0.9:
                    seeds.add(row["id"])
        return seeds

    async def _facts(
        self,
        scope: str,
        edge_ids: Sequence[int],
        now: datetime,
        hops: dict[int, int] | None = None,
        visible_channel: str | None = None,
    ) -> list[Fact]:
        """The edges as facts; their message ids and speakers are only the sources the audience may see."""
        if not edge_ids:
            return []
        rows = await self.pool.fetch(_fact_rows("", "e.id = ANY($2::bigint[])"), scope, list(edge_ids), visible_channel)
        return [self._fact(r, now, (hops or {}).get(r["id"], 0)) for r in rows]

    def _fact(self, r: asyncpg.Record, now: datetime, hop: int) -> Fact:
        return Fact(
            edge_id=r["id"],
            subject=r["s_display"],
            subject_name=r["s_name"],
            relation=r["relation"],
            object=r["t_display"],
            object_name=r["t_name"],
            sentiment=r["sentiment"],
            confidence=r["confidence"],
            evidence=r["evidence_count"],
            retrievability=self.retrievability(r, r["id"], now),
            message_ids=tuple(r["message_ids"]),
            speakers=tuple(r["speakers"]),
            hops=hop,
            subject_owner=r["s_owner"],
            object_owner=r["t_owner"],
            subject_owner_name=r["s_owner_name"] or "",
            object_owner_name=r["t_owner_name"] or "",
            vector=None if r["embedding"] is None else vec(r["embedding"]),
            node_retrievability=(self._node_retrievability(r, "s", now) + self._node_retrievability(r, "t", now)) / 2,
            contradicted=r["contradicted"],
        )

    def _node_retrievability(self, row: asyncpg.Record, end: str, now: datetime) -> float:
        """An end's node card (GhostKG): a thing talked about again and again stays familiar."""
        card = {c: row[f"{end}_{c}"] for c in _CARD_COLUMNS.split(", ")}
        return self.retrievability(card, 0, now)

    def retrievability(self, row: asyncpg.Record | dict[str, Any], card_id: int, now: datetime) -> float:
        if row["last_review"] is None:
            return 1.0
        return float(self.fsrs.get_card_retrievability(_card(row, card_id), now))

    async def review(
        self, scope: str, edge_ids: Sequence[int], now: datetime, conn: asyncpg.Connection | None = None
    ) -> None:
        """Facts used in a reply were remembered: an FSRS review (Good) of each edge and its nodes."""
        require_scope(scope)
        if not edge_ids:
            return
        db = conn or self.pool
        rows = await db.fetch(
            f"SELECT id, source_id, target_id, {_CARD_COLUMNS} FROM kg_edges "
            "WHERE scope = $1 AND id = ANY($2::bigint[])",
            scope,
            list(edge_ids),
        )
        nodes: set[int] = set()
        for r in rows:
            card, _ = self.fsrs.review_card(_card(r, r["id"]), Rating.Good, now)
            await db.execute(
                f"UPDATE kg_edges SET ({_CARD_COLUMNS}) = ($2, $3, $4, $5, $6, $7, reps + 1) WHERE id = $1",
                r["id"],
                *_card_values(card),
            )
            nodes |= {r["source_id"], r["target_id"]}
        for r in await db.fetch(f"SELECT id, {_CARD_COLUMNS} FROM kg_nodes WHERE id = ANY($1::bigint[])", list(nodes)):
            card, _ = self.fsrs.review_card(_card(r, r["id"]), Rating.Good, now)
            await db.execute(
                f"UPDATE kg_nodes SET ({_CARD_COLUMNS}) = ($2, $3, $4, $5, $6, $7, reps + 1) WHERE id = $1",
                r["id"],
                *_card_values(card),
            )

    async def about_author(
        self, scope: str, author_id: str, now: datetime, limit: int = 50, *, visible_channel: str | None = None
    ) -> list[Fact]:
        """Facts that this person's messages support (for /whatdoyouknow), only through messages the
        audience may see (``visible_channel`` None: public ones only)."""
        require_scope(scope)
        rows = await self.pool.fetch(
            """SELECT DISTINCT e.id FROM kg_edges e JOIN kg_edge_sources s ON s.edge_id = e.id
               WHERE e.scope = $1 AND s.speaker_id = $2 AND (s.visible_in IS NULL OR s.visible_in = $4::text)
               ORDER BY e.id LIMIT $3""",
            scope,
            author_id,
            limit,
            visible_channel,
        )
        return await self._facts(scope, [r["id"] for r in rows], now, visible_channel=visible_channel)

    async def stances(
        self,
        scope: str,
        *,
        visible_channel: str | None = None,
        limit: int = 3,
        threshold: float = 0.4,
        min_people: int = 2,
    ) -> list[tuple[str, int, int, tuple[int, ...]]]:
        """What people in the scope think (GhostKG's sentiment): the things most people took a clear stance
        on, as (thing, people for, people against, the messages that say so), through sources the audience
        may see only. At least ``min_people`` people: one person's mood is not what people here think (P10: "Bruno
        is sick, I'm taking him to the vet on Friday" put "Friday (1 dislikes it); vet (1 dislikes it)" in every
        prompt)."""
        require_scope(scope)
        rows = await self.pool.fetch(
            """SELECT t.display AS thing,
                      count(DISTINCT src.speaker_id) FILTER (WHERE e.sentiment >= $3) AS fans,
                      count(DISTINCT src.speaker_id) FILTER (WHERE e.sentiment <= -$3) AS critics,
                      array_agg(DISTINCT src.message_id) AS message_ids
               FROM kg_edges e JOIN kg_nodes t ON t.id = e.target_id
               JOIN kg_edge_sources src ON src.edge_id = e.id
                    AND (src.visible_in IS NULL OR src.visible_in = $2::text)
               WHERE e.scope = $1 AND abs(e.sentiment) >= $3 AND e.contradicted_at IS NULL
                 AND t.name <> 'bot' AND NOT t.name LIKE 'user:%' AND src.speaker_id NOT LIKE 'bot:%'
               GROUP BY t.display
               HAVING count(DISTINCT src.speaker_id) >= $5
               ORDER BY count(DISTINCT src.speaker_id) DESC, t.display LIMIT $4""",
            scope,
            visible_channel,
            threshold,
            limit,
            min_people,
        )
        return [(r["thing"], r["fans"], r["critics"], tuple(sorted(r["message_ids"]))[:10]) for r in rows]

    async def gate_counts(self, scope: str) -> dict[str, int]:
        rows = await self.pool.fetch(
            "SELECT action, count(*) AS n FROM kg_gate_log WHERE scope = $1 GROUP BY action", scope
        )
        counts = {r["action"]: r["n"] for r in rows}
        return {
            "attempts": sum(counts.values()),
            "inserted": counts.get("insert", 0),
            "aggregated": counts.get("aggregate", 0),
            "routed_to_episodic": counts.get("route_to_episodic", 0),
        }

    # --- maintenance (dream steps) ---------------------------------------------------------------

    async def prune(
        self, now: datetime, *, min_retrievability: float, min_confidence: float, scope: str | None = None
    ) -> int:
        """Delete unpinned edges whose retrievability and confidence both fell below the thresholds, and
        nodes left without edges for a day, in ``scope`` (None: every scope). Returns edges deleted."""
        rows = await self.pool.fetch(
            f"""SELECT id, confidence, {_CARD_COLUMNS} FROM kg_edges
                WHERE NOT pinned AND confidence < $1 AND ($2::text IS NULL OR scope = $2)""",
            min_confidence,
            scope,
        )
        doomed = [r["id"] for r in rows if self.retrievability(r, r["id"], now) < min_retrievability]
        if doomed:
            await self.pool.execute("DELETE FROM kg_edges WHERE id = ANY($1::bigint[])", doomed)
        # a day's grace: a node an absorb just created may not have its edge yet
        await self.pool.execute(
            """DELETE FROM kg_nodes n WHERE ($2::text IS NULL OR n.scope = $2) AND n.created_at < $1
                 AND NOT EXISTS (SELECT 1 FROM kg_edges e WHERE e.source_id = n.id OR e.target_id = n.id)""",
            now - timedelta(days=1),
            scope,
        )
        return len(doomed)

    async def merge_near_duplicates(self, now: datetime, *, similarity: float = 0.97, scope: str | None = None) -> int:
        """Merge entity nodes whose names embed as near-duplicates ("cats"/"cat") within one scope and
        one owner (ana's cat never merges with ben's, nor with the world's), in ``scope`` (None: all).
        The dropped node's edges move to the kept one; an edge the kept node already has gains the
        other's sources (evidence and audiences), so no support is lost. Returns nodes merged."""
        pairs = await self.pool.fetch(
            """SELECT a.id AS keep, b.id AS drop FROM kg_nodes a JOIN kg_nodes b
                 ON a.scope = b.scope AND a.owner = b.owner AND a.kind = b.kind AND a.id < b.id
               WHERE a.kind = 'entity' AND ($2::text IS NULL OR a.scope = $2)
                 AND 1 - (a.embedding <=> b.embedding) / 2 >= $1
               ORDER BY a.id, b.id""",
            similarity,
            scope,
        )
        merged = 0
        gone: set[int] = set()
        for p in pairs:
            if p["keep"] in gone or p["drop"] in gone:
                continue
            async with self.pool.acquire() as conn, conn.transaction():
                moved = await self._merge(conn, p["keep"], p["drop"])
                merged_scope = await conn.fetchval("SELECT scope FROM kg_nodes WHERE id = $1", p["keep"])
            # the moved facts now read with the kept node's name: their sentence vectors follow
            await self._embed_facts(merged_scope, moved, now)
            gone.add(p["drop"])
            merged += 1
        return merged

    async def _merge(self, conn: asyncpg.Connection, keep: int, drop: int) -> list[int]:
        """Move ``drop``'s edges to ``keep``; returns the edges moved."""
        moved: list[int] = []
        for column, other in (("source_id", "target_id"), ("target_id", "source_id")):
            twins = await conn.fetch(
                f"""SELECT e.id AS from_edge, x.id AS to_edge FROM kg_edges e JOIN kg_edges x
                      ON x.{column} = $1 AND x.{other} = e.{other} AND x.relation = e.relation
                    WHERE e.{column} = $2""",
                keep,
                drop,
            )
            for twin in twins:
                status = await conn.execute(
                    """INSERT INTO kg_edge_sources (edge_id, message_id, speaker_id, visible_in)
                       SELECT $1, message_id, speaker_id, visible_in FROM kg_edge_sources WHERE edge_id = $2
                       ON CONFLICT DO NOTHING""",
                    twin["to_edge"],
                    twin["from_edge"],
                )
                await conn.execute(
                    """UPDATE kg_edges k SET evidence_count = k.evidence_count + $3,
                           confidence = GREATEST(k.confidence, d.confidence), last_seen = GREATEST(k.last_seen, d.last_seen)
                       FROM kg_edges d WHERE k.id = $1 AND d.id = $2""",
                    twin["to_edge"],
                    twin["from_edge"],
                    int(status.split()[-1]),
                )
            # the rest move over (the twins go with the dropped node)
            moved += [
                r["id"]
                for r in await conn.fetch(
                    f"""UPDATE kg_edges e SET {column} = $1, embedding = NULL WHERE {column} = $2 AND NOT EXISTS (
                       SELECT 1 FROM kg_edges x WHERE x.{column} = $1 AND x.{other} = e.{other}
                       AND x.relation = e.relation) RETURNING e.id""",
                    keep,
                    drop,
                )
            ]
        await conn.execute("DELETE FROM kg_nodes WHERE id = $1", drop)
        return moved


_REMEMBER = re.compile(
    r"\b(?:remember (?:this|that|it)|don'?t forget|do not forget|keep in mind|note that)\b", re.IGNORECASE
)
HEDGED_CONFIDENCE = 0.5  # the extractor's confidence for hedged claims ("I think I like ...")


def _rating(t: Triple, message: StoredMessage) -> Rating:
    """GhostKG's ratings from what happened: asked to be remembered, Easy; hedged, Hard; else Good (a
    contradiction is Again, in ``_contradict``)."""
    if _REMEMBER.search(message.content):
        return Rating.Easy
    if t.confidence <= HEDGED_CONFIDENCE:
        return Rating.Hard
    return Rating.Good


CONSOLIDATED_COVERAGE = 0.6  # share of a message's content words its facts must say for its episode to go


def _covered(text: str, said: Sequence[str]) -> bool:
    """Whether the facts (``said``: their words, and the speaker's name) say most of what ``text`` says."""
    words = content_words(text)
    joined = " ".join(w.replace("_", " ") for w in said)
    if not set(re.findall(r"\d+", text)) <= set(re.findall(r"\d+", joined)):
        return False  # a number the facts lost ("ran 24 km") keeps the episode
    if not words:
        return True
    return len(words & content_words(joined)) / len(words) >= CONSOLIDATED_COVERAGE


def _with_owners(t: Triple) -> Triple:
    """An extractor that gives no owners (an LLM's "my sister") still gets them from the words."""
    if t.subject_owner is None and t.subject not in (USER, BOT):
        plain, owner = owned_name(t.subject)
        if owner is not None:
            t = replace(t, subject=plain, subject_display=plain, subject_owner=owner)
    if t.object_owner is None and t.object not in (USER, BOT):
        plain, owner = owned_name(t.object)
        if owner is not None:
            t = replace(t, object=plain, object_display=plain, object_owner=owner)
    return t
