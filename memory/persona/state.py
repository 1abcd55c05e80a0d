"""The persona's state and the rules that change it (seed 002, Sonality), as pure functions.

A ``PersonaState`` is one scope's (and one audience's) personality: a core
identity that never changes, a bounded snapshot narrative, a tone, opinion
positions in [-1, 1] per topic with belief metadata, topic engagement, the
disagreement rate, the last shifts, pending insights and staged updates.
Nothing here touches the database: ``apply_evidence`` folds one scored
message into a state, so a state is the fold of its evidence log (forgetting
a message is a replay without it).

The numbers are the seed's: magnitude ``0.1 * score * max(novelty, 0.1)``,
halved for a scope's first 10 interactions; nothing below a score of 0.25;
per-type caps; a cooling period of 3 interactions with opposing deltas
netted; at most 0.25 committed at once; positions soft-capped at 0.95 with
steps scaled by ``max(0.2, 1 - 0.8 |position|)``; confidence
``min(1, log2(n + 1) / log2(20))``; power-law decay ``(1 + gap)^-0.15``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# Reasoning types (the seed's ReasoningType).
LOGICAL, EMPIRICAL, EXPERT = "logical_argument", "empirical_data", "expert_opinion"
ANECDOTAL, SOCIAL, EMOTIONAL, NO_ARGUMENT = "anecdotal", "social_pressure", "emotional_appeal", "no_argument"
REASONING_TYPES = (LOGICAL, EMPIRICAL, EXPERT, ANECDOTAL, SOCIAL, EMOTIONAL, NO_ARGUMENT)
# The largest step one message of a type may cause.
TYPE_CAPS: Mapping[str, float] = {
    EMPIRICAL: 0.20,
    EXPERT: 0.14,
    LOGICAL: 0.10,
    ANECDOTAL: 0.06,
    SOCIAL: 0.02,
    EMOTIONAL: 0.02,
    NO_ARGUMENT: 0.0,
}

BASE_RATE = 0.1
MIN_SCORE = 0.25  # the seed's ESS threshold for opinion updates
INSIGHT_SCORE = 0.3
BOOTSTRAP_UNTIL = 10
COOLING_PERIOD = 3
MAX_COMMIT = 0.25
SOFT_CAP = 0.95
MAX_SHIFTS = 10
MAX_INSIGHTS = 10
DECAY_RATE = 0.15
DECAY_MIN_GAP = 5
MIN_CONFIDENCE = 0.05
REFLECT_EVERY = 20
REFLECT_SHIFT = 0.1
SEED_TONE = "curious, direct, unpretentious"
SEED_SNAPSHOT = (
    "I am still forming my views here. I weigh what people tell me on its evidence: figures with "
    "sources, expert findings and sound arguments move me; repetition, insistence and popularity "
    "do not. I say so when I disagree, and I change my mind when the evidence is good."
)


@dataclass(frozen=True)
class TopicStance:
    """One topic of a message and the person's direction on it (+1 supports, -1 opposes, 0 neutral), with how
    sure the scorer is of that direction (0-1]: the update's step is scaled by it."""

    topic: str
    direction: int
    weight: float = 1.0


@dataclass(frozen=True)
class Evidence:
    """One person message, scored: what ``apply_evidence`` needs (the log row, without its text)."""

    message_id: int
    score: float
    reasoning_type: str
    novelty: float
    topics: tuple[TopicStance, ...]  # canonical topic keys
    source_reliability: str = "not_applicable"


@dataclass
class Belief:
    position: float = 0.0
    confidence: float = 0.0
    evidence: int = 0
    last_reinforced: int = 0
    provenance: list[int] = field(default_factory=list)  # the message ids that moved it (latest last)


@dataclass
class Staged:
    topic: str
    delta: float
    due: int  # the interaction at which it may commit
    message_id: int


@dataclass
class Shift:
    interaction: int
    description: str
    magnitude: float
    message_ids: list[int] = field(default_factory=list)


@dataclass
class Held:
    """A committed update that would flip an established opinion: it waits for approval."""

    topic: str
    before: float
    after: float
    message_ids: list[int]


@dataclass
class PersonaState:
    snapshot: str = SEED_SNAPSHOT
    tone: str = SEED_TONE
    interaction_count: int = 0
    epoch: int = 0  # a reset starts a new epoch; only its evidence counts
    beliefs: dict[str, Belief] = field(default_factory=dict)
    engagement: dict[str, int] = field(default_factory=dict)
    disagreement_rate: float = 0.0
    disagreement_events: int = 0
    recent_shifts: list[Shift] = field(default_factory=list)
    pending_insights: list[str] = field(default_factory=list)
    staged: list[Staged] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    last_reflection_at: int = 0
    shift_since_reflection: float = 0.0
    pending_proposal: int | None = None  # a persona proposal awaiting a decision

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> PersonaState:
        if not data:
            return cls()
        d = dict(data)
        d["beliefs"] = {k: Belief(**v) for k, v in (d.get("beliefs") or {}).items()}
        d["recent_shifts"] = [Shift(**s) for s in d.get("recent_shifts") or []]
        d["staged"] = [Staged(**s) for s in d.get("staged") or []]
        d["held"] = [Held(**h) for h in d.get("held") or []]
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})

    def copy(self) -> PersonaState:
        return PersonaState.from_json(self.as_json())

    def strongest(self, n: int = 5) -> list[tuple[str, Belief]]:
        """Opinions by strength (|position| x confidence), strongest first."""
        ranked = sorted(self.beliefs.items(), key=lambda kv: (-abs(kv[1].position) * kv[1].confidence, kv[0]))
        return [(t, b) for t, b in ranked if abs(b.position) >= 0.01][:n]

    def message_ids(self) -> set[int]:
        """Every message id this state cites (beliefs, staged and held updates, shifts)."""
        ids = {i for b in self.beliefs.values() for i in b.provenance}
        ids |= {s.message_id for s in self.staged} | {i for h in self.held for i in h.message_ids}
        return ids | {i for s in self.recent_shifts for i in s.message_ids}


def confidence(evidence: int) -> float:
    return min(1.0, math.log2(evidence + 1) / math.log2(20))


def magnitude(ev: Evidence, interaction_count: int) -> float:
    """How far one message may move an opinion: 0 below the score threshold, capped by its reasoning type."""
    if ev.score < MIN_SCORE:
        return 0.0
    m = BASE_RATE * ev.score * max(ev.novelty, 0.1)
    if interaction_count < BOOTSTRAP_UNTIL:
        m *= 0.5
    return min(m, TYPE_CAPS.get(ev.reasoning_type, 0.0))


def apply_evidence(state: PersonaState, ev: Evidence) -> list[str]:
    """Fold one scored person message into ``state`` (in place); returns what changed, for the log."""
    changes: list[str] = []
    state.interaction_count += 1
    now = state.interaction_count
    for ts in ev.topics:
        state.engagement[ts.topic] = state.engagement.get(ts.topic, 0) + 1
        held = state.beliefs.get(ts.topic)
        if ts.direction and held is not None and abs(held.position) >= 0.05:
            _track_disagreement(state, (ts.direction > 0) != (held.position > 0))
    m = magnitude(ev, now - 1)
    if m > 0:
        for ts in ev.topics:
            if ts.direction:
                delta = ts.direction * m * min(1.0, max(0.0, ts.weight))
                state.staged.append(Staged(ts.topic, delta, now + COOLING_PERIOD, ev.message_id))
                changes.append(f"staged {ts.topic} {delta:+.3f}")
    if ev.score >= INSIGHT_SCORE and ev.topics:
        t = ev.topics[0]
        side = {1: "for", -1: "against", 0: "about"}[t.direction]
        state.pending_insights = (
            state.pending_insights
            + [f"weighed {ev.reasoning_type.replace('_', ' ')} {side} {t.topic} (strength {ev.score:.2f})"]
        )[-MAX_INSIGHTS:]
    changes += apply_due(state)
    return changes


def apply_due(state: PersonaState) -> list[str]:
    """Commit the staged updates whose cooling period is over: netted per topic, at most MAX_COMMIT at once.

    A commit that would flip an established opinion (|position| >= 0.1, or two pieces of evidence) across
    zero is held for approval instead.
    """
    now = state.interaction_count
    due = [s for s in state.staged if s.due <= now]
    if not due:
        return []
    state.staged = [s for s in state.staged if s.due > now]
    by_topic: dict[str, list[Staged]] = {}
    for s in due:
        by_topic.setdefault(s.topic, []).append(s)
    out = []
    for topic, items in sorted(by_topic.items()):
        net = sum(s.delta for s in items)
        if abs(net) < 1e-9:
            continue
        net = max(-MAX_COMMIT, min(MAX_COMMIT, net))
        b = state.beliefs.get(topic) or Belief()
        step = net * max(0.2, 1 - 0.8 * abs(b.position))
        after = max(-SOFT_CAP, min(SOFT_CAP, b.position + step))
        ids = [s.message_id for s in items]
        established = abs(b.position) >= 0.1 or b.evidence >= 2
        if established and abs(b.position) > 1e-9 and (after > 0) != (b.position > 0) and abs(after) > 1e-9:
            state.held.append(Held(topic, b.position, after, ids))
            out.append(f"held {topic} {b.position:+.2f} -> {after:+.2f} for approval")
            continue
        set_belief(state, topic, after, ids, evidence_increment=len(items))
        record_shift(state, f"{topic} {b.position:+.2f} -> {after:+.2f}", abs(after - b.position), ids)
        out.append(f"committed {topic} {b.position:+.2f} -> {after:+.2f}")
    return out


def set_belief(
    state: PersonaState, topic: str, position: float, message_ids: Sequence[int], *, evidence_increment: int = 1
) -> None:
    b = state.beliefs.get(topic) or Belief()
    b.position = max(-1.0, min(1.0, position))
    b.evidence += evidence_increment
    b.confidence = confidence(b.evidence)
    b.last_reinforced = state.interaction_count
    b.provenance = (b.provenance + [i for i in message_ids if i not in b.provenance])[-50:]
    state.beliefs[topic] = b


def record_shift(state: PersonaState, description: str, size: float, message_ids: Sequence[int]) -> None:
    state.recent_shifts = (
        state.recent_shifts + [Shift(state.interaction_count, description, round(size, 4), list(message_ids))]
    )[-MAX_SHIFTS:]
    state.shift_since_reflection += size


def decay(state: PersonaState) -> list[str]:
    """Power-law decay of unreinforced beliefs (in place); returns the topics dropped.

    ``confidence = min(1, log2(n+1)/log2(20)) * max((1 + gap)^-0.15, min(0.6, 0.06 n))``, with gap the
    interactions since the belief was last reinforced (under 5: no decay). It depends only on the gap, so
    a dream that runs twice decays no more than one that runs once.
    """
    dropped = []
    for topic, b in sorted(state.beliefs.items()):
        gap = state.interaction_count - b.last_reinforced
        if gap < DECAY_MIN_GAP:
            continue
        retention = max((1 + gap) ** -DECAY_RATE, min(0.6, 0.06 * b.evidence))
        b.confidence = confidence(b.evidence) * retention
        if b.confidence < MIN_CONFIDENCE:
            del state.beliefs[topic]
            dropped.append(topic)
    return dropped


def reflection_due(state: PersonaState) -> bool:
    since = state.interaction_count - state.last_reflection_at
    return since >= REFLECT_EVERY or (since >= REFLECT_EVERY // 2 and state.shift_since_reflection > REFLECT_SHIFT)


def structured_traits(state: PersonaState) -> str:
    """The seed's trait block: style, top topics, strongest opinions, disagreement rate."""
    topics = sorted(state.engagement.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    lines = [f"Style: {state.tone}"]
    if topics:
        lines.append("Top topics: " + ", ".join(f"{t}({n})" for t, n in topics))
    opinions = state.strongest(5)
    if opinions:
        lines.append(
            "Strongest opinions: " + ", ".join(f"{t}={b.position:+.2f} c={b.confidence:.1f}" for t, b in opinions)
        )
    lines.append(f"Disagreement rate: {state.disagreement_rate:.0%}")
    return "\n".join(lines)


def replay(evidence: Sequence[Evidence], *, base: PersonaState | None = None) -> PersonaState:
    """The state that ``evidence`` (in order) makes from ``base`` (a fresh state by default)."""
    state = base.copy() if base is not None else PersonaState()
    for ev in evidence:
        apply_evidence(state, ev)
    return state


def _track_disagreement(state: PersonaState, disagreed: bool) -> None:
    state.disagreement_events += 1
    n = state.disagreement_events
    state.disagreement_rate += ((1.0 if disagreed else 0.0) - state.disagreement_rate) / n
