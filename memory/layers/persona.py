"""The persona layer (seed 002, Sonality): a personality that changes only on evidence.

Recall puts the persona in the prompt's preamble (first, after the fixed
``HIPPOBOT_PERSONA`` header, which stays the core identity): the snapshot
narrative and the strongest opinions, those nearest the message first, with
their confidence. Absorb scores the person's message (never the bot's
reply) with the Evidence Strength Score, logs it with its features, and
folds it into the state of the message's scope and audience (a restricted
channel's messages shape that channel's own persona, which starts from the
scope's public one). Updates are staged, netted and capped (memory.persona.
state); a reflection rewrites the snapshot, and a rewrite that would flip an
opinion or change the snapshot too much becomes a ``persona`` proposal,
applied only on approval. Its dream step decays unreinforced beliefs.
Forgetting removes the messages' evidence and recomputes the state from
what is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import asyncpg
import numpy as np

from memory.conversation import StoredMessage
from memory.embed import Embedder
from memory.errors import MemoryStoreError
from memory.layers.base import (
    PREAMBLE,
    AbsorbedTurn,
    BaseLayer,
    KindHandler,
    LayerStep,
    MemoryItem,
    RecallQuery,
    Section,
    StepResult,
    told,
)
from memory.persona.evidence import EvidenceScorer, LLMEvidenceScorer, ScoredMessage, TextModel
from memory.persona.reflection import change_share, describe, deterministic_snapshot, llm_snapshot, valid
from memory.persona.state import (
    Evidence,
    PersonaState,
    TopicStance,
    apply_evidence,
    decay,
    record_shift,
    reflection_due,
    set_belief,
)
from memory.persona.store import PersonaStore, certainty_of
from memory.clock import Clock, SystemClock
from memory.proposer import Proposer, Withdrawn

log = logging.getLogger(__name__)

PERSONA_KIND = "persona"
# what a persona proposal says once evidence it cited is forgotten (approving it then applies nothing)
WITHDRAWN = Withdrawn(
    title="Persona shift (withdrawn)",
    rationale="Withdrawn: evidence it cited was forgotten.",
    payload={"action": "withdrawn", "examples": []},
)
_RELEVANT = 0.35  # a topic this close to the message is shown before stronger, unrelated ones
_PROMPT_CHARS = 600  # of the snapshot in the prompt (a preamble line that does not fit is left out whole)
RECENT_TOPICS = 10  # messages back whose topics count as under discussion (with views and staged steps)


class PersonaLayer(BaseLayer):
    name = "persona"

    def __init__(
        self,
        pool: asyncpg.Pool,
        embedder: Embedder,
        *,
        core_identity: str = "",
        llm: TextModel | None = None,
        proposer: Proposer | None = None,
        change_limit: float = 0.6,
        opinions_shown: int = 5,
        graph: Any = None,
        clock: Clock | None = None,
    ) -> None:
        """``llm``: a capable configured model (scores evidence and reflects); None: the deterministic defaults.
        ``proposer``: governance, which stores a shift too large to apply unasked (None: such a shift is an
        error, for a layer built only to score). ``clock``: when a version is written outside a message's
        absorb (an approval, a forgetting); default the wall clock."""
        self.store = PersonaStore(pool)
        self.clock: Clock = clock or SystemClock()
        self.embedder = embedder
        self.core_identity = core_identity
        self.deterministic = EvidenceScorer(embedder)
        self.scorer: EvidenceScorer | LLMEvidenceScorer = (
            LLMEvidenceScorer(llm, self.deterministic) if llm is not None else self.deterministic
        )
        self.llm = llm
        self.proposer = proposer
        self.change_limit = change_limit
        self.opinions_shown = opinions_shown
        self.graph = graph  # SemanticMemory: what people here think (their stances) joins the bot's own view

    # --- recall --------------------------------------------------------------------------------------------

    async def recall(self, query: RecallQuery) -> Section | None:
        current = await self.store.for_audience(query.scope, query.audience.visible_channel)
        state = current.state if current is not None else PersonaState()
        items = [
            MemoryItem(
                "persona", None, state.snapshot, "Self-description: " + _first_sentences(state.snapshot), (), ref=None
            )
        ]
        for topic, belief in await self._shown(state, query.vector):
            line = describe(topic, belief)
            items.append(
                MemoryItem(
                    "opinion",
                    belief.confidence,
                    line,
                    "View: " + line,
                    tuple(belief.provenance[-5:]),
                    payload=(topic, belief),
                )
            )
        if self.graph is not None and (people := await self._people(query)):
            items.append(people)
        return Section(
            self.name,
            "",
            tuple(items),
            placement=PREAMBLE,
            priority=1,
            meta={"version": current.version if current else 0},
        )

    async def _people(self, query: RecallQuery) -> MemoryItem | None:
        """ "What people here think": the things most people took a clear stance on (the graph's sentiment),
        as this audience may see it."""
        stances = await self.graph.stances(query.scope, visible_channel=query.audience.visible_channel)
        if not stances:
            return None
        parts = []
        for thing, fans, critics, _ in stances:
            said = [
                f"{fans} like{'s' if fans == 1 else ''} it" if fans else "",
                f"{critics} dislike{'s' if critics == 1 else ''} it" if critics else "",
            ]
            parts.append(f"{thing} ({', '.join(p for p in said if p)})")
        line = "; ".join(parts)
        ids = tuple(sorted({i for *_, m in stances for i in m}))
        return MemoryItem("stances", None, line, "What people here think: " + line, ids, payload=stances)

    async def _shown(self, state: PersonaState, vector: np.ndarray) -> list[tuple[str, Any]]:
        opinions = state.strongest(50)
        if not opinions:
            return []
        vecs = await self._vectors([t for t, _ in opinions])
        v = np.asarray(vector, dtype=np.float32)
        relevant = [(t, b) for t, b in opinions if float(vecs[t] @ v) >= _RELEVANT]
        rest = [(t, b) for t, b in opinions if (t, b) not in relevant]
        return (relevant + rest)[: self.opinions_shown]

    async def _vectors(self, topics: Sequence[str]) -> dict[str, np.ndarray]:
        return await self.deterministic.embedded(topics)  # the scorer's cache: topics recur in both

    # --- absorb --------------------------------------------------------------------------------------------

    async def absorb(self, turn: AbsorbedTurn) -> None:
        await self.absorb_message(turn.message, turn.vector, turn.now)

    async def prepare_absorb(self, texts: Sequence[str]) -> None:
        """Parse a batch of messages ahead of their absorption (an import)."""
        await asyncio.to_thread(self.deterministic.parse_many, texts)  # the LLM scorer's fallback too

    async def absorb_message(self, message: StoredMessage, vector: np.ndarray, now: datetime) -> bool:
        """Score one person message and fold it into its audience's persona; False when skipped."""
        if message.is_bot or not message.content.strip():
            return False  # the bot's own words are never evidence
        async with self.store.pool.acquire() as conn:
            if await self.store.has_evidence(conn, message.id):
                return False
            nearest = await self.store.nearest_recent(conn, message.scope, message.visible_in, vector)
            before = await self._state(conn, message.scope, message.visible_in)  # a hint: read again under the lock
            recent = await self.store.recent_topics(conn, message.scope, message.visible_in, RECENT_TOPICS)
        # Topics under discussion: those with a view, a staged step towards one, or named in the audience's last
        # few messages. Not every phrase a message was ever filed under: engagement keeps its side topics for
        # good ("costs", "baseline"), and one of those named in passing would take the message over.
        known = list(dict.fromkeys([*before.beliefs, *(s.topic for s in before.staged), *recent]))
        scored = await self.scorer.score(message.content, vector, nearest=nearest, known=known)
        async with self.store.pool.acquire() as conn, conn.transaction():
            await self.store.lock(conn, message.scope, message.visible_in)
            if await self.store.has_evidence(conn, message.id):  # absorbed meanwhile (a retry)
                return False
            if not await conn.fetchval("SELECT 1 FROM messages WHERE id = $1 FOR KEY SHARE", message.id):
                return False  # forgotten meanwhile
            state = await self._state(conn, message.scope, message.visible_in)
            topics = await self._canonical(state, scored.topics)
            sure = {p: scored.certainty.get(p, 1.0) for p, _, _ in topics}
            ev = Evidence(
                message.id,
                scored.score,
                scored.reasoning_type,
                scored.novelty,
                tuple(TopicStance(c, d, sure[p]) for p, c, d in topics),
                scored.source_reliability,
            )
            changes = apply_evidence(state, ev)
            changes += await self._maybe_reflect(conn, state, message.scope, message.visible_in, now)
            reason = f"message {message.id}: {scored.reasoning_type} {scored.score:.2f}" + (
                "; " + "; ".join(changes) if changes else ""
            )
            version = await self.store.write(conn, message.scope, message.visible_in, state, reason, now)
            await self.store.log_evidence(
                conn,
                message_id=message.id,
                scope=message.scope,
                visible_in=message.visible_in,
                epoch=state.epoch,
                interaction=state.interaction_count,
                version=version,
                score=scored.score,
                reasoning_type=scored.reasoning_type,
                source_reliability=scored.source_reliability,
                novelty=scored.novelty,
                topics=[[*t, sure[t[0]]] for t in topics],
                features=scored.features,
                scorer=scored.scorer,
                embedding=vector,
                now=now,
            )
        return True

    async def _state(self, conn: asyncpg.Connection, scope: str, visible_in: str | None) -> PersonaState:
        current = await self.store.current(scope, visible_in, conn=conn)
        if current is not None:
            return current.state
        if visible_in is not None:  # a restricted channel's persona starts from the scope's public one
            public = await self.store.current(scope, None, conn=conn)
            if public is not None:
                return public.state
        return PersonaState()

    async def _canonical(self, state: PersonaState, topics: Sequence[tuple[str, int]]) -> list[tuple[str, str, int]]:
        """(phrase, the state's topic it names, direction), the message's main topic first.

        A phrase near a known topic is that topic. The main topic is the first one already under
        discussion here (a message in a conversation is most often about what is being discussed), else the
        scorer's first; only it carries a direction into the update, the others count as engagement.
        """
        if not topics:
            return []
        known = list(dict.fromkeys([*state.beliefs, *state.engagement]))
        vecs = await self._vectors([*known, *(p for p, _ in topics)])
        named: list[tuple[str, str, int, bool]] = []
        for phrase, direction in topics:
            canon = self.deterministic.canonical_topic(phrase, vecs[phrase], {k: vecs[k] for k in known})
            if all(c != canon for _, c, _, _ in named):
                named.append((phrase, canon, direction, canon in known))
        main = next((i for i, n in enumerate(named) if n[3]), 0)
        ordered = [named[main]] + [n for i, n in enumerate(named) if i != main]
        return [(p, c, d if i == 0 else 0) for i, (p, c, d, _) in enumerate(ordered)]

    async def score(self, text: str) -> ScoredMessage:
        """The ESS of a text, as absorb would score it in an empty scope (for the CLI and the evaluation)."""
        return await self.scorer.score(text, await self.embedder.embed(text))

    # --- reflection and proposals --------------------------------------------------------------------------

    async def _maybe_reflect(
        self,
        conn: asyncpg.Connection,
        state: PersonaState,
        scope: str,
        visible_in: str | None,
        now: datetime,
        *,
        force: bool = False,
    ) -> list[str]:
        if state.pending_proposal is not None:
            # without a proposer (a layer built for scoring) the proposal's fate is unknown: keep holding
            status = (
                (await self.proposer.statuses([state.pending_proposal], conn=conn)).get(state.pending_proposal)
                if self.proposer is not None
                else "pending"
            )
            if status == "pending":
                return []
            state.pending_proposal = None  # rejected, expired or gone: the held flips are dropped
            dropped = len(state.held)
            state.held = []
            if dropped:
                return [f"{dropped} held shift(s) dropped: proposal {status or 'gone'}"]
        if not (force or reflection_due(state) or state.held):
            return []
        new = deterministic_snapshot(state)
        if not valid(state.snapshot, new):
            return ["reflection rejected by validation"]
        share = change_share(state.snapshot, new)
        state.last_reflection_at = state.interaction_count
        state.shift_since_reflection = 0.0
        state.pending_insights = []
        if state.held or share > self.change_limit:
            after = _with_held(state)
            proposal = await self._propose(conn, scope, visible_in, state, deterministic_snapshot(after), share, now)
            state.pending_proposal = proposal
            return [f"reflection needs approval: proposal #{proposal} (change {share:.0%}, {len(state.held)} flip(s))"]
        state.snapshot = new
        return [f"reflected (change {share:.0%})"]

    async def _propose(
        self,
        conn: asyncpg.Connection,
        scope: str,
        visible_in: str | None,
        state: PersonaState,
        after: str,
        share: float,
        now: datetime,
    ) -> int:
        """A pending ``persona`` proposal, stored by the proposer in this transaction (the state's
        ``pending_proposal`` refers to it; the outbox posts it to the dream channel)."""
        if self.proposer is None:
            raise MemoryStoreError("the persona layer was built without a proposer: it cannot propose a shift")
        ids = sorted({i for h in state.held for i in h.message_ids})
        quoted = await conn.fetch(
            "SELECT id, content FROM messages WHERE id = ANY($1::bigint[]) AND scope = $2", ids, scope
        )
        flips = [{"topic": h.topic, "before": round(h.before, 3), "after": round(h.after, 3)} for h in state.held]
        payload = {
            "action": "shift",
            "visible_in": visible_in,
            "before": state.snapshot,
            "after": after,
            "flips": flips,
        }
        if visible_in is None:
            payload |= {
                "examples": [r["content"] for r in quoted],
                "description": f"Before: {state.snapshot}\nAfter: {after}",
            }
            rationale = "\n".join(
                [f"The snapshot would change by {share:.0%}."]
                + [f"{f['topic']}: {f['before']:+.2f} -> {f['after']:+.2f} (crosses zero)" for f in flips]
                + ["Evidence messages are quoted above; approve to apply, reject to drop the held shifts."]
            )
        else:
            # A restricted channel's persona is made of what its audience said, and the dream channel may be read
            # by people outside it: the post carries neither the messages nor the wording nor the topics they
            # named. The payload keeps what approving applies; proposal_sources keeps the ids, so forgetting
            # one of them still withdraws the proposal.
            payload["description"] = (
                "The persona of a restricted channel would change; what it would say, and "
                "the messages behind it, stay in that channel (`/persona show` there)."
            )
            rationale = (
                f"The snapshot would change by {share:.0%}, with {len(flips)} opinion(s) crossing zero, "
                f"on the evidence of {len(ids)} message(s) in that channel.\n"
                "Approve to apply, reject to drop the held shifts."
            )
        proposal = await self.proposer.propose(
            PERSONA_KIND,
            f"Persona shift{' in ' + visible_in if visible_in else ''}",
            payload,
            rationale,
            {"scope": scope, "visible_in": visible_in, "evidence_messages": ids},
            centroid=None,
            now=now,
            scope=scope,
            sources=[(r["id"], r["content"]) for r in quoted],
            conn=conn,
        )
        pid = proposal.id
        log.info("persona proposal %s for %s (%d flips)", pid, scope, len(flips))
        return int(pid)

    def proposal_kinds(self) -> Mapping[str, KindHandler]:
        return {PERSONA_KIND: self.apply_proposal}

    async def apply_proposal(self, conn: asyncpg.Connection, row: Any, approvers: str) -> int:
        """Approving a ``persona`` proposal: apply the held shifts and the new snapshot, or reset the persona."""
        p, scope = row["payload"], row["scope"]
        if scope is None:
            raise ValueError(f"persona proposal #{row['id']} has no scope")
        visible_in = p.get("visible_in")
        await self.store.lock(conn, scope, visible_in)
        state = await self._state(conn, scope, visible_in)
        if p.get("action") == "reset":
            state = PersonaState(epoch=state.epoch + 1)
            reason = f"reset, proposal #{row['id']} approved by {approvers}"
        elif p.get("action") == "shift":
            wanted = {f["topic"]: f["after"] for f in p.get("flips") or []}
            for h in [h for h in state.held if h.topic in wanted]:
                set_belief(state, h.topic, h.after, h.message_ids, evidence_increment=len(h.message_ids))
                record_shift(
                    state,
                    f"{h.topic} {h.before:+.2f} -> {h.after:+.2f} (approved)",
                    abs(h.after - h.before),
                    h.message_ids,
                )
            state.held = [h for h in state.held if h.topic not in wanted]
            if p.get("after"):
                state.snapshot = deterministic_snapshot(state) if p.get("flips") else p["after"]
            state.pending_proposal = None
            reason = f"proposal #{row['id']} approved by {approvers}"
        else:
            raise ValueError(f"persona proposal #{row['id']} has no action left to apply (withdrawn)")
        await self.store.write(conn, scope, visible_in, state, reason, self.clock.now())
        return int(row["id"])

    # --- edits and forgetting ------------------------------------------------------------------------------

    async def edited(self, message: StoredMessage, conn: asyncpg.Connection) -> None:
        """The old text's evidence goes (the state is recomputed without it); after_edit scores the new text."""
        await self.forgetting(conn, [message.id])

    async def after_edit(self, message: StoredMessage, now: datetime) -> None:
        await self.absorb_message(message, await self.embedder.embed(message.content), now)

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        """Remove the messages' evidence and recompute each state it shaped from the evidence left.

        The versions from the first one a forgotten message shaped are deleted (they carry its influence);
        the recomputed state is written as the next version after the newest deleted (numbers never go back,
        and its reason names the versions withdrawn). Pending persona proposals citing the messages are
        withdrawn and their text redacted.
        """
        ids = list(message_ids)
        touched = await self.store.evidence_of(conn, ids)
        total = 0
        for r in touched:
            scope, visible_in = r["scope"], r["visible_in"]
            await self.store.lock(conn, scope, visible_in)
            current = await self.store.current(scope, visible_in, conn=conn)
            epoch = current.state.epoch if current is not None else 0
            newest = current.version if current is not None else 0
            await self.store.drop_versions_from(conn, scope, visible_in, r["first_version"])
            kept = await self.store.current(scope, visible_in, conn=conn)
            state = await self.recompute(
                conn,
                scope,
                visible_in,
                epoch,
                exclude=ids,
                base=kept.state if kept is not None else None,
                from_version=r["first_version"],
            )
            version = await self.store.write(
                conn,
                scope,
                visible_in,
                state,
                f"recomputed after forgetting {r['n']} message(s); {_versions(r['first_version'], newest)} withdrawn",
                self.clock.now(),
                after=newest,
            )
            await self.store.replayed_into(conn, scope, visible_in, r["first_version"], version)
            total += int(r["n"])
        # A restricted channel's persona started as a copy of the scope's public one (``_state``): when that was
        # recomputed, so is each restricted one, from the public state as it is now and its own evidence.
        # (Every one: a touched one was replayed above from its own kept base, which still holds that copy.)
        for scope in sorted({r["scope"] for r in touched if r["visible_in"] is None}):
            public = await self.store.current(scope, None, conn=conn)
            for _, visible_in in await self.store.states(scope):
                if visible_in is None:
                    continue
                await self.store.lock(conn, scope, visible_in)
                current = await self.store.current(scope, visible_in, conn=conn)
                epoch = current.state.epoch if current is not None else 0
                newest = current.version if current is not None else 0
                await self.store.drop_versions_from(conn, scope, visible_in, 1)
                state = await self.recompute(
                    conn, scope, visible_in, epoch, exclude=ids, base=public.state if public is not None else None
                )
                version = await self.store.write(
                    conn,
                    scope,
                    visible_in,
                    state,
                    f"recomputed: the public persona it started from forgot message(s); {_versions(1, newest)} "
                    f"withdrawn",
                    self.clock.now(),
                    after=newest,
                )
                await self.store.replayed_into(conn, scope, visible_in, 1, version)
        if self.proposer is not None:  # every persona proposal citing them, pending or decided, loses its words
            await self.proposer.withdraw(
                await self.proposer.citing(PERSONA_KIND, ids, conn=conn),
                reason="(evidence it cited was forgotten)",
                conn=conn,
                rewrite=WITHDRAWN,
            )
        await conn.execute("DELETE FROM persona_evidence WHERE message_id = ANY($1::bigint[])", ids)
        return {"persona_evidence": total} if total else {}

    async def recompute(
        self,
        conn: asyncpg.Connection,
        scope: str,
        visible_in: str | None,
        epoch: int,
        *,
        exclude: Sequence[int] = (),
        base: PersonaState | None = None,
        from_version: int = 1,
    ) -> PersonaState:
        """The state ``base`` (the last version kept) and the epoch's evidence of later versions make, replayed
        in order, topics named again from what is left."""
        state = base.copy() if base is not None and base.epoch == epoch else PersonaState(epoch=epoch)
        rows = [
            r
            for r in await self.store.evidence(conn, scope, visible_in, epoch, exclude=exclude)
            if r.version >= from_version or state.interaction_count == 0
        ]
        for row in rows:
            topics = await self._canonical(state, [(t[0], int(t[2])) for t in row.topics])
            sure = {t[0]: certainty_of(t) for t in row.topics}
            apply_evidence(
                state,
                Evidence(
                    row.message_id,
                    row.score,
                    row.reasoning_type,
                    row.novelty,
                    tuple(TopicStance(c, d, sure.get(p, 1.0)) for p, c, d in topics),
                    row.source_reliability,
                ),
            )
        decay(state)
        state.held = []
        state.pending_proposal = None
        state.snapshot = deterministic_snapshot(state)
        state.last_reflection_at = state.interaction_count
        state.shift_since_reflection = 0.0
        return state

    # --- dream ---------------------------------------------------------------------------------------------

    def dream_steps(self) -> Sequence[tuple[str, LayerStep]]:
        return (("belief_decay", self.decay_step),)

    async def decay_step(self, now: datetime, scope: str | None) -> StepResult:
        """Decay every unreinforced belief of the scope's personas (every scope's when None); reflect if due."""
        decayed = dropped = reflected = 0
        notes: list[str] = []
        for s, visible_in in await self.store.states(scope):
            async with self.store.pool.acquire() as conn, conn.transaction():
                await self.store.lock(conn, s, visible_in)
                current = await self.store.current(s, visible_in, conn=conn)
                if current is None:
                    continue
                state = current.state
                before = {t: b.confidence for t, b in state.beliefs.items()}
                gone = decay(state)
                changed = sum(1 for t, b in state.beliefs.items() if abs(b.confidence - before[t]) > 1e-9)
                changes = await self._maybe_reflect(conn, state, s, visible_in, now)
                if self.llm is not None and not state.pending_proposal and reflection_due(state):
                    text = await llm_snapshot(self.llm, state)
                    if text and change_share(state.snapshot, text) <= self.change_limit:
                        state.snapshot = text
                        changes.append("reflected by the model")
                if changed or gone or changes:
                    reason = f"dream: {changed} belief(s) decayed, {len(gone)} dropped" + (
                        "; " + "; ".join(changes) if changes else ""
                    )
                    await self.store.write(conn, s, visible_in, state, reason, now)
                decayed += changed
                dropped += len(gone)
                reflected += sum(1 for c in changes if c.startswith("reflect"))
                if gone:
                    notes.append(
                        f"{s}{'/' + visible_in if visible_in else ''}: {len(gone)} belief(s) under "
                        f"0.05 confidence dropped"
                    )
        return StepResult(
            counts={"beliefs_decayed": decayed, "beliefs_dropped": dropped, "reflections": reflected},
            notes=notes,
            headline=told(
                (decayed, "opinion{s} weakened with time"),
                (dropped, "opinion{s} dropped"),
                (reflected, "reflection{s}"),
            ),
        )


def _first_sentences(text: str, limit: int = _PROMPT_CHARS) -> str:
    """The snapshot's opening sentences within ``limit`` characters (the opinions follow as their own lines)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("; "))
    return cut[: end + 1] if end > 0 else cut


def _versions(first: int, last: int) -> str:
    return f"version {first}" if first >= last else f"versions {first}-{last}"


def _with_held(state: PersonaState) -> PersonaState:
    after = state.copy()
    for h in after.held:
        set_belief(after, h.topic, h.after, h.message_ids, evidence_increment=len(h.message_ids))
    after.held = []
    return after
