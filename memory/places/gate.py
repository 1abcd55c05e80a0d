"""The spatial gate (seed 001, 5.6): whether an observed move between two places makes a new edge.

Decisions, as the seed names them:

- ``aggregate``: the edge exists; the move adds to its weight and recency.
- ``insert``: a new edge, novel and within the degree limit.
- ``block_new_edge``: the new edge would be redundant: one of its places is at
  ``max_degree``, or the person is flapping between the two places (the pair
  already seen ``repeat_N`` times in their last ``recent_window`` moves, an
  immediate bounce back counting double) while the reverse edge already
  exists. The observation is still kept (as a logged move that refreshes the
  places' recency); only the edge is not made.

Pure: the store passes what it read and records the decision with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

INSERT, AGGREGATE, BLOCK = "insert", "aggregate", "block_new_edge"


@dataclass(frozen=True)
class GateConfig:
    enabled: bool = True
    block_threshold: float = 1.0
    repeat_N: int = 3
    recent_window: int = 20
    max_degree: int = 64

    def __post_init__(self) -> None:
        if self.repeat_N < 1 or self.recent_window < 1 or self.max_degree < 1 or self.block_threshold <= 0:
            raise ValueError(
                "spatial gate: repeat_N, recent_window and max_degree must be >= 1 and block_threshold > 0"
            )


@dataclass(frozen=True)
class GateDecision:
    action: str  # INSERT | AGGREGATE | BLOCK
    reason: str
    score: float = 0.0


@dataclass(frozen=True)
class SpatialGate:
    config: GateConfig = GateConfig()

    def decide(
        self,
        src: int,
        dst: int,
        *,
        edge_exists: bool,
        reverse_exists: bool,
        recent: Sequence[tuple[int, int]],
        degree_src: int,
        degree_dst: int,
    ) -> GateDecision:
        """The decision for the move ``src -> dst`` given this trajectory's ``recent`` moves (oldest first)
        and the two places' degrees (edges in and out)."""
        if src == dst:
            raise ValueError("a move needs two different places")
        c = self.config
        if edge_exists:
            return GateDecision(AGGREGATE, "known transition: weight and recency updated")
        if not c.enabled:
            return GateDecision(INSERT, "gate disabled")
        if max(degree_src, degree_dst) >= c.max_degree:
            return GateDecision(
                BLOCK,
                f"degree cap: a place already has {max(degree_src, degree_dst)} edges (max_degree {c.max_degree})",
                1.0,
            )
        window = list(recent)[-c.recent_window :]
        pair = {(src, dst), (dst, src)}
        repeats = sum(1 for m in window if m in pair)
        bounce = bool(window) and window[-1] == (dst, src)
        score = (repeats + (2 if bounce else 0)) / c.repeat_N
        if reverse_exists and score >= c.block_threshold:
            why = (
                "immediate bounce back"
                if bounce
                else f"flapping: pair seen {repeats} times in the last {len(window)} moves"
            )
            return GateDecision(BLOCK, f"redundant new edge ({why}; the reverse edge exists)", score)
        return GateDecision(INSERT, "novel transition" + (f" (flap score {score:.2f})" if score else ""), score)
