"""A theme that only a fallback name fits is shown as the two groups it holds when each can be named (issue 30.2,
round 7's rejected ``mixed_requests``: stocking and water-chemistry requests about one tank), and a small piece of a
need is folded into the need's main theme (round 9: rounds 7-8 proposed one need twice). Hand-made examples only;
the namer is a fake (the rule is about names, not about how they are made); pure CPU."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import numpy as np

from dream.themes import (
    FOLD_GAP,
    Candidate,
    PoorMatch,
    Recurrence,
    Theme,
    _named_parts,
    fold_duplicates,
    name_says,
    serve_gap,
    split_in_two,
    unit,
)

NOW = datetime(2026, 10, 1, 12, tzinfo=UTC)
RULES = Recurrence(people=3, days=3)


def _blobs(n: int = 12, spread: float = 0.5, topic_weight: float = 1.0) -> list[PoorMatch]:
    """Two groups of requests on one topic: vectors sharing one topic direction, each group leaning its own way
    (``spread`` of noise keeps members near the fence, as MiniLM puts two needs about one tank). With a heavier
    ``topic_weight`` the two groups serve each other's messages about as well as their own (``serve_gap``): one need."""
    rng = np.random.default_rng(0)
    topic, lean = np.zeros(16), {"fish": np.zeros(16), "water": np.zeros(16)}
    topic[0], lean["fish"][1], lean["water"][2] = topic_weight, 1.0, 1.0
    out = []
    for i in range(2 * n):
        group = "fish" if i < n else "water"
        vector = unit(topic + lean[group] + spread * rng.normal(size=16))
        out.append(
            PoorMatch(
                i,
                f"what should I check about the {group} in tank number {i}?",
                group,
                "abcdef"[i % 6],
                0.55,
                None,
                vector,
                NOW + timedelta(days=i % 9, hours=i),
            )
        )
    return out


def _namer(names: dict[str, tuple[str, ...]]):  # noqa: ANN202
    """A fake namer: a group is named by its members' channel when most of them share one, else by ``names['*']``."""

    def named(group: list[PoorMatch], siblings: frozenset[int], merged_from: int) -> Theme:
        channel, n = Counter(m.channel_id for m in group).most_common(1)[0]
        words = names[channel] if n >= 0.8 * len(group) else names["*"]
        centroid = unit(np.mean([m.vector for m in group], axis=0))
        return Theme(tuple(group), centroid, words, (), tuple(group[:5]), merged_from)

    return named


def test_how_much_a_name_says() -> None:
    assert name_says(("exam", "scheduling")) == 2
    assert name_says(("advice", "requests")) == 1
    assert name_says(("requests", "about", "gourami")) == 1
    assert name_says(("mixed", "requests")) == 0


def test_a_theme_only_the_fallback_names_is_proposed_as_its_two_named_parts() -> None:
    members = _blobs()
    named = _namer(
        {"fish": ("requests", "about", "gourami"), "water": ("troubleshooting", "requests"), "*": ("mixed", "requests")}
    )
    whole = named(members, frozenset(), 3)
    assert whole.name_words == ("mixed", "requests")
    assert split_in_two(members, min_size=5) is None, "the clarity line alone does not cut it (as in round 7)"
    parts = _named_parts(whole, frozenset(), named, min_size=5, recurrence=RULES)
    assert len(parts) == 2, "split"
    assert sorted(p.name_words for p in parts) == [("requests", "about", "gourami"), ("troubleshooting", "requests")]
    assert all(Counter(m.channel_id for m in p.members).most_common(1)[0][1] >= 0.8 * len(p.members) for p in parts)


def test_a_theme_is_kept_whole_when_its_parts_are_named_no_better() -> None:
    members = _blobs()
    # one need worded two ways: its halves' names say no more than the whole's
    named = _namer(
        {"fish": ("advice", "requests"), "water": ("requests", "about", "plan"), "*": ("advice", "requests")}
    )
    assert _named_parts(named(members, frozenset(), 1), frozenset(), named, min_size=5, recurrence=RULES) == []
    # a theme its name already says all about is never split here
    full = _namer({"fish": ("plan", "advice"), "water": ("pace", "advice"), "*": ("plan", "advice")})
    assert _named_parts(full(members, frozenset(), 1), frozenset(), full, min_size=5, recurrence=RULES) == []


def test_halves_that_serve_each_other_as_well_as_themselves_are_one_need_however_named() -> None:
    # round 9: 22 gear-buying requests named buying_requests were cut into quid_advice and gear_buying
    members = _blobs(topic_weight=3.0)
    split = split_in_two(members, min_size=5, clarity=-np.inf)
    assert split is not None and max(serve_gap(split[0], split[1]), serve_gap(split[1], split[0])) <= FOLD_GAP
    named = _namer({"fish": ("quid", "advice"), "water": ("gear", "buying"), "*": ("buying", "requests")})
    assert _named_parts(named(members, frozenset(), 1), frozenset(), named, min_size=5, recurrence=RULES) == []


def test_a_part_that_is_one_persons_is_no_part() -> None:
    members = [
        PoorMatch(
            m.message_id,
            m.text,
            m.channel_id,
            "a" if m.channel_id == "water" else m.author_id,
            m.similarity,
            m.nearest,
            m.vector,
            m.when,
        )
        for m in _blobs()
    ]
    named = _namer(
        {"fish": ("requests", "about", "gourami"), "water": ("troubleshooting", "requests"), "*": ("mixed", "requests")}
    )
    assert _named_parts(named(members, frozenset(), 3), frozenset(), named, min_size=5, recurrence=RULES) == []


def _needs(sizes: dict[str, int], lean: dict[str, tuple[float, ...]], spread: float = 0.5) -> list[PoorMatch]:
    """Requests of several groups on one topic: vectors sharing one topic direction, each group leaning its own way
    (``lean``: per group, its weights on three directions of its own)."""
    rng = np.random.default_rng(1)
    out, i = [], 0
    for group, n in sizes.items():
        for _ in range(n):
            v = np.zeros(16)
            v[0] = 1.5
            v[1:4] = lean[group]
            out.append(
                PoorMatch(
                    i,
                    f"request {i} of {group}",
                    group,
                    "abcdef"[i % 6],
                    0.55,
                    None,
                    unit(v + spread * rng.normal(size=16)),
                    NOW + timedelta(days=i % 9, hours=i),
                )
            )
            i += 1
    return out


def _candidates(members: list[PoorMatch]) -> list[Candidate]:
    by: dict[str, list[PoorMatch]] = {}
    for m in members:
        by.setdefault(m.channel_id, []).append(m)
    return [Candidate(tuple(g), 1, 1.0, None) for g in by.values()]


def test_a_small_piece_of_a_need_is_folded_into_its_main_theme_and_another_need_is_not() -> None:
    # "gear" and its piece "budget" lean the same way (one need asked in another form); "mixing" leans its own way
    members = _needs(
        {"gear": 15, "budget": 6, "mixing": 15}, {"gear": (1.5, 0, 0), "budget": (1.5, 0.4, 0), "mixing": (0, 0, 1.5)}
    )
    gear, budget, mixing = (tuple(m for m in members if m.channel_id == g) for g in ("gear", "budget", "mixing"))
    assert serve_gap(budget, gear) <= FOLD_GAP < serve_gap(budget, mixing), (
        serve_gap(budget, gear),
        serve_gap(budget, mixing),
    )
    said: list[str] = []
    out = fold_duplicates(_candidates(members), said)
    assert sorted(len(c.members) for c in out) == [15, 21], said
    folded = max(out, key=lambda c: len(c.members))
    assert {m.channel_id for m in folded.members} == {"gear", "budget"}
    assert said and "6 messages folded into 15" in said[0], said


def test_two_needs_of_about_one_size_are_never_folded_however_near() -> None:
    members = _needs({"a": 12, "b": 12}, {"a": (1.5, 0, 0), "b": (1.5, 0.4, 0)})
    a, b = (tuple(m for m in members if m.channel_id == g) for g in ("a", "b"))
    assert serve_gap(b, a) <= FOLD_GAP, "as near as a piece"
    assert len(fold_duplicates(_candidates(members))) == 2


def test_a_piece_goes_to_the_theme_that_serves_it_best_and_a_refused_one_is_left_alone() -> None:
    members = _needs(
        {"near": 15, "far": 16, "piece": 6, "noise": 5},
        {"near": (1.5, 0, 0), "far": (1.5, 0.9, 0), "piece": (1.5, 0.3, 0), "noise": (1.5, 0.2, 0)},
    )
    candidates = _candidates(members)
    near, far, piece = (
        next(c.members for c in candidates if c.members[0].channel_id == g) for g in ("near", "far", "piece")
    )
    assert serve_gap(piece, near) < serve_gap(piece, far) <= FOLD_GAP, "either would take it"
    candidates = [
        c if c.members[0].channel_id != "noise" else Candidate(c.members, 1, 1.0, "mostly one person's")
        for c in candidates
    ]
    out = fold_duplicates(candidates)
    groups = sorted(tuple(sorted({m.channel_id for m in c.members})) for c in out)
    assert groups == [("far",), ("near", "piece"), ("noise",)], groups
    # the union is screened again: a fold the rules refuse is refused
    refused = fold_duplicates(_candidates(members[:37]), fails=lambda group: "refused" if len(group) > 20 else None)
    assert any(c.refused == "refused" for c in refused)
