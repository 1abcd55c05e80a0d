"""Resonance (seed 000): moments of the bot's own replies, and resonant recall from them."""

from memory.resonance.features import arousal, themes, words
from memory.resonance.moments import Metrics, MomentStore, NewMoment, Similar, Stats, Summary
from memory.resonance.scoring import ALPHA, MAX_BOOST, Candidate, Probe, Scored, select, token_boosts, word_weights

__all__ = [
    "ALPHA",
    "MAX_BOOST",
    "Candidate",
    "Metrics",
    "MomentStore",
    "NewMoment",
    "Probe",
    "Scored",
    "Similar",
    "Stats",
    "Summary",
    "arousal",
    "select",
    "themes",
    "token_boosts",
    "word_weights",
    "words",
]
