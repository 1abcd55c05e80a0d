"""The weights layer: replay consolidated into a LoRA adapter, per scope, on human approval (issue 12, item 2).

Seed 001's second half of consolidation: at night the replay mix (episodes
picked by the replay priority, facts of the graph rendered as sentences, and
the latest turns; 50 / 30 / 20 by default) trains a small adapter on the
current model. The trainer (``bot.distill``) evaluates the candidate before
anyone sees it: parametric recall of the scope's facts with memory retrieval
switched off (cloze questions, exact match against the adapter in use now) and
perplexity on a fixed held-out text against the base model. Only a candidate
that passes becomes an ``adapter`` proposal; approving it makes it the scope's
active adapter, which the engine applies to that scope's replies from the next
generation on (on its worker thread, between generations); rejecting it
deletes it; ``rollback`` returns to the adapter it replaced.

Trust: an adapter is trained on one scope's public messages only (never a
restricted channel's, never another scope's) and is applied only to that
scope. ``adapter_sources`` records every message whose words went into it:
forgetting any of them taints the adapter, its files are deleted, and the
scope stops using it at once (recall reads the active adapter from the
database for every message). The next distillation trains without them.

Off by default (``HIPPOBOT_DISTILL_ENABLED``): training takes minutes of CPU.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import asyncpg
import numpy as np

from memory.conversation import require_scope
from memory.proposer import Proposer
from memory.layers.base import PREAMBLE, BaseLayer, KindHandler, LayerStep, RecallQuery, Section, StepResult, told
from memory.salience import replay_order

log = logging.getLogger(__name__)

ADAPTER_KIND = "adapter"
# an adapter's life: proposed -> active -> retired (replaced) | rolled_back; proposed -> rejected;
# a candidate that failed its evaluation is 'failed'; any of them -> tainted when a source is forgotten
PROPOSED, ACTIVE, RETIRED, ROLLED_BACK, REJECTED, FAILED, TAINTED = (
    "proposed",
    "active",
    "retired",
    "rolled_back",
    "rejected",
    "failed",
    "tainted",
)


class AdapterError(ValueError):
    """An adapter command that cannot be done (nothing to roll back, files gone, another scope's adapter)."""


@dataclass(frozen=True)
class AdapterRef:
    """The adapter a generation should run with: engines load it once (by ``key``) and switch between jobs."""

    id: int
    path: Path

    @property
    def key(self) -> str:
        return f"adapter-{self.id}"


@dataclass(frozen=True)
class TrainingText:
    kind: str  # 'episode' | 'fact' | 'turn'
    text: str
    message_ids: tuple[int, ...]


@dataclass(frozen=True)
class Cloze:
    """A teach -> test question: the model, with no memory in its prompt, should continue ``prompt`` with
    ``answer``."""

    prompt: str
    answer: str
    message_ids: tuple[int, ...] = ()


@dataclass
class DistillOutcome:
    """What the trainer hands back: the candidate's directory, its evaluation, and the verdict."""

    path: Path
    metrics: dict[str, Any]
    passed: bool
    reason: str


class AdapterTrainer(Protocol):
    """Trains and evaluates a candidate (blocking: the layer calls it in a thread)."""

    base_model: str

    def distill(
        self, texts: Sequence[TrainingText], questions: Sequence[Cloze], current: Path | None, out_dir: Path
    ) -> DistillOutcome: ...


@dataclass(frozen=True)
class DistillPolicy:
    mix: tuple[float, float, float] = (0.5, 0.3, 0.2)  # episodic, semantic facts, recent turns
    max_texts: int = 400  # training texts gathered per scope (split by the mix)
    max_questions: int = 40
    min_questions: int = 3  # fewer facts than this: nothing to measure recall on, no candidate
    min_new_messages: int = 20  # people's public messages since the scope's last candidate before it distils again
    lookback: timedelta = timedelta(days=30)  # episodes and turns of the scope's latest month
    min_confidence: float = 0.3  # facts below this (hedged, contradicted) are not taught


@dataclass
class AdapterRow:
    id: int
    scope: str
    status: str
    path: Path
    metrics: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    activated_at: datetime | None = None
    replaced_id: int | None = None
    proposal_id: int | None = None
    note: str | None = None

    def describe(self) -> str:
        m = self.metrics
        numbers = ""
        if "delta_em" in m:
            numbers = (
                f" EM {m.get('em_current', 0):.2f} -> {m.get('em_candidate', 0):.2f}, "
                f"perplexity x{m.get('ppl_ratio', 0):.3f}, {m.get('steps', 0)} steps in "
                f"{m.get('train_s', 0):.0f} s"
            )
        return f"adapter #{self.id} ({self.status}){numbers}"


def _row(r: asyncpg.Record) -> AdapterRow:
    return AdapterRow(
        id=r["id"],
        scope=r["scope"],
        status=r["status"],
        path=Path(r["path"]),
        metrics=dict(r["metrics"] or {}),
        created_at=r["created_at"],
        activated_at=r["activated_at"],
        replaced_id=r["replaced_id"],
        proposal_id=r["proposal_id"],
        note=r["note"],
    )


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


class WeightsLayer(BaseLayer):
    name = "weights"

    def __init__(
        self,
        pool: asyncpg.Pool,
        adapters_dir: Path,
        *,
        trainer: AdapterTrainer | None = None,
        semantic: Any = None,
        enabled: bool = False,
        policy: DistillPolicy | None = None,
        bot_name: str = "hippo",
        proposer: Proposer | None = None,
    ) -> None:
        """``proposer``: governance, which stores each candidate that passes as an ``adapter`` proposal
        (None: candidates that pass are an error, for a layer built without the dream cycle)."""
        self.pool = pool
        self.adapters_dir = Path(adapters_dir)
        self.trainer = trainer
        self.semantic = semantic  # SemanticMemory, for the facts of the mix (None: no facts, no questions)
        self.enabled = enabled
        self.policy = policy or DistillPolicy()
        self.bot_name = bot_name
        self.proposer = proposer

    # --- the seam -----------------------------------------------------------------------------------------------

    async def recall(self, query: RecallQuery) -> Section | None:
        """No words for the prompt: the scope's active adapter, for the engine (``ContextBundle.adapter``)."""
        ref = await self.active(query.scope)
        if ref is None:
            return None
        return Section(self.name, "", (), placement=PREAMBLE, priority=99, meta={"adapter": ref})

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        """Every adapter trained on one of these messages is tainted: its files go, it is never used again,
        and a pending proposal for it expires."""
        rows = await conn.fetch(
            """UPDATE adapters SET status = 'tainted', tainted_at = clock_timestamp(),
                      note = 'trained on a forgotten message'
               WHERE id IN (SELECT adapter_id FROM adapter_sources WHERE message_id = ANY($1::bigint[]))
                 AND status <> 'tainted'
               RETURNING id, path, proposal_id""",
            list(message_ids),
        )
        if not rows:
            return {}
        await conn.execute("DELETE FROM adapter_sources WHERE message_id = ANY($1::bigint[])", list(message_ids))
        if self.proposer is not None:
            await self.proposer.withdraw(
                [r["proposal_id"] for r in rows if r["proposal_id"] is not None],
                reason="(its adapter was trained on a forgotten message)",
                conn=conn,
            )
        for r in rows:
            _remove(Path(r["path"]))
            log.info("adapter %s tainted by forgetting; its files are deleted", r["id"])
        return {"adapters_tainted": len(rows)}

    def dream_steps(self) -> Sequence[tuple[str, LayerStep]]:
        return (("adapter_distillation", self.distill_step),) if self.enabled and self.trainer is not None else ()

    def proposal_kinds(self) -> Mapping[str, KindHandler]:
        return {ADAPTER_KIND: self.apply_proposal}

    def proposal_rejections(self) -> Mapping[str, KindHandler]:
        return {ADAPTER_KIND: self.reject_proposal}

    async def stats(self, scope: str) -> Mapping[str, object]:
        rows = await self.pool.fetch(
            "SELECT status, count(*) AS n FROM adapters WHERE scope = $1 GROUP BY status", scope
        )
        if not rows:
            return {}
        active = await self.active(scope)
        return {
            "adapter in use": f"#{active.id}" if active else "none",
            "adapters": ", ".join(f"{r['n']} {r['status']}" for r in rows),
        }

    # --- adapters -------------------------------------------------------------------------------------------

    async def active(self, scope: str) -> AdapterRef | None:
        row = await self.pool.fetchrow("SELECT id, path FROM adapters WHERE scope = $1 AND status = 'active'", scope)
        if row is None or not Path(row["path"]).exists():
            return None
        return AdapterRef(row["id"], Path(row["path"]))

    async def history(self, scope: str) -> list[AdapterRow]:
        require_scope(scope)
        return [
            _row(r)
            for r in await self.pool.fetch("SELECT * FROM adapters WHERE scope = $1 ORDER BY id DESC LIMIT 20", scope)
        ]

    async def report(self, scope: str) -> str:
        """What ``/dream adapter status`` and ``hippobot adapters`` print: the adapter in use and the latest ones."""
        rows = await self.history(scope)
        if not rows:
            state = "on" if self.enabled and self.trainer is not None else "off (HIPPOBOT_DISTILL_ENABLED)"
            return f"no adapters yet in {scope}; distillation is {state}"
        active = next((r for r in rows if r.status == ACTIVE), None)
        lines = [f"in use: {active.describe() if active else 'no adapter (the base model)'}"]
        lines += [
            f"  #{r.id} {r.status:<11} {r.created_at:%Y-%m-%d %H:%M} {r.describe().split(')', 1)[-1].strip()}"
            + (f" ({r.note})" if r.note else "")
            for r in rows
        ]
        return "\n".join(lines)

    async def apply_proposal(self, conn: asyncpg.Connection, row: Any, approvers: str) -> int:
        """Approving an ``adapter`` proposal: the candidate becomes the scope's active adapter."""
        adapter_id, scope = int(row["payload"]["adapter_id"]), row["scope"]
        a = await conn.fetchrow("SELECT * FROM adapters WHERE id = $1 FOR UPDATE", adapter_id)
        if a is None or a["scope"] != scope:
            raise AdapterError(f"proposal #{row['id']} names adapter #{adapter_id}, which is not this server's")
        if a["status"] != PROPOSED:
            raise AdapterError(f"adapter #{adapter_id} is {a['status']}: it can no longer be applied")
        if not Path(a["path"]).exists():
            raise AdapterError(f"adapter #{adapter_id}'s files are gone from {a['path']}")
        previous = await conn.fetchval(
            "UPDATE adapters SET status = 'retired' WHERE scope = $1 AND status = 'active' RETURNING id", scope
        )
        await conn.execute(
            """UPDATE adapters SET status = 'active', activated_at = clock_timestamp(), replaced_id = $2
               WHERE id = $1""",
            adapter_id,
            previous,
        )
        log.info("adapter %s active in %s (approved by %s; replaces %s)", adapter_id, scope, approvers, previous)
        return adapter_id

    async def reject_proposal(self, conn: asyncpg.Connection, row: Any, deciders: str) -> None:
        """A rejected (or expired) ``adapter`` proposal deletes the candidate."""
        path = await conn.fetchval(
            "UPDATE adapters SET status = 'rejected' WHERE id = $1 AND status = 'proposed' RETURNING path",
            int(row["payload"]["adapter_id"]),
        )
        if path is not None:
            _remove(Path(path))

    async def rollback(self, scope: str) -> tuple[int, int | None]:
        """Stop using the scope's adapter and go back to the one it replaced (or to none):
        (the adapter rolled back, the adapter now in use or None)."""
        require_scope(scope)
        async with self.pool.acquire() as conn, conn.transaction():
            current = await conn.fetchrow(
                "SELECT * FROM adapters WHERE scope = $1 AND status = 'active' FOR UPDATE", scope
            )
            if current is None:
                raise AdapterError("no adapter is in use here: nothing to roll back")
            await conn.execute("UPDATE adapters SET status = 'rolled_back' WHERE id = $1", current["id"])
            back = None
            if current["replaced_id"] is not None:
                prev = await conn.fetchrow("SELECT * FROM adapters WHERE id = $1 FOR UPDATE", current["replaced_id"])
                if prev is not None and prev["status"] == RETIRED and Path(prev["path"]).exists():
                    await conn.execute(
                        "UPDATE adapters SET status = 'active', activated_at = clock_timestamp() WHERE id = $1",
                        prev["id"],
                    )
                    back = int(prev["id"])
        _remove(Path(current["path"]))
        log.info("adapter %s rolled back in %s; now %s", current["id"], scope, back or "the base model")
        return int(current["id"]), back

    async def sweep(self) -> int:
        """Delete the files nothing can use again: rejected, failed, and retired adapters other than the
        one the active adapter replaced (the rollback target). Returns how many directories went."""
        # a candidate whose proposal was decided against (its rejection handler normally did this already)
        offered = await self.pool.fetch(
            "SELECT id, proposal_id FROM adapters WHERE status = 'proposed' AND proposal_id IS NOT NULL"
        )
        fate = await self.proposer.statuses([r["proposal_id"] for r in offered]) if offered and self.proposer else {}
        refused = [r["id"] for r in offered if fate.get(r["proposal_id"]) in ("rejected", "expired")]
        rows = await self.pool.fetch(
            """SELECT a.id, a.path FROM adapters a
               WHERE a.status IN ('rejected', 'failed', 'rolled_back', 'tainted')
                  OR (a.status = 'retired' AND NOT EXISTS (
                        SELECT 1 FROM adapters b WHERE b.status = 'active' AND b.replaced_id = a.id))
                  OR (a.status = 'proposed' AND a.id = ANY($1::bigint[]))""",
            refused,
        )
        gone = 0
        for r in rows:
            path = Path(r["path"])
            if path.exists():
                _remove(path)
                gone += 1
        await self.pool.execute(
            "UPDATE adapters SET status = 'rejected' WHERE status = 'proposed' AND id = ANY($1::bigint[])", refused
        )
        return gone

    # --- the replay mix -------------------------------------------------------------------------------------

    async def replay_mix(self, scope: str, now: datetime) -> tuple[list[TrainingText], list[Cloze]]:
        """The training texts (episodes by replay priority, facts as sentences, latest turns; public only) and
        the cloze questions that test what they teach."""
        require_scope(scope)
        p = self.policy
        total = sum(p.mix)
        want = [max(1, round(p.max_texts * w / total)) if w > 0 else 0 for w in p.mix]
        # the scope's latest weeks: an imported history's last month, not the calendar's
        latest = await self.pool.fetchval("SELECT max(created_at) FROM messages WHERE scope = $1", scope)
        since = min(now, latest or now) - p.lookback
        texts = await self._episodes(scope, since, now, want[0])
        facts, sentence_questions = await self._facts(scope, now, want[1])
        texts += facts
        texts += await self._turns(scope, since, want[2])
        said = {i for t in texts if t.kind != "fact" for i in t.message_ids}
        questions = await self._message_questions(scope, said)
        if len(questions) < p.min_questions:
            questions += sentence_questions
        return texts, questions[: p.max_questions]

    async def _message_questions(self, scope: str, trained: set[int]) -> list[Cloze]:
        """Teach -> test questions in the transcript's own words: a message the mix teaches, cut just before a
        fact's object ("Julia: I'm joining" -> "Greenleaf Foods"). The graph says which span is the fact."""
        if self.semantic is None or not trained:
            return []
        rows = await self.pool.fetch(
            """SELECT e.relation, t.display AS object, m.id AS message_id, m.author_name, m.content
               FROM kg_edges e JOIN kg_nodes t ON t.id = e.target_id
               JOIN kg_edge_sources src ON src.edge_id = e.id AND src.visible_in IS NULL
               JOIN messages m ON m.id = src.message_id
               WHERE e.scope = $1 AND e.contradicted_at IS NULL AND e.confidence >= $2
                 AND src.message_id = ANY($3::bigint[]) AND t.name <> 'bot'
               ORDER BY e.evidence_count DESC, e.id DESC""",
            scope,
            self.policy.min_confidence,
            sorted(trained),
        )
        out: list[Cloze] = []
        used: set[object] = set()  # one question per message, and per wording (a line said twice is one)
        for r in rows:
            if r["message_id"] in used or r["relation"].startswith("not_") or len(r["object"]) < 3:
                continue
            cut = message_cloze(r["author_name"], r["content"], r["object"])
            if cut is not None and cut[0].lower() not in used:
                used |= {r["message_id"], cut[0].lower()}
                out.append(Cloze(cut[0], cut[1], (r["message_id"],)))
        return out

    async def _episodes(self, scope: str, since: datetime, now: datetime, k: int) -> list[TrainingText]:
        if k <= 0:
            return []
        rows = await self.pool.fetch(
            """SELECT e.id, e.content, e.salience, e.created_at, e.embedding, e.message_id, m.author_name
               FROM episodes e JOIN messages m ON m.id = e.message_id
               WHERE e.scope = $1 AND e.visible_in IS NULL AND e.created_at >= $2
               ORDER BY e.salience DESC, e.created_at DESC LIMIT 2000""",
            scope,
            since,
        )
        if not rows:
            return []
        salience = np.array([r["salience"] for r in rows], dtype=np.float32)
        age = np.array([max((now - r["created_at"]).total_seconds() / 86400, 0.0) for r in rows], dtype=np.float32)
        vectors = np.stack([r["embedding"].to_numpy() for r in rows])
        order = await asyncio.to_thread(replay_order, salience, age, vectors, k)
        out = []
        for i in order:
            r = rows[i]
            # "author: text": what the person said, never the bot's reply (its own words are not evidence)
            out.append(TrainingText("episode", r["content"], (r["message_id"],)))
        return out

    async def _facts(self, scope: str, now: datetime, k: int) -> tuple[list[TrainingText], list[Cloze]]:
        if self.semantic is None or k <= 0:
            return [], []
        ids = [
            r["id"]
            for r in await self.pool.fetch(
                """SELECT e.id FROM kg_edges e
               WHERE e.scope = $1 AND e.contradicted_at IS NULL AND e.confidence >= $2
                 AND EXISTS (SELECT 1 FROM kg_edge_sources s WHERE s.edge_id = e.id AND s.visible_in IS NULL)
               ORDER BY e.evidence_count DESC, e.confidence DESC, e.id DESC LIMIT $3""",
                scope,
                self.policy.min_confidence,
                k,
            )
        ]
        facts = await self.semantic._facts(scope, ids, now, visible_channel=None)  # public sources only
        texts, questions = [], []
        for f in facts:
            sentence = f.sentence()
            texts.append(TrainingText("fact", _capitalised(sentence) + ".", tuple(f.message_ids)))
            cloze = cloze_of(sentence, f.relation, f.object_name)
            if cloze is not None:
                questions.append(Cloze(_capitalised(cloze[0]), cloze[1], tuple(f.message_ids)))
        return texts, questions

    async def _turns(self, scope: str, since: datetime, k: int, per_text: int = 4) -> list[TrainingText]:
        if k <= 0:
            return []
        rows = await self.pool.fetch(
            """SELECT id, channel_id, author_name, content, created_at FROM messages
               WHERE scope = $1 AND visible_in IS NULL AND created_at >= $2 AND content <> ''
               ORDER BY created_at DESC, id DESC LIMIT $3""",
            scope,
            since,
            k * per_text,
        )
        by_channel: dict[str, list[asyncpg.Record]] = {}
        for r in reversed(rows):
            by_channel.setdefault(r["channel_id"], []).append(r)
        out = []
        for msgs in by_channel.values():
            for i in range(0, len(msgs), per_text):
                chunk = msgs[i : i + per_text]
                out.append(
                    TrainingText(
                        "turn",
                        "\n".join(f"{m['author_name']}: {m['content']}" for m in chunk),
                        tuple(m["id"] for m in chunk),
                    )
                )
        return out[-k:]

    # --- the dream step -------------------------------------------------------------------------------------

    async def distill_step(self, now: datetime, scope: str | None) -> StepResult:
        result = StepResult(counts={"candidates": 0, "proposed": 0, "failed": 0, "files_removed": 0})
        result.counts["files_removed"] = await self.sweep()
        if self.trainer is None:
            return result
        scopes = (
            [scope]
            if scope is not None
            else [
                r["scope"]
                for r in await self.pool.fetch("SELECT DISTINCT scope FROM messages WHERE visible_in IS NULL")
            ]
        )
        for s in scopes:
            new = await self.pool.fetchval(  # by id, not time: an imported history is older than any adapter
                """SELECT count(*) FROM messages WHERE scope = $1 AND visible_in IS NULL AND NOT is_bot
                   AND id > coalesce((SELECT max(trained_through) FROM adapters WHERE scope = $1), 0)""",
                s,
            )
            through = await self.pool.fetchval("SELECT max(id) FROM messages WHERE scope = $1", s)
            if new < self.policy.min_new_messages:
                continue
            texts, questions = await self.replay_mix(s, now)
            if len(questions) < self.policy.min_questions:
                result.notes.append(f"{s}: {len(questions)} fact(s) to test recall on; no adapter trained")
                continue
            current = await self.active(s)
            out = self.adapters_dir / f"{_safe(s)}-{now:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
            t0 = time.perf_counter()
            try:
                outcome = await asyncio.to_thread(
                    self.trainer.distill, texts, questions, current.path if current else None, out
                )
            except Exception as exc:  # a failed training run loses nothing; the next night tries again
                log.exception("distillation failed in %s", s)
                _remove(out)
                result.notes.append(f"{s}: distillation failed: {exc}")
                result.counts["failed"] += 1
                continue
            outcome.metrics["total_s"] = round(time.perf_counter() - t0, 1)
            result.counts["candidates"] += 1
            adapter_id, proposal_id = await self._record(s, texts, outcome, current, now, through)
            if proposal_id is None:
                _remove(out)
                result.counts["failed"] += 1
                result.notes.append(f"{s}: candidate #{adapter_id} did not pass: {outcome.reason}")
            else:
                result.counts["proposed"] += 1
                result.notes.append(f"{s}: adapter proposal #{proposal_id} ({outcome.reason})")
        result.headline = told((result.counts["proposed"], "adapter{s} proposed (the bot trained on its memories)"))
        return result

    async def _record(
        self,
        scope: str,
        texts: Sequence[TrainingText],
        outcome: DistillOutcome,
        current: AdapterRef | None,
        now: datetime,
        through: int | None = None,
    ) -> tuple[int, int | None]:
        """The candidate's row and sources (passed or not: a failed one keeps its record), and its proposal."""
        base = getattr(self.trainer, "base_model", "")
        sources = sorted({i for t in texts for i in t.message_ids})
        async with self.pool.acquire() as conn, conn.transaction():
            # messages forgotten while it trained: the candidate is tainted before anyone sees it
            present = {
                r["id"]
                for r in await conn.fetch(
                    "SELECT id FROM messages WHERE scope = $1 AND id = ANY($2::bigint[])", scope, sources
                )
            }
            lost = len(sources) - len(present)
            status = PROPOSED if outcome.passed and not lost else (TAINTED if lost else FAILED)
            adapter_id = await conn.fetchval(
                """INSERT INTO adapters (scope, status, path, base_model, metrics, created_at, note, trained_through)
                   VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8) RETURNING id""",
                scope,
                status,
                str(outcome.path),
                base,
                outcome.metrics,
                now,
                None if status == PROPOSED else (outcome.reason if status == FAILED else "a source was forgotten"),
                through,
            )
            await conn.executemany(
                "INSERT INTO adapter_sources (adapter_id, message_id) VALUES ($1, $2)",
                [(adapter_id, i) for i in sorted(present)],
            )
            if status != PROPOSED:
                return adapter_id, None
            m = outcome.metrics
            payload = {
                "adapter_id": adapter_id,
                "metrics": m,
                "replaces": current.id if current else None,
                "description": (
                    f"A LoRA adapter distilled from this server's public memory ({m.get('texts', 0)} texts, "
                    f"{m.get('steps', 0)} steps in {m.get('train_s', 0):.0f} s). Exact recall of "
                    f"{m.get('questions', 0)} facts as they were said here, with no memory in the prompt: "
                    f"{m.get('em_current', 0):.2f} -> {m.get('em_candidate', 0):.2f}; "
                    f"held-out perplexity {m.get('ppl_base', 0):.2f} -> {m.get('ppl_candidate', 0):.2f}."
                ),
            }
            rationale = (
                f"Approve to use it for this server's replies from the next message on (rollback: "
                f"/dream adapter rollback). Trained on {len(present)} message(s); forgetting any of them "
                f"taints it (it is deleted and no longer used). {outcome.reason}"
            )
            if self.proposer is None:
                raise AdapterError("the weights layer was built without a proposer: it cannot propose an adapter")
            proposal_id = (
                await self.proposer.propose(
                    ADAPTER_KIND,
                    f"Adapter #{adapter_id}: memory in the model's weights",
                    payload,
                    rationale,
                    {"scope": scope, "metrics": m},
                    centroid=None,
                    now=now,
                    scope=scope,
                    conn=conn,
                )
            ).id
            await conn.execute("UPDATE adapters SET proposal_id = $2 WHERE id = $1", adapter_id, proposal_id)
        log.info("adapter %s proposed in %s as proposal %s", adapter_id, scope, proposal_id)
        return adapter_id, proposal_id


def cloze_of(sentence: str, relation: str, object_name: str) -> tuple[str, str] | None:
    """(prompt, answer) from a fact's sentence: everything up to the object, and the object. None for a fact
    that makes a poor question (a negation, the bot as object, a one-letter object)."""
    if relation.startswith("not_") or object_name == "bot":
        return None
    words = sentence.split()
    rel = relation.replace("_", " ").split()
    for i in range(len(words) - len(rel), 0, -1):
        if [w.lower() for w in words[i : i + len(rel)]] == rel:
            prompt, answer = " ".join(words[: i + len(rel)]), " ".join(words[i + len(rel) :])
            if len(answer) >= 2 and prompt:
                return prompt, answer
            return None
    return None


def message_cloze(author: str, content: str, answer: str, *, min_context: int = 12) -> tuple[str, str] | None:
    """("author: the message up to the answer", the answer as written) when the answer is in the message as a
    whole word after enough context to ask about it; else None."""
    match = re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", content, flags=re.IGNORECASE)
    if match is None or match.start() < min_context:
        return None
    return f"{author}: {content[: match.start()].rstrip()}", match.group(0)


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _safe(scope: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", scope)[:60]
