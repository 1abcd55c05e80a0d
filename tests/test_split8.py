"""A theme that only a fallback name fits is shown as the two groups it holds when each can be named (issue 30.2,
round 7's rejected ``mixed_requests``: stocking and water-chemistry requests about one tank). Hand-made examples
only; the namer is a fake (the rule is about names, not about how they are made); pure CPU."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import numpy as np

from dream.themes import PoorMatch, Recurrence, Theme, _named_parts, name_says, split_in_two, unit

NOW = datetime(2026, 10, 1, 12, tzinfo=UTC)
RULES = Recurrence(people=3, days=3)


def _blobs(n: int = 12, spread: float = 0.5) -> list[PoorMatch]:
    """Two groups of requests on one topic: vectors sharing one big topic direction, each group leaning its own way
    (``spread`` of noise keeps members near the fence, as MiniLM puts two needs about one tank)."""
    rng = np.random.default_rng(0)
    topic, lean = np.zeros(16), {"fish": np.zeros(16), "water": np.zeros(16)}
    topic[0], lean["fish"][1], lean["water"][2] = 3.0, 1.0, 1.0
    out = []
    for i in range(2 * n):
        group = "fish" if i < n else "water"
        vector = unit(topic + lean[group] + spread * rng.normal(size=16))
        out.append(PoorMatch(i, f"what should I check about the {group} in tank number {i}?", group, "abcdef"[i % 6], 0.55, None, vector,
                             NOW + timedelta(days=i % 9, hours=i)))
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
    named = _namer({"fish": ("requests", "about", "gourami"), "water": ("troubleshooting", "requests"),
                    "*": ("mixed", "requests")})
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
    named = _namer({"fish": ("advice", "requests"), "water": ("requests", "about", "plan"), "*": ("advice", "requests")})
    assert _named_parts(named(members, frozenset(), 1), frozenset(), named, min_size=5, recurrence=RULES) == []
    # a theme its name already says all about is never split here
    full = _namer({"fish": ("plan", "advice"), "water": ("pace", "advice"), "*": ("plan", "advice")})
    assert _named_parts(full(members, frozenset(), 1), frozenset(), full, min_size=5, recurrence=RULES) == []


def test_a_part_that_is_one_persons_is_no_part() -> None:
    members = [PoorMatch(m.message_id, m.text, m.channel_id, "a" if m.channel_id == "water" else m.author_id,
                         m.similarity, m.nearest, m.vector, m.when) for m in _blobs()]
    named = _namer({"fish": ("requests", "about", "gourami"), "water": ("troubleshooting", "requests"),
                    "*": ("mixed", "requests")})
    assert _named_parts(named(members, frozenset(), 3), frozenset(), named, min_size=5, recurrence=RULES) == []
