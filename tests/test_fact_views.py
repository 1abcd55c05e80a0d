"""GhostKG's views and stances in the prompt, and node cards in the graph's ranking (pure, no database)."""

from __future__ import annotations

from dataclasses import replace

from memory.layers.facts import prompt_line
from memory.semantic import Fact, fact_rank


def fact(subject_name: str, subject: str, relation: str, obj: str, *, sentiment: float = 0.0,
         subject_owner: str = "") -> Fact:
    return Fact(edge_id=1, subject=subject, subject_name=subject_name, relation=relation, object=obj,
                object_name=obj.lower(), sentiment=sentiment, confidence=0.9, evidence=1, retrievability=1.0,
                message_ids=(1,), speakers=("u-ana",), subject_owner=subject_owner)


def test_each_view_is_named_in_the_prompt() -> None:
    mine = fact("bot", "hippobot", "like", "jazz")
    hers = fact("user:u-ana", "ana", "live_in", "Lisbon")
    world = fact("lisbon", "Lisbon", "is_in", "Portugal")
    assert prompt_line(mine, "u-ana") == "my own view: I like jazz"
    assert prompt_line(hers, "u-ana") == "you told me: ana live in Lisbon"
    assert prompt_line(hers, "u-ben") == "others said: ana live in Lisbon"
    assert prompt_line(world, "u-ana") == "Lisbon is in Portugal"


def test_a_clear_stance_is_shown_as_such() -> None:
    assert prompt_line(fact("user:u-ben", "ben", "love", "hiking", sentiment=0.6), "u-ana").endswith(
        "ben love hiking (positive)")
    assert prompt_line(fact("user:u-ben", "ben", "hate", "mornings", sentiment=-0.8), "u-ana").endswith("(negative)")
    assert "(" not in prompt_line(fact("user:u-ben", "ben", "visit", "Rome", sentiment=0.1), "u-ana")


def test_node_cards_weigh_in_the_ranking() -> None:
    fresh = fact("user:u-ana", "ana", "like", "jazz")
    faded_nodes = replace(fresh, node_retrievability=0.2)
    assert fact_rank(fresh) > fact_rank(faded_nodes) > 0
    assert fact_rank(replace(fresh, hops=2)) < fact_rank(fresh)
