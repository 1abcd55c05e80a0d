"""The persona (seed 002, Sonality): state and update rules, evidence scoring, reflection, storage."""

from memory.persona.evidence import EvidenceScorer, LLMEvidenceScorer, ScoredMessage, parse_ess
from memory.persona.reflection import deterministic_snapshot, describe
from memory.persona.state import Belief, Evidence, PersonaState, TopicStance, apply_evidence, decay
from memory.persona.store import PersonaStore, Version

__all__ = [
    "Belief",
    "Evidence",
    "EvidenceScorer",
    "LLMEvidenceScorer",
    "PersonaState",
    "PersonaStore",
    "ScoredMessage",
    "TopicStance",
    "Version",
    "apply_evidence",
    "decay",
    "describe",
    "deterministic_snapshot",
    "parse_ess",
]
