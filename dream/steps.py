"""The registry of dream steps, in the order a cycle runs them.

Adding a step (knowledge-graph pruning, belief decay) is one line here.
"""

from __future__ import annotations

from dream.archetype_analysis import archetype_proposals
from dream.cycle import Step
from dream.digest import digest
from dream.replay import decay_and_merge, expire_proposals, knowledge_graph, replay

DEFAULT_STEPS: list[tuple[str, Step]] = [
    ("archetype_analysis", archetype_proposals),
    ("episodic_replay", replay),
    ("episodic_decay", decay_and_merge),
    ("knowledge_graph", knowledge_graph),
    ("expire_proposals", expire_proposals),
    ("digest", digest),  # last: it summarises the steps before it
]
