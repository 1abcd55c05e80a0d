"""The macro library (seed 001 MacroLib): procedures distilled from exchanges that worked.

``distill`` reads a trajectory back from the conversation log when a person
says a problem was solved: their first substantive message since their last
resolution in that channel is the problem (the signature); the helpers'
instructions after their last "still broken" are the steps (short imperative
lines, behaviour cloning of what worked; suggestions that failed are left
out). ``add`` files it, folding it into a near-duplicate macro of the same
audience. ``suggest`` ranks the audience's macros by how close a problem is
to theirs, nudged by their success statistics and strength. Outcomes (a
later "that worked" or "still the same error" after a macro reached the
prompt) update the statistics; the dream ages strength by elapsed time
(success decays without use) and merges near-duplicates.

Every text in a macro is kept with the message it came from, so forgetting a
message removes its problem text, its steps and its outcomes, and a macro
left without a problem, a step or a confirmation is deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg
import numpy as np

from memory.conversation import StoredMessage, require_scope
from memory.embed import similarity
from memory.places.codes import FAILURE, SUCCESS, advice_step, is_substantive, outcome, steps
from memory.vectors import centroid, unit, vec

log = logging.getLogger(__name__)

TRAJECTORY_WINDOW = timedelta(hours=12)
FOLD_SIMILARITY = 0.90  # a new trajectory this close to a macro's problem is folded into it
MERGE_SIMILARITY = 0.92  # the dream merges macros this close
MIN_SIMILARITY = 0.75  # suggest: below this a macro is not about the problem
HALF_LIFE = timedelta(days=60)  # strength halves after this long without a confirmation
DROP_STRENGTH = 0.05  # aged below this with no confirmation: dropped
SIGNATURE_CHARS = 240


@dataclass(frozen=True)
class Trajectory:
    scope: str
    visible_in: str | None
    channel_id: str
    problem_id: int
    problem: str
    steps: tuple[tuple[int, str], ...]  # (message id, imperative line)
    confirmation_id: int
    at: datetime


@dataclass(frozen=True)
class Macro:
    id: int
    scope: str
    visible_in: str | None
    channel_id: str
    signature: str
    steps: tuple[str, ...]
    successes: int
    failures: int
    strength: float
    uses: int
    last_update: datetime
    similarity: float = 0.0
    score: float = 0.0
    message_ids: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "signature": self.signature,
            "steps": list(self.steps),
            "channel": self.channel_id,
            "successes": self.successes,
            "failures": self.failures,
            "strength": round(self.strength, 3),
            "uses": self.uses,
            "similarity": round(self.similarity, 4),
            "score": round(self.score, 4),
            "last_update": self.last_update.isoformat(),
        }


class MacroStore:
    def __init__(self, pool: asyncpg.Pool, *, fold_similarity: float = FOLD_SIMILARITY) -> None:
        self.pool = pool
        self.fold_similarity = fold_similarity

    # --- distil and add ------------------------------------------------------------------------------------

    async def distill(self, confirmation: StoredMessage, conn: asyncpg.Connection | None = None) -> Trajectory | None:
        """The trajectory ``confirmation`` (a person saying it worked) ends, or None when there is no problem
        and no instruction to keep."""
        db = conn or self.pool
        rows = await db.fetch(
            """SELECT * FROM (
                   SELECT id, author_id, external_id, reply_to_external, content, created_at FROM messages
                   WHERE scope = $1 AND channel_id = $2 AND created_at >= $3 AND created_at <= $4 AND id <> $5
                     AND (created_at < $4 OR id < $5)
                   ORDER BY created_at DESC, id DESC LIMIT 400) recent  -- a busy channel: its latest turns
               ORDER BY created_at, id""",
            confirmation.scope,
            confirmation.channel_id,
            confirmation.created_at - TRAJECTORY_WINDOW,
            confirmation.created_at,
            confirmation.id,
        )
        asker = confirmation.author_id
        start = 0
        for i, r in enumerate(rows):  # after the asker's previous resolution here
            if r["author_id"] == asker and outcome(r["content"]) == SUCCESS:
                start = i + 1
        rows = rows[start:]
        problem = next(
            (
                r
                for r in rows
                if r["author_id"] == asker and is_substantive(r["content"]) and outcome(r["content"]) is None
            ),
            None,
        )
        if problem is None:
            return None
        after = rows[rows.index(problem) + 1 :]
        mine = {r["external_id"] for r in rows if r["author_id"] == asker}
        replies = [r for r in after if r["author_id"] != asker and r["reply_to_external"] in mine]
        helpers = set(id(r) for r in (replies or [r for r in after if r["author_id"] != asker]))
        kept: list[tuple[int, str]] = []
        advice: list[tuple[int, str]] = []  # the helpers' words, for when none of them reads as an instruction
        for r in after:
            if r["author_id"] == asker:
                if outcome(r["content"]) == FAILURE:
                    kept, advice = [], []  # what was suggested before did not work
            elif id(r) in helpers:
                kept += [(r["id"], s) for s in steps(r["content"]) if s not in {t for _, t in kept}]
                if is_substantive(r["content"]) and outcome(r["content"]) is None:
                    advice.append((r["id"], r["content"]))
        if not kept and advice:
            # "Your join key is not unique; drop the duplicates first" worked too: the last advice, as one step
            kept = [(advice[-1][0], advice_step(advice[-1][1]))]
        if not kept:
            return None
        return Trajectory(
            confirmation.scope,
            confirmation.visible_in,
            confirmation.channel_id,
            problem["id"],
            problem["content"],
            tuple(kept),
            confirmation.id,
            confirmation.created_at,
        )

    async def add(self, t: Trajectory, problem_vector: np.ndarray, now: datetime) -> tuple[int, bool] | None:
        """File a trajectory: (macro id, folded into an existing one); None when its confirmation was filed
        already (absorbing again after a crash) or a message is gone."""
        v = unit(problem_vector)
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('macros:' || $1, 0))", t.scope)
            if await conn.fetchval("SELECT 1 FROM macro_outcomes WHERE message_id = $1", t.confirmation_id):
                return None
            ids = [t.problem_id, t.confirmation_id, *(m for m, _ in t.steps)]
            if await conn.fetchval("SELECT count(DISTINCT id) FROM messages WHERE id = ANY($1::bigint[])", ids) != len(
                set(ids)
            ):
                return None
            near = await conn.fetchrow(
                """SELECT m.id, max(1 - (p.embedding <=> $3)) AS cos FROM macros m
                   JOIN macro_problems p ON p.macro_id = m.id
                   WHERE m.scope = $1 AND m.visible_in IS NOT DISTINCT FROM $2
                   GROUP BY m.id ORDER BY cos DESC LIMIT 1""",
                t.scope,
                t.visible_in,
                v,
            )
            folded = near is not None and similarity(float(near["cos"])) >= self.fold_similarity
            if folded:
                macro_id = near["id"]
            else:
                macro_id = await conn.fetchval(
                    """INSERT INTO macros (scope, visible_in, channel_id, signature, embedding, created_at, last_update)
                       VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id""",
                    t.scope,
                    t.visible_in,
                    t.channel_id,
                    _signature(t.problem),
                    v,
                    t.at,
                )
            await conn.execute(
                """INSERT INTO macro_problems (macro_id, message_id, text, embedding) VALUES ($1, $2, $3, $4)
                   ON CONFLICT DO NOTHING""",
                macro_id,
                t.problem_id,
                _signature(t.problem),
                v,
            )
            have = {r["text"] for r in await conn.fetch("SELECT text FROM macro_steps WHERE macro_id = $1", macro_id)}
            position = await conn.fetchval(
                "SELECT coalesce(max(position), 0) FROM macro_steps WHERE macro_id = $1", macro_id
            )
            for message_id, line in t.steps:
                if line not in have:
                    position += 1
                    await conn.execute(
                        "INSERT INTO macro_steps (macro_id, position, text, message_id) VALUES ($1, $2, $3, $4)",
                        macro_id,
                        position,
                        line,
                        message_id,
                    )
            await conn.execute(
                "INSERT INTO macro_outcomes (macro_id, message_id, success, created_at) "
                "VALUES ($1, $2, true, $3) ON CONFLICT DO NOTHING",
                macro_id,
                t.confirmation_id,
                t.at,
            )
            await _restat(conn, [macro_id], now)
        log.info(
            "macro %s %s from confirmation %s (%d step(s))",
            macro_id,
            "extended" if folded else "distilled",
            t.confirmation_id,
            len(t.steps),
        )
        return int(macro_id), folded

    # --- suggest and outcomes ------------------------------------------------------------------------------

    async def suggest(
        self,
        scope: str,
        visible_channel: str | None,
        vector: np.ndarray,
        *,
        top_k: int = 3,
        min_similarity: float = MIN_SIMILARITY,
    ) -> list[Macro]:
        """The audience's best macros for a problem, best first (similarity, nudged by success and strength)."""
        require_scope(scope)
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        rows = await self.pool.fetch(
            """SELECT m.*, max(1 - (p.embedding <=> $3)) AS cos FROM macros m JOIN macro_problems p ON p.macro_id = m.id
               WHERE m.scope = $1 AND (m.visible_in IS NULL OR m.visible_in = $2::text)
               GROUP BY m.id ORDER BY cos DESC LIMIT $4""",
            scope,
            visible_channel,
            unit(vector),
            top_k * 4,
        )
        scored = []
        for r in rows:
            sim = float(similarity(float(r["cos"])))
            if sim < min_similarity:
                continue
            rate = (1 + r["successes"]) / (2 + r["successes"] + r["failures"])
            scored.append((sim + 0.05 * (rate * r["strength"] - 0.5), sim, r))
        scored.sort(key=lambda x: (-x[0], x[2]["id"]))
        chosen = scored[:top_k]
        lines = await self._steps([r["id"] for _, _, r in chosen])
        return [_macro(r, lines.get(r["id"], ([], [])), sim, score) for score, sim, r in chosen]

    async def get(self, scope: str, macro_id: int, *, visible_channel: str | None = None) -> Macro | None:
        """One macro the audience may see (``visible_channel`` None: the public one), else None."""
        row = await self.pool.fetchrow(
            "SELECT * FROM macros WHERE id = $1 AND scope = $2 AND (visible_in IS NULL OR visible_in = $3)",
            macro_id,
            scope,
            visible_channel,
        )
        if row is None:
            return None
        return _macro(row, (await self._steps([macro_id])).get(macro_id, ([], [])), 0.0, 0.0)

    async def _steps(self, ids: Sequence[int]) -> dict[int, tuple[list[str], list[int]]]:
        out: dict[int, tuple[list[str], list[int]]] = {}
        for r in await self.pool.fetch(
            "SELECT macro_id, text, message_id FROM macro_steps WHERE macro_id = ANY($1::bigint[]) "
            "ORDER BY macro_id, position, id",
            list(ids),
        ):
            texts, mids = out.setdefault(r["macro_id"], ([], []))
            texts.append(r["text"])
            mids.append(r["message_id"])
        for r in await self.pool.fetch(
            "SELECT macro_id, message_id FROM macro_problems WHERE macro_id = ANY($1::bigint[])", list(ids)
        ):
            out.setdefault(r["macro_id"], ([], []))[1].append(r["message_id"])
        return out

    async def record_uses(self, message: StoredMessage, macro_ids: Sequence[int]) -> None:
        """These macros reached the prompt for ``message`` (their next outcome from this person counts)."""
        if not macro_ids:
            return
        status = await self.pool.execute(
            """INSERT INTO macro_uses (macro_id, message_id, scope, channel_id, author_id, created_at)
               SELECT id, $2, $3, $4, $5, $6 FROM macros WHERE id = ANY($1::bigint[]) AND scope = $3
               ON CONFLICT DO NOTHING""",
            list(macro_ids),
            message.id,
            message.scope,
            message.channel_id,
            message.author_id,
            message.created_at,
        )
        if int(status.split()[-1]):
            await self.pool.execute(
                "UPDATE macros SET uses = uses + 1 WHERE id = ANY($1::bigint[]) AND scope = $2",
                list(macro_ids),
                message.scope,
            )

    async def outcome_of_uses(self, message: StoredMessage, success: bool, now: datetime) -> list[int]:
        """The person said the last suggestion worked (or not): an outcome for the macros that reached the
        prompt in their latest turn here (within the trajectory window). Their ids."""
        rows = await self.pool.fetch(
            """SELECT macro_id FROM macro_uses WHERE scope = $1 AND channel_id = $2 AND author_id = $3
                 AND created_at <= $4 AND created_at >= $5 AND message_id <> $6
                 AND message_id = (SELECT message_id FROM macro_uses WHERE scope = $1 AND channel_id = $2
                     AND author_id = $3 AND created_at <= $4 AND created_at >= $5 AND message_id <> $6
                     ORDER BY created_at DESC LIMIT 1)""",
            message.scope,
            message.channel_id,
            message.author_id,
            message.created_at,
            message.created_at - TRAJECTORY_WINDOW,
            message.id,
        )
        ids = [r["macro_id"] for r in rows]
        for macro_id in ids:
            await self.record_outcome(macro_id, message.id, success, now)
        return ids

    async def outcome_of_reply(
        self, reply: StoredMessage, reactor_id: str, success: bool | None, now: datetime
    ) -> list[int]:
        """The person who asked reacted to the bot's ``reply`` (✅ it worked, ❌ it did not; None: the reaction
        was taken back): an outcome, kept under the reply's id, for the macros that reached that reply's
        prompt. Someone else's reaction counts for nothing. Their ids."""
        if not reply.is_bot or reply.derived_from_id is None:
            return []
        async with self.pool.acquire() as conn, conn.transaction():
            ids = [
                r["macro_id"]
                for r in await conn.fetch(
                    """SELECT u.macro_id FROM macro_uses u JOIN messages m ON m.id = u.message_id
                   WHERE u.scope = $1 AND u.message_id = $2 AND m.author_id = $3 ORDER BY u.macro_id""",
                    reply.scope,
                    reply.derived_from_id,
                    reactor_id,
                )
            ]
            if not ids:
                return []
            if success is None:
                await conn.execute(
                    "DELETE FROM macro_outcomes WHERE macro_id = ANY($1::bigint[]) AND message_id = $2", ids, reply.id
                )
            else:
                await conn.executemany(
                    """INSERT INTO macro_outcomes (macro_id, message_id, success, created_at) VALUES ($1, $2, $3, $4)
                       ON CONFLICT (macro_id, message_id) DO UPDATE SET success = excluded.success""",
                    [(i, reply.id, success, now) for i in ids],
                )
            await _restat(conn, ids, now)
        return ids

    async def record_outcome(self, macro_id: int, message_id: int, success: bool, now: datetime) -> None:
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                """INSERT INTO macro_outcomes (macro_id, message_id, success, created_at) VALUES ($1, $2, $3, $4)
                   ON CONFLICT (macro_id, message_id) DO UPDATE SET success = excluded.success""",
                macro_id,
                message_id,
                success,
                now,
            )
            await _restat(conn, [macro_id], now)

    # --- dream ---------------------------------------------------------------------------------------------

    async def age(self, now: datetime, scope: str | None, half_life: timedelta = HALF_LIFE) -> tuple[int, int]:
        """Strength follows the time since the last confirmation (by elapsed time, never by how often the
        dream ran); macros aged below ``DROP_STRENGTH`` are dropped. (aged, dropped)."""
        days = half_life.total_seconds() / 86400
        status = await self.pool.execute(
            """UPDATE macros SET strength = least(1, power(0.5, greatest(extract(epoch FROM ($1 - last_update)), 0)
                                                             / 86400.0 / $3))
               WHERE ($2::text IS NULL OR scope = $2)""",
            now,
            scope,
            days,
        )
        aged = int(status.split()[-1])
        dropped = await self.pool.execute(
            "DELETE FROM macros WHERE strength < $1 AND ($2::text IS NULL OR scope = $2)", DROP_STRENGTH, scope
        )
        return aged, int(dropped.split()[-1])

    async def merge_similar(
        self, scope: str | None, threshold: float = MERGE_SIMILARITY, now: datetime | None = None
    ) -> int:
        """Fold near-duplicate macros of one audience into the better-confirmed one; the number folded away."""
        merged = 0
        groups = await self.pool.fetch(
            """SELECT scope, visible_in FROM macros WHERE ($1::text IS NULL OR scope = $1)
               GROUP BY scope, visible_in HAVING count(*) > 1""",
            scope,
        )
        for g in groups:
            async with self.pool.acquire() as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('macros:' || $1, 0))", g["scope"])
                rows = await conn.fetch(
                    """SELECT id, embedding, last_update FROM macros WHERE scope = $1
                       AND visible_in IS NOT DISTINCT FROM $2 ORDER BY successes DESC, id""",
                    g["scope"],
                    g["visible_in"],
                )
                alive = [(r["id"], unit(vec(r["embedding"]))) for r in rows]
                gone: set[int] = set()
                for i, (keep, kv) in enumerate(alive):
                    if keep in gone:
                        continue
                    for drop, dv in alive[i + 1 :]:
                        if drop in gone or similarity(float(kv @ dv)) < threshold:
                            continue
                        have = {
                            r["text"]
                            for r in await conn.fetch("SELECT text FROM macro_steps WHERE macro_id = $1", keep)
                        }
                        await conn.execute(
                            "DELETE FROM macro_steps WHERE macro_id = $1 AND text = ANY($2::text[])", drop, list(have)
                        )
                        await conn.execute(
                            """UPDATE macro_steps SET macro_id = $1, position = position + 1000 WHERE macro_id = $2""",
                            keep,
                            drop,
                        )
                        for table in ("macro_problems", "macro_outcomes", "macro_uses"):
                            await conn.execute(
                                f"UPDATE {table} t SET macro_id = $1 WHERE macro_id = $2 AND NOT EXISTS "
                                f"(SELECT 1 FROM {table} k WHERE k.macro_id = $1 AND "
                                f"k.message_id = t.message_id)",
                                keep,
                                drop,
                            )
                        await conn.execute("DELETE FROM macros WHERE id = $1", drop)
                        gone.add(drop)
                        merged += 1
                        await _restat(conn, [keep], now, keep_time=now is None)
        return merged

    # --- forgetting ----------------------------------------------------------------------------------------

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> dict[str, int]:
        """Remove the messages' problem texts, steps, outcomes and uses; delete macros left without a problem,
        a step or a confirmation; restate the others."""
        ids = list(message_ids)
        touched = [
            r["macro_id"]
            for r in await conn.fetch(
                """SELECT macro_id FROM macro_problems WHERE message_id = ANY($1::bigint[])
               UNION SELECT macro_id FROM macro_steps WHERE message_id = ANY($1::bigint[])
               UNION SELECT macro_id FROM macro_outcomes WHERE message_id = ANY($1::bigint[])""",
                ids,
            )
        ]
        if not touched:
            await conn.execute("DELETE FROM macro_uses WHERE message_id = ANY($1::bigint[])", ids)
            return {}
        for table in ("macro_problems", "macro_steps", "macro_outcomes", "macro_uses"):
            await conn.execute(f"DELETE FROM {table} WHERE message_id = ANY($1::bigint[])", ids)
        status = await conn.execute(
            """DELETE FROM macros m WHERE m.id = ANY($1::bigint[]) AND (
                   NOT EXISTS (SELECT 1 FROM macro_problems p WHERE p.macro_id = m.id)
                   OR NOT EXISTS (SELECT 1 FROM macro_steps s WHERE s.macro_id = m.id)
                   OR NOT EXISTS (SELECT 1 FROM macro_outcomes o WHERE o.macro_id = m.id AND o.success))""",
            touched,
        )
        dropped = int(status.split()[-1])
        await _restat(conn, touched, None, keep_time=True)
        return {k: v for k, v in {"macros": dropped, "macros_changed": len(touched) - dropped}.items() if v}

    async def counts(self, scope: str) -> dict[str, int]:
        require_scope(scope)
        row = await self.pool.fetchrow(
            "SELECT count(*) AS n, coalesce(sum(successes), 0) AS ok, coalesce(sum(failures), 0) AS bad "
            "FROM macros WHERE scope = $1",
            scope,
        )
        return {"macros": int(row["n"]), "macro confirmations": int(row["ok"]), "macro failures": int(row["bad"])}


async def _restat(
    conn: asyncpg.Connection, macro_ids: Sequence[int], now: datetime | None, *, keep_time: bool = False
) -> None:
    """Statistics, signature and code of each macro from its rows (a confirmation renews its strength)."""
    for mid in macro_ids:
        problems = await conn.fetch(
            "SELECT text, embedding FROM macro_problems WHERE macro_id = $1 ORDER BY message_id", mid
        )
        if not problems:
            continue
        stats = await conn.fetchrow(
            "SELECT count(*) FILTER (WHERE success) AS ok, count(*) FILTER (WHERE NOT success) AS bad, "
            "max(created_at) FILTER (WHERE success) AS last FROM macro_outcomes WHERE macro_id = $1",
            mid,
        )
        code = centroid([vec(p["embedding"]) for p in problems])
        if keep_time or now is None or stats["last"] is None:
            await conn.execute(
                """UPDATE macros SET successes = $2, failures = $3, signature = $4, embedding = $5,
                       last_update = coalesce($6, last_update) WHERE id = $1""",
                mid,
                stats["ok"],
                stats["bad"],
                problems[0]["text"],
                code,
                stats["last"],
            )
        else:
            await conn.execute(
                """UPDATE macros SET successes = $2, failures = $3, signature = $4, embedding = $5,
                       last_update = greatest(last_update, $6), strength = 1 WHERE id = $1""",
                mid,
                stats["ok"],
                stats["bad"],
                problems[0]["text"],
                code,
                stats["last"],
            )


def _signature(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= SIGNATURE_CHARS else t[: SIGNATURE_CHARS - 1].rstrip() + "…"


def _macro(r: asyncpg.Record, lines: tuple[list[str], list[int]], sim: float, score: float) -> Macro:
    return Macro(
        r["id"],
        r["scope"],
        r["visible_in"],
        r["channel_id"],
        r["signature"],
        tuple(lines[0]),
        r["successes"],
        r["failures"],
        float(r["strength"]),
        r["uses"],
        r["last_update"],
        sim,
        score,
        tuple(sorted(set(lines[1]))),
    )
