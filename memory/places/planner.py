"""A* over the place graph: "where do I ask about X?" and "where has X been discussed?".

The search runs from where the person is (the places of their channel; with
none, a virtual start) to a virtual goal. Every place is a possible
destination: entering the goal from place ``g`` costs ``relevance_weight *
(1 - fit(g))``, where ``fit`` is the similarity of the topic to the place's
code (blended with its similarity to the channel's name, when the name
is known, and with how likely a model learned from the server's messages
finds the channel, when there is one) plus a little for how often
questions there were resolved. Moves along
known transitions cost ``-log(success probability)`` plus a little for the
time they took; a jump to a place nobody went to from here costs ``jump``.
So the best route is the most fitting place, reached the way people
actually got there and got answers, and a near tie is broken by that path.
The heuristic (the cheapest goal entry) never overestimates, so A* returns
the cheapest route.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memory.embed import similarity
from memory.places.codes import channel_label
from memory.places.graph import PlaceGraph, PlaceNode, Transition
from memory.vectors import unit

RELEVANCE_WEIGHT = 30.0
JUMP_COST = 1.5
SUCCESS_BONUS = 0.10  # fit: added for a place whose questions were resolved (times its resolution rate)
MIN_FIT = 0.55  # below this a place is not about the topic at all
# The channel name's share of a place's fit when the name is known (the code keeps the rest). Right channel first
# on the dev splits of bench/places_eval.py (13 + 65 questions): 72 without names, 73 at 0.2, 72 at 0.3-0.4, 70
# at 0.5 and less above; the nearest messages of each place as a third part gained nothing there (72 at best).
NAME_WEIGHT = 0.2
# The learned model's share of a place's fit, when there is one (memory.places.classifier): P(channel | topic)
# for the place's channel, the code and name keeping the rest. Right channel first over the 260 questions of
# bench/places_eval.py's dev and former held-out splits (all seen before; heldout5-6 were kept blind for it):
# 229 without, 233, 234, 236 and 237 at 0.5, 0.7, 0.85 and 1; below 1 the code still breaks near ties.
MODEL_WEIGHT = 0.85
# A route is unsure (answers say so; the prompt leaves it out) when the learned model gives its channel less than
# UNSURE_LIKELIHOOD and its fit is under UNSURE_FIT: no channel here is clearly about the topic. Chosen on
# bench/places_eval.py's offtopic_dev (30 topics no channel covers) and the where splits dev to heldout4 (260):
# flagged 90 % of the off-topic questions, 50 % of the wrong first answers, 5.1 % of the right ones; at 0.2 / 0.7,
# 93 %, 58 %, 7.2 %; at 0.15 with any fit, 70 %, 38 %, 2.1 %.
UNSURE_LIKELIHOOD = 0.18
UNSURE_FIT = 0.70
_START = -1
_GOAL = -2


@dataclass(frozen=True)
class Route:
    places: tuple[PlaceNode, ...]  # from where the person is (when known) to the destination
    fit: float  # the destination's fit to the topic (hippobot's similarity scale, plus the success bonus), as the
    # reason says it
    cost: float
    reason: str
    likelihood: float | None = None  # the learned model's P(channel | topic), when one had a say
    channels: int = 0  # how many channels the model chooses among (0: not known)

    @property
    def unsure(self) -> bool:
        """No channel here is clearly about the topic: the learned model hardly expects this one and the fit is
        middling (only with a model: without one there is no second opinion). Hardly: under UNSURE_LIKELIHOOD, or
        under half again the share of a channel drawn at random where the model knows few (P8: 25 % of four
        channels, chance itself, answered "right here" for a topic no channel had discussed)."""
        chance = 1.5 / self.channels if self.channels else 0.0
        return (
            self.likelihood is not None and self.likelihood < max(UNSURE_LIKELIHOOD, chance) and self.fit < UNSURE_FIT
        )

    @property
    def destination(self) -> PlaceNode:
        return self.places[-1]

    def as_dict(self) -> dict[str, object]:
        return {
            "channel": self.destination.channel_id,
            "name": self.destination.name,
            "place": self.destination.id,
            "route": [p.channel_id for p in self.places],
            "fit": round(self.fit, 4),
            "cost": round(self.cost, 4),
            "about": self.destination.label,
            "likelihood": None if self.likelihood is None else round(self.likelihood, 4),
            "unsure": self.unsure,
            "reason": self.reason,
        }


def fit(
    node: PlaceNode, vector: np.ndarray, name_vector: np.ndarray | None = None, name_weight: float = NAME_WEIGHT
) -> tuple[float, float]:
    """(similarity of the topic to the place, that plus the success bonus). The similarity is the code's,
    blended with the channel name's when ``name_vector`` (the name's unit vector) is given."""
    sim = float(similarity(float(node.centroid @ vector)))
    if name_vector is not None:
        sim = (1.0 - name_weight) * sim + name_weight * float(similarity(float(name_vector @ vector)))
    return sim, sim + SUCCESS_BONUS * node.resolution_rate


def edge_cost(t: Transition) -> float:
    return -math.log(t.success_prob) + 0.05 * math.log1p(t.cost_s / 60.0)


def plan(
    graph: PlaceGraph,
    vector: np.ndarray,
    *,
    start_channel: str | None = None,
    k: int = 3,
    names: Mapping[str, np.ndarray] | None = None,
    name_weight: float = NAME_WEIGHT,
    likelihoods: Mapping[str, float] | None = None,
    model_weight: float = MODEL_WEIGHT,
    relevance_weight: float = RELEVANCE_WEIGHT,
    jump: float = JUMP_COST,
    min_fit: float = MIN_FIT,
) -> list[Route]:
    """Up to ``k`` routes, each to a different channel, cheapest first. ``names``: unit vectors of channel names by
    channel id, blended into the fit of those channels' places. ``likelihoods``: a learned P(channel | topic) by
    channel id (a channel the model does not know counts as 0), blended in after the names."""
    if k < 1:
        raise ValueError("k must be >= 1")
    v = unit(vector)
    names = names or {}
    fits = {i: fit(n, v, names.get(n.channel_id), name_weight)[1] for i, n in graph.nodes.items()}
    # whether a place is about the topic at all is a similarity; which one fits best, the model has a say in
    likely = {i: likelihoods.get(n.channel_id, 0.0) for i, n in graph.nodes.items()} if likelihoods else {}
    ranked = {i: (1.0 - model_weight) * f + model_weight * likely[i] if likely else f for i, f in fits.items()}
    entry = {i: relevance_weight * (1.0 - ranked[i]) for i, f in fits.items() if f >= min_fit}
    starts = [i for i, n in graph.nodes.items() if start_channel is not None and n.channel_id == start_channel]
    routes: list[Route] = []
    excluded: set[str] = set()
    while len(routes) < k:
        goals = {i: c for i, c in entry.items() if graph.nodes[i].channel_id not in excluded}
        if not goals:
            break
        found = _astar(graph, goals, starts, jump)
        if found is None:
            break
        path, cost = found
        nodes = tuple(graph.nodes[i] for i in path)
        dest = nodes[-1]
        routes.append(
            Route(
                nodes,
                fits[dest.id],
                cost,
                _reason(graph, nodes, fits[dest.id], start_channel, likely.get(dest.id)),
                likely.get(dest.id),
                len(likelihoods or {}),
            )
        )
        excluded.add(dest.channel_id)
    return routes


def discussed(graph: PlaceGraph, vector: np.ndarray, *, k: int = 5, min_fit: float = MIN_FIT) -> list[Route]:
    """Where the topic has been discussed: the best-fitting place of each channel, best first."""
    v = unit(vector)
    best: dict[str, tuple[float, PlaceNode]] = {}
    for n in graph.nodes.values():
        sim, _ = fit(n, v)
        if sim >= min_fit and (n.channel_id not in best or sim > best[n.channel_id][0]):
            best[n.channel_id] = (sim, n)
    ranked = sorted(best.values(), key=lambda x: (-x[0], x[1].id))[:k]
    return [Route((n,), sim, 0.0, f"{n.messages} message(s) about {n.label or 'this'}") for sim, n in ranked]


def _astar(
    graph: PlaceGraph, goals: dict[int, float], starts: Sequence[int], jump: float
) -> tuple[list[int], float] | None:
    min_entry = min(goals.values())

    def h(node: int) -> float:  # every route still has to enter the goal from some place
        return 0.0 if node == _GOAL else min_entry

    frontier: list[tuple[float, float, int]] = []
    best: dict[int, float] = {}
    parent: dict[int, int] = {}
    for s in [*starts, _START]:  # from one's own channel's places, or anywhere by a jump
        best[s] = 0.0
        heapq.heappush(frontier, (h(s), 0.0, s))
    closed: set[int] = set()
    while frontier:
        _, g, node = heapq.heappop(frontier)
        if node in closed:
            continue
        if node == _GOAL:
            path = [parent[_GOAL]]
            while path[-1] in parent:
                path.append(parent[path[-1]])
            return [p for p in reversed(path) if p >= 0], g
        closed.add(node)
        for nxt, cost in _neighbours(graph, node, goals, jump, starts):
            ng = g + cost
            if ng < best.get(nxt, math.inf):
                best[nxt] = ng
                parent[nxt] = node
                heapq.heappush(frontier, (ng + h(nxt), ng, nxt))
    return None


def _neighbours(
    graph: PlaceGraph, node: int, goals: dict[int, float], jump: float, starts: Sequence[int]
) -> list[tuple[int, float]]:
    if node == _START:
        return [(i, 0.0 if i in starts else jump) for i in graph.nodes]
    out = [(t.dst, edge_cost(t)) for t in graph.out.get(node, ()) if t.dst in graph.nodes]
    if node in goals:
        out.append((_GOAL, goals[node]))
    return out


def _reason(
    graph: PlaceGraph,
    nodes: Sequence[PlaceNode],
    fitness: float,
    start_channel: str | None,
    likelihood: float | None = None,
) -> str:
    dest = nodes[-1]
    learned = "" if likelihood is None else f", {likelihood:.0%} likely"  # the learned model's P(channel | topic)
    parts = [f"about {dest.label or 'this'} (fit {fitness:.2f}{learned})"]
    if dest.questions:
        parts.append(f"{min(dest.resolutions, dest.questions)} of {dest.questions} question(s) there resolved")
    if len(nodes) > 1:
        hops = []
        for a, b in zip(nodes, nodes[1:]):
            t = next((t for t in graph.out.get(a.id, ()) if t.dst == b.id), None)
            if t is not None:
                hops.append(
                    f"{channel_label(a.channel_id)} → {channel_label(b.channel_id)} "
                    f"({t.moves} move(s), {t.successes} ended well)"
                )
        if hops:
            parts.append("people went " + "; ".join(hops))
    elif start_channel is not None and dest.channel_id == start_channel:
        parts.append("right here")
    return "; ".join(parts)
