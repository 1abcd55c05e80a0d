"""Places and procedures (seed 001 SMPD): a map of the server and a library of what worked."""

from memory.places.codes import FAILURE, SUCCESS, channel_label, outcome, steps
from memory.places.gate import AGGREGATE, BLOCK, INSERT, GateConfig, GateDecision, SpatialGate
from memory.places.graph import Observation, PlaceGraph, PlaceNode, PlaceStore, Transition
from memory.places.macros import Macro, MacroStore, Trajectory
from memory.places.planner import Route, discussed, plan

__all__ = [
    "AGGREGATE",
    "BLOCK",
    "FAILURE",
    "INSERT",
    "SUCCESS",
    "GateConfig",
    "GateDecision",
    "Macro",
    "MacroStore",
    "Observation",
    "PlaceGraph",
    "PlaceNode",
    "PlaceStore",
    "Route",
    "SpatialGate",
    "Trajectory",
    "Transition",
    "channel_label",
    "discussed",
    "outcome",
    "plan",
    "steps",
]
