"""The registry of dream steps, in the order a cycle runs them.

The cycle's own steps (archetype analysis, proposal expiry, the digest) are
listed here; memory layers contribute theirs through ``dream_steps()``, and
``build_steps`` puts them between analysis and the digest, in the order the
composition root registered the layers. A new layer's step needs no edit here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from dream.archetype_analysis import archetype_proposals
from dream.cycle import DreamServices, Step, StepReport
from dream.digest import digest
from dream.replay import decay_and_merge, expire_proposals, replay
from memory.layers.base import LayerStep, MemoryLayer

# Steps of the cycle itself, before and after the layers' steps.
FIRST: list[tuple[str, Step]] = [
    ("archetype_analysis", archetype_proposals),
    ("episodic_replay", replay),
    ("episodic_decay", decay_and_merge),
]
LAST: list[tuple[str, Step]] = [
    ("expire_proposals", expire_proposals),
    ("digest", digest),  # last: it summarises the steps before it
]


def layer_step(fn: LayerStep) -> Step:
    """A layer's step, ``(now, scope) -> StepResult``, as a cycle step."""

    async def step(services: DreamServices, now: datetime) -> StepReport:
        result = await fn(now, getattr(services, "scope", None))
        return StepReport(counts=dict(result.counts), notes=list(result.notes), headline=result.headline)

    return step


def build_steps(layers: Sequence[MemoryLayer]) -> list[tuple[str, Step]]:
    """The cycle's steps with every registered layer's steps in between."""
    contributed = [(name, layer_step(fn)) for layer in layers for name, fn in layer.dream_steps()]
    return [*FIRST, *contributed, *LAST]


DEFAULT_STEPS: list[tuple[str, Step]] = [*FIRST, *LAST]  # with no memory layers (tests of the cycle itself)
