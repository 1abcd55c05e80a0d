"""The place graph in PostgreSQL: places with topic codes, moves gated into edges, merging, TTL, forgetting.

``observe`` assigns a person's message to a place of its channel (the
nearest when similar enough, per the seed's ``merge_similar``; else a new
place, up to ``max_places`` per channel), then integrates the path: the
person's previous message within ``window`` was in another place, so they
moved, and the spatial gate decides what the move does to the edges.
Success comes later: a "thanks, that worked" (or a ✅) marks the person's
latest move into that channel as one that ended well.

Edges are aggregates of the moves the gate let through and are rebuilt from
them whenever a move changes, so forgetting a message (its moves, its
membership, the success it gave) leaves edges, centroids and counters as if
it had never been said.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg
import numpy as np

from memory.conversation import StoredMessage, require_scope
from memory.embed import similarity
from memory.places.codes import SUCCESS, asks_for_directions, is_question, is_substantive, label, outcome
from memory.places.gate import AGGREGATE, BLOCK, INSERT, GateConfig, GateDecision, SpatialGate
from memory.vectors import centroid, cosine, unit, vec

log = logging.getLogger(__name__)

JOIN_SIMILARITY = 0.62  # hippobot's similarity scale: a message this close to a place's code joins it
MERGE_SIMILARITY = 0.90  # the dream merges two places of one channel this close
CONTINUITY_BONUS = 0.04  # a person's next message leans towards the place they are in
MAX_PLACES_PER_CHANNEL = 6
WINDOW = timedelta(hours=2)  # path integration: a message within this after the person's last one is a move
RESOLUTION_WINDOW = timedelta(hours=12)
PLACE_TTL = timedelta(days=180)
_LABEL_MESSAGES = 100
# The memberships that shape the topic codes an audience sees ($1 scope, $2 the audience's channel).
_SHAPING = "pm.scope = $1 AND pm.weight > 0 AND (p.visible_in IS NULL OR p.visible_in = $2::text)"


@dataclass(frozen=True)
class Observation:
    place_id: int
    new_place: bool
    reason: str
    decision: GateDecision | None = None
    resolved_move: int | None = None  # the move this message marked as ending well


@dataclass(frozen=True)
class PlaceNode:
    id: int
    channel_id: str
    parent_channel_id: str | None
    visible_in: str | None
    centroid: np.ndarray
    label: str
    messages: int
    questions: int
    resolutions: int
    last_seen: datetime
    name: str | None = None  # what the channel is called (its newest message says), None: unknown

    @property
    def resolution_rate(self) -> float:
        return (1 + self.resolutions) / (2 + max(self.questions, self.resolutions))


@dataclass(frozen=True)
class Transition:
    src: int
    dst: int
    moves: int
    successes: int
    cost_s: float

    @property
    def success_prob(self) -> float:
        return (1 + self.successes) / (2 + self.moves)


@dataclass(frozen=True)
class PlaceGraph:
    nodes: Mapping[int, PlaceNode]
    out: Mapping[int, tuple[Transition, ...]]


class PlaceStore:
    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        gate: GateConfig | None = None,
        join_similarity: float = JOIN_SIMILARITY,
        max_places: int = MAX_PLACES_PER_CHANNEL,
        window: timedelta = WINDOW,
    ) -> None:
        if not 0.5 <= join_similarity <= 1.0:
            raise ValueError("join_similarity is on hippobot's similarity scale, 0.5 to 1")
        if max_places < 1:
            raise ValueError("max_places must be >= 1")
        self.pool = pool
        self.gate = SpatialGate(gate or GateConfig())
        self.join_similarity = join_similarity
        self.max_places = max_places
        self.window = window

    # --- observe -------------------------------------------------------------------------------------------

    async def observe(self, message: StoredMessage, vector: np.ndarray, now: datetime) -> Observation | None:
        """Assign a person message to a place and integrate the path; None when skipped (a bot's message, an
        empty one, one already observed or forgotten meanwhile)."""
        if message.is_bot or not message.content.strip():
            return None
        v = unit(vector)
        # A request for directions ("where do I ask about docker?" in #general) joins a place for the person's
        # trajectory, but its topic is discussed elsewhere: it must not pull this place's code towards it.
        weight = 1.0 if is_substantive(message.content) and not asks_for_directions(message.content) else 0.0
        question = weight > 0 and is_question(message.content)
        resolved = outcome(message.content) == SUCCESS
        async with self.pool.acquire() as conn, conn.transaction():
            await _lock(conn, message.scope)
            if await conn.fetchval("SELECT 1 FROM place_messages WHERE message_id = $1", message.id):
                return None
            if not await conn.fetchval("SELECT 1 FROM messages WHERE id = $1 FOR KEY SHARE", message.id):
                return None
            prev = await conn.fetchrow(
                """SELECT pm.message_id, pm.place_id, pm.created_at, p.channel_id, p.visible_in
                   FROM place_messages pm JOIN places p ON p.id = pm.place_id
                   WHERE pm.scope = $1 AND pm.author_id = $2 AND pm.created_at <= $3 AND pm.created_at >= $4
                     AND pm.message_id <> $5
                   ORDER BY pm.created_at DESC, pm.message_id DESC LIMIT 1""",
                message.scope,
                message.author_id,
                message.created_at,
                message.created_at - self.window,
                message.id,
            )
            rows = await conn.fetch(
                """SELECT id, centroid FROM places WHERE scope = $1 AND channel_id = $2
                   AND visible_in IS NOT DISTINCT FROM $3""",
                message.scope,
                message.channel_id,
                message.visible_in,
            )
            place_id, reason = self._choose(rows, v, weight, prev["place_id"] if prev else None)
            new = place_id is None
            if place_id is None:
                place_id = await conn.fetchval(
                    """INSERT INTO places (scope, visible_in, channel_id, parent_channel_id, centroid, created_at,
                                           last_seen) VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id""",
                    message.scope,
                    message.visible_in,
                    message.channel_id,
                    message.thread_parent_id,
                    v,
                    message.created_at,
                )
            await conn.execute(
                """INSERT INTO place_messages (message_id, place_id, scope, author_id, embedding, weight, question,
                                               resolution, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)""",
                message.id,
                place_id,
                message.scope,
                message.author_id,
                v,
                weight,
                question,
                resolved,
                message.created_at,
            )
            await self._add_to_place(conn, place_id, v, weight, question, resolved, message.created_at)
            decision = None
            if prev is not None and prev["place_id"] != place_id:
                decision = await self._move(conn, message, prev, place_id)
            resolved_move = await self._resolve(conn, message) if resolved else None
        log.debug("message %s -> place %s (%s)", message.id, place_id, reason)
        return Observation(place_id, new, reason, decision, resolved_move)

    def _choose(
        self, rows: Sequence[asyncpg.Record], v: np.ndarray, weight: float, current: int | None
    ) -> tuple[int | None, str]:
        """The place of the channel this message joins (None: a new one), and why."""
        if not rows:
            return None, "first place of the channel"
        scored = sorted(
            (
                (similarity(cosine(v, r["centroid"])) + (CONTINUITY_BONUS if r["id"] == current else 0.0), r["id"])
                for r in rows
            ),
            reverse=True,
        )
        best_sim, best = scored[0]
        if weight == 0:
            if current is not None and any(r["id"] == current for r in rows):
                return current, "a short message continues the person's place"
            return best, "a short message joins the nearest place"
        if best_sim >= self.join_similarity:
            return best, f"near its topic code ({best_sim:.2f})"
        if len(rows) >= self.max_places:
            return best, f"channel at {self.max_places} places: the nearest ({best_sim:.2f})"
        return None, f"a new topic here (nearest {best_sim:.2f})"

    async def _add_to_place(
        self,
        conn: asyncpg.Connection,
        place_id: int,
        v: np.ndarray,
        weight: float,
        question: bool,
        resolved: bool,
        at: datetime,
    ) -> None:
        row = await conn.fetchrow("SELECT centroid, weighted, messages FROM places WHERE id = $1 FOR UPDATE", place_id)
        n = row["weighted"]
        code = vec(row["centroid"])
        if weight > 0:  # a running mean of the weighted messages (cosine ignores its length)
            code = (code * n + v) / (n + 1) if n else v
        messages = row["messages"] + 1
        await conn.execute(
            """UPDATE places SET centroid = $2, weighted = weighted + $3, messages = messages + 1,
                   questions = questions + $4, resolutions = resolutions + $5, last_seen = greatest(last_seen, $6)
               WHERE id = $1""",
            place_id,
            code,
            int(weight > 0),
            int(question),
            int(resolved),
            at,
        )
        if messages <= 5 or messages % 10 == 0:
            await self._relabel(conn, place_id)

    async def _relabel(self, conn: asyncpg.Connection, place_id: int, exclude: Sequence[int] = ()) -> None:
        texts = await conn.fetch(
            """SELECT m.content FROM place_messages pm JOIN messages m ON m.id = pm.message_id
               WHERE pm.place_id = $1 AND pm.weight > 0 AND NOT (pm.message_id = ANY($2::bigint[]))
               ORDER BY pm.created_at DESC LIMIT $3""",
            place_id,
            list(exclude),
            _LABEL_MESSAGES,
        )
        await conn.execute("UPDATE places SET label = $2 WHERE id = $1", place_id, label(r["content"] for r in texts))

    async def _move(
        self, conn: asyncpg.Connection, message: StoredMessage, prev: asyncpg.Record, place_id: int
    ) -> GateDecision | None:
        src, dst = prev["place_id"], place_id
        vis = _narrowest(prev["visible_in"], message.visible_in)
        if vis is False:
            log.info("spatial gate: move %s->%s in %s not recorded (two restricted channels)", src, dst, message.scope)
            return None
        edge = await conn.fetchval("SELECT 1 FROM place_edges WHERE src = $1 AND dst = $2", src, dst)
        reverse = await conn.fetchval("SELECT 1 FROM place_edges WHERE src = $1 AND dst = $2", dst, src)
        recent = [
            (r["src"], r["dst"])
            for r in reversed(
                await conn.fetch(
                    """SELECT src, dst FROM place_moves WHERE scope = $1 AND author_id = $2 AND created_at <= $3
               ORDER BY created_at DESC, id DESC LIMIT $4""",
                    message.scope,
                    message.author_id,
                    message.created_at,
                    self.gate.config.recent_window,
                )
            )
        ]
        degrees = {
            r["p"]: r["n"]
            for r in await conn.fetch(
                """SELECT p, count(*) AS n FROM (SELECT src AS p FROM place_edges WHERE src = ANY($1::bigint[])
                                            UNION ALL SELECT dst FROM place_edges WHERE dst = ANY($1::bigint[])) e
               GROUP BY p""",
                [src, dst],
            )
        }
        decision = self.gate.decide(
            src,
            dst,
            edge_exists=bool(edge),
            reverse_exists=bool(reverse),
            recent=recent,
            degree_src=degrees.get(src, 0),
            degree_dst=degrees.get(dst, 0),
        )
        cost = max((message.created_at - prev["created_at"]).total_seconds(), 0.0)
        await conn.execute(
            """INSERT INTO place_moves (scope, visible_in, author_id, from_message_id, message_id, src, dst, action,
                                        reason, cost_s, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
               ON CONFLICT (message_id) DO NOTHING""",
            message.scope,
            vis,
            message.author_id,
            prev["message_id"],
            message.id,
            src,
            dst,
            decision.action,
            decision.reason,
            cost,
            message.created_at,
        )
        if decision.action != BLOCK:
            await _refresh_edges(conn, [(src, dst)])
        else:  # the observation still refreshes the places' recency
            await conn.execute(
                "UPDATE places SET last_seen = greatest(last_seen, $2) WHERE id = ANY($1::bigint[])",
                [src, dst],
                message.created_at,
            )
        log.info(
            "spatial gate: %s %s->%s in %s for message %s (%s)",
            decision.action,
            src,
            dst,
            message.scope,
            message.id,
            decision.reason,
        )
        return decision

    async def _resolve(self, conn: asyncpg.Connection, message: StoredMessage) -> int | None:
        """The person's latest move into this channel (within the resolution window) ended well."""
        move = await conn.fetchrow(
            """SELECT mv.id, mv.src, mv.dst FROM place_moves mv JOIN places p ON p.id = mv.dst
               WHERE mv.scope = $1 AND mv.author_id = $2 AND p.channel_id = $3 AND mv.created_at <= $4
                 AND mv.created_at >= $5 AND mv.success_message_id IS NULL
               ORDER BY mv.created_at DESC, mv.id DESC LIMIT 1""",
            message.scope,
            message.author_id,
            message.channel_id,
            message.created_at,
            message.created_at - RESOLUTION_WINDOW,
        )
        if move is None:
            return None
        await conn.execute("UPDATE place_moves SET success_message_id = $2 WHERE id = $1", move["id"], message.id)
        await _refresh_edges(conn, [(move["src"], move["dst"])])
        return int(move["id"])

    async def mark_resolved(self, message: StoredMessage) -> int | None:
        """A ✅ (or a solved tag) on ``message``'s conversation: its author's latest move into the channel ended
        well; the place counts one more resolution. The move's id, or None."""
        async with self.pool.acquire() as conn, conn.transaction():
            await _lock(conn, message.scope)
            moved = await self._resolve(conn, message)
            await conn.execute(
                """UPDATE places SET resolutions = resolutions + 1 WHERE id = (
                       SELECT place_id FROM place_messages WHERE message_id = $1 AND NOT resolution)""",
                message.id,
            )
            await conn.execute("UPDATE place_messages SET resolution = true WHERE message_id = $1", message.id)
        return moved

    # --- read ----------------------------------------------------------------------------------------------

    async def graph(self, scope: str, visible_channel: str | None) -> PlaceGraph:
        """The places and edges this audience may see."""
        require_scope(scope)
        rows = await self.pool.fetch(
            """SELECT id, channel_id, parent_channel_id, visible_in, centroid, label, messages, questions,
                      resolutions, last_seen FROM places
               WHERE scope = $1 AND (visible_in IS NULL OR visible_in = $2::text)""",
            scope,
            visible_channel,
        )
        # A channel's name as its newest message this audience may see gives it (messages_conversation_idx).
        names = {
            r["channel_id"]: r["name"]
            for r in await self.pool.fetch(
                """SELECT c.channel_id,
                      (SELECT m.channel_name FROM messages m
                       WHERE m.scope = $1 AND m.channel_id = c.channel_id AND m.channel_name IS NOT NULL
                         AND (m.visible_in IS NULL OR m.visible_in = $3::text)
                       ORDER BY m.created_at DESC, m.id DESC LIMIT 1) AS name
               FROM unnest($2::text[]) AS c(channel_id)""",
                scope,
                sorted({r["channel_id"] for r in rows}),
                visible_channel,
            )
        }
        nodes = {
            r["id"]: PlaceNode(
                r["id"],
                r["channel_id"],
                r["parent_channel_id"],
                r["visible_in"],
                unit(vec(r["centroid"])),
                r["label"],
                r["messages"],
                r["questions"],
                r["resolutions"],
                r["last_seen"],
                names.get(r["channel_id"]),
            )
            for r in rows
        }
        out: dict[int, list[Transition]] = {}
        for r in await self.pool.fetch(
            """SELECT src, dst, moves, successes, cost_s FROM place_edges
                   WHERE scope = $1 AND (visible_in IS NULL OR visible_in = $2::text)""",
            scope,
            visible_channel,
        ):
            if r["src"] in nodes and r["dst"] in nodes:
                out.setdefault(r["src"], []).append(
                    Transition(r["src"], r["dst"], r["moves"], r["successes"], float(r["cost_s"]))
                )
        return PlaceGraph(nodes, {k: tuple(v) for k, v in out.items()})

    async def memberships(self, scope: str, visible_channel: str | None, since_id: int = 0) -> tuple[int, int, int]:
        """(messages that shape the topic codes this audience sees, the newest one's id, how many of them came
        after ``since_id``): a model trained on (n, last) is still a subset of what is here when
        ``n - new == its n``, i.e. nothing it learned from was forgotten since."""
        require_scope(scope)
        row = await self.pool.fetchrow(
            f"""SELECT count(*) AS n, coalesce(max(pm.message_id), 0) AS last,
                       count(*) FILTER (WHERE pm.message_id > $3) AS new
                FROM place_messages pm JOIN places p ON p.id = pm.place_id
                WHERE {_SHAPING}""",
            scope,
            visible_channel,
            since_id,
        )
        return int(row["n"]), int(row["last"]), int(row["new"])

    async def has_restricted(self, scope: str, channel_id: str) -> bool:
        """Whether the audience of ``channel_id`` sees places that not everyone sees."""
        require_scope(scope)
        return bool(
            await self.pool.fetchval(
                "SELECT EXISTS (SELECT 1 FROM places WHERE scope = $1 AND visible_in = $2)", scope, channel_id
            )
        )

    async def training_set(
        self, scope: str, visible_channel: str | None, per_channel: int
    ) -> tuple[np.ndarray, list[str], tuple[int, int]]:
        """The vectors and channels of the newest ``per_channel`` messages of each channel that shape the topic
        codes this audience sees, and (how many there are in all, the newest id) as they were read."""
        require_scope(scope)
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            rows = await conn.fetch(
                f"""SELECT channel_id, embedding FROM (
                        SELECT p.channel_id, pm.embedding, row_number() OVER (
                            PARTITION BY p.channel_id ORDER BY pm.created_at DESC, pm.message_id DESC) AS r
                        FROM place_messages pm JOIN places p ON p.id = pm.place_id WHERE {_SHAPING}) AS t
                    WHERE r <= $3 ORDER BY channel_id""",
                scope,
                visible_channel,
                per_channel,
            )
            row = await conn.fetchrow(
                f"""SELECT count(*) AS n, coalesce(max(pm.message_id), 0) AS last
                    FROM place_messages pm JOIN places p ON p.id = pm.place_id WHERE {_SHAPING}""",
                scope,
                visible_channel,
            )
        vectors = np.stack([vec(r["embedding"]) for r in rows]) if rows else np.zeros((0, 0), dtype=np.float32)
        return vectors, [r["channel_id"] for r in rows], (int(row["n"]), int(row["last"]))

    async def gate_counts(self, scope: str) -> dict[str, int]:
        """The seed's spatial gate telemetry: attempts, inserted, aggregated, blocked_new_edges."""
        require_scope(scope)
        rows = await self.pool.fetch(
            "SELECT action, count(*) AS n FROM place_moves WHERE scope = $1 GROUP BY action", scope
        )
        by = {r["action"]: int(r["n"]) for r in rows}
        return {
            "attempts": sum(by.values()),
            "inserted": by.get(INSERT, 0),
            "aggregated": by.get(AGGREGATE, 0),
            "blocked_new_edges": by.get(BLOCK, 0),
        }

    async def counts(self, scope: str) -> dict[str, int]:
        require_scope(scope)
        row = await self.pool.fetchrow(
            """SELECT (SELECT count(*) FROM places WHERE scope = $1) AS places,
                      (SELECT count(*) FROM place_edges WHERE scope = $1) AS edges""",
            scope,
        )
        return {"places": int(row["places"]), "place edges": int(row["edges"])}

    async def decisions(
        self, scope: str, limit: int = 20, *, visible_channel: str | None = None
    ) -> list[dict[str, object]]:
        """The latest gate decisions with their reasons (the seed's provenance log) that the audience may see
        (``visible_channel`` None: the public ones)."""
        require_scope(scope)
        rows = await self.pool.fetch(
            """SELECT message_id, src, dst, action, reason, cost_s, created_at FROM place_moves
               WHERE scope = $1 AND (visible_in IS NULL OR visible_in = $3)
               ORDER BY created_at DESC, id DESC LIMIT $2""",
            scope,
            limit,
            visible_channel,
        )
        return [dict(r) for r in rows]

    # --- dream ---------------------------------------------------------------------------------------------

    async def merge_similar(self, scope: str | None, threshold: float = MERGE_SIMILARITY) -> int:
        """Merge places of one channel (and audience) whose topic codes are at least ``threshold`` similar; the
        number merged away."""
        merged = 0
        groups = await self.pool.fetch(
            """SELECT scope, channel_id, visible_in FROM places WHERE ($1::text IS NULL OR scope = $1)
               GROUP BY scope, channel_id, visible_in HAVING count(*) > 1""",
            scope,
        )
        for g in groups:
            async with self.pool.acquire() as conn, conn.transaction():
                await _lock(conn, g["scope"])
                rows = await conn.fetch(
                    """SELECT id, centroid, messages FROM places WHERE scope = $1 AND channel_id = $2
                       AND visible_in IS NOT DISTINCT FROM $3 ORDER BY messages DESC, id""",
                    g["scope"],
                    g["channel_id"],
                    g["visible_in"],
                )
                alive = [(r["id"], unit(vec(r["centroid"]))) for r in rows]
                gone: set[int] = set()
                for i, (keep, kv) in enumerate(alive):
                    if keep in gone:
                        continue
                    for drop, dv in alive[i + 1 :]:
                        if drop not in gone and similarity(float(kv @ dv)) >= threshold:
                            await self._merge(conn, keep, drop)
                            gone.add(drop)
                            merged += 1
        return merged

    async def _merge(self, conn: asyncpg.Connection, keep: int, drop: int) -> None:
        pairs = [
            (r["src"], r["dst"])
            for r in await conn.fetch("SELECT DISTINCT src, dst FROM place_moves WHERE src = $1 OR dst = $1", drop)
        ]
        await conn.execute("UPDATE place_messages SET place_id = $1 WHERE place_id = $2", keep, drop)
        await conn.execute("UPDATE place_moves SET src = $1 WHERE src = $2", keep, drop)
        await conn.execute("UPDATE place_moves SET dst = $1 WHERE dst = $2", keep, drop)
        await conn.execute("DELETE FROM place_moves WHERE src = dst")  # a move inside one place is no move
        await conn.execute("DELETE FROM place_edges WHERE src = $1 OR dst = $1", drop)
        await conn.execute("DELETE FROM places WHERE id = $1", drop)
        fixed = {(keep if s == drop else s, keep if d == drop else d) for s, d in pairs}
        await _refresh_edges(conn, [p for p in fixed if p[0] != p[1]])
        await _recompute(conn, [keep])
        log.info("place %s merged into %s", drop, keep)

    async def drop_unused(self, now: datetime, scope: str | None, ttl: timedelta = PLACE_TTL) -> int:
        """Delete places not seen for ``ttl`` (their memberships, moves and edges go with them)."""
        status = await self.pool.execute(
            "DELETE FROM places WHERE last_seen < $1 AND ($2::text IS NULL OR scope = $2)", now - ttl, scope
        )
        return int(status.split()[-1])

    # --- forgetting ----------------------------------------------------------------------------------------

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> dict[str, int]:
        """Remove what the messages built: their memberships, their moves and the successes they gave; rebuild
        the centroids, counters, labels and edges from what is left; delete places left empty."""
        ids = list(message_ids)
        places = [
            r["place_id"]
            for r in await conn.fetch(
                "SELECT DISTINCT place_id FROM place_messages WHERE message_id = ANY($1::bigint[])", ids
            )
        ]
        pairs = {
            (r["src"], r["dst"])
            for r in await conn.fetch(
                """SELECT DISTINCT src, dst FROM place_moves WHERE message_id = ANY($1::bigint[])
               OR from_message_id = ANY($1::bigint[]) OR success_message_id = ANY($1::bigint[])""",
                ids,
            )
        }
        if not places and not pairs:
            return {}
        moves = int(
            (
                await conn.execute(
                    """DELETE FROM place_moves WHERE message_id = ANY($1::bigint[]) OR from_message_id = ANY($1::bigint[])""",
                    ids,
                )
            ).split()[-1]
        )
        await conn.execute(
            "UPDATE place_moves SET success_message_id = NULL WHERE success_message_id = ANY($1::bigint[])", ids
        )
        await conn.execute("DELETE FROM place_messages WHERE message_id = ANY($1::bigint[])", ids)
        emptied = await _recompute(conn, places, exclude=ids)
        await _refresh_edges(conn, sorted(pairs))
        counts = {"places": emptied, "place_moves": moves}
        return {k: v for k, v in counts.items() if v}


async def _lock(conn: asyncpg.Connection, scope: str) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('places:' || $1, 0))", scope)


def _narrowest(a: str | None, b: str | None) -> str | None | bool:
    """The visibility of something derived from two places: the restricted one; False when both are restricted
    to different channels (nothing may be derived from both)."""
    if a is not None and b is not None and a != b:
        return False
    return a if a is not None else b


async def _refresh_edges(conn: asyncpg.Connection, pairs: Sequence[tuple[int, int]]) -> None:
    """Rebuild these edges from the moves the gate let through (no such move left: no edge)."""
    for src, dst in pairs:
        row = await conn.fetchrow(
            """SELECT count(*) AS n, count(success_message_id) AS ok, coalesce(avg(cost_s), 0) AS cost,
                      max(created_at) AS last, min(scope) AS scope
               FROM place_moves WHERE src = $1 AND dst = $2 AND action <> 'block_new_edge'""",
            src,
            dst,
        )
        if not row["n"]:
            await conn.execute("DELETE FROM place_edges WHERE src = $1 AND dst = $2", src, dst)
            continue
        vis = await conn.fetch("SELECT visible_in FROM places WHERE id = ANY($1::bigint[])", [src, dst])
        if len(vis) < 2:
            continue
        narrow = _narrowest(vis[0]["visible_in"], vis[1]["visible_in"])
        if narrow is False:
            continue
        await conn.execute(
            """INSERT INTO place_edges (scope, visible_in, src, dst, moves, successes, cost_s, last_seen)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
               ON CONFLICT (src, dst) DO UPDATE SET moves = excluded.moves, successes = excluded.successes,
                   cost_s = excluded.cost_s, last_seen = excluded.last_seen""",
            row["scope"],
            narrow,
            src,
            dst,
            row["n"],
            row["ok"],
            float(row["cost"]),
            row["last"],
        )


async def _recompute(conn: asyncpg.Connection, place_ids: Sequence[int], exclude: Sequence[int] = ()) -> int:
    """Rebuild each place's code, counters and label from its memberships; delete those left empty. The
    number deleted."""
    emptied = 0
    for pid in place_ids:
        rows = await conn.fetch(
            "SELECT embedding, weight, question, resolution, created_at FROM place_messages WHERE place_id = $1", pid
        )
        if not rows:
            await conn.execute("DELETE FROM places WHERE id = $1", pid)
            emptied += 1
            continue
        code = centroid([vec(r["embedding"]) for r in rows], [r["weight"] for r in rows])
        await conn.execute(
            """UPDATE places SET centroid = $2, weighted = $3, messages = $4, questions = $5, resolutions = $6,
                   last_seen = $7 WHERE id = $1""",
            pid,
            code,
            sum(1 for r in rows if r["weight"] > 0),
            len(rows),
            sum(1 for r in rows if r["question"]),
            sum(1 for r in rows if r["resolution"]),
            max(r["created_at"] for r in rows),
        )
        texts = await conn.fetch(
            """SELECT m.content FROM place_messages pm JOIN messages m ON m.id = pm.message_id
               WHERE pm.place_id = $1 AND pm.weight > 0 AND NOT (pm.message_id = ANY($2::bigint[]))
               ORDER BY pm.created_at DESC LIMIT $3""",
            pid,
            list(exclude),
            _LABEL_MESSAGES,
        )
        await conn.execute("UPDATE places SET label = $2 WHERE id = $1", pid, label(r["content"] for r in texts))
    return emptied
