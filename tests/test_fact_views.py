"""GhostKG's views and stances in the prompt, and node cards in the graph's ranking (pure, no database)."""

from __future__ import annotations

from dataclasses import replace

from bot.app import App
from memory.layers.facts import prompt_line
from memory.recall import ContextBundle
from memory.semantic import Fact, fact_rank


def fact(
    subject_name: str, subject: str, relation: str, obj: str, *, sentiment: float = 0.0, subject_owner: str = ""
) -> Fact:
    return Fact(
        edge_id=1,
        subject=subject,
        subject_name=subject_name,
        relation=relation,
        object=obj,
        object_name=obj.lower(),
        sentiment=sentiment,
        confidence=0.9,
        evidence=1,
        retrievability=1.0,
        message_ids=(1,),
        speakers=("u-ana",),
        subject_owner=subject_owner,
    )


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
        "ben love hiking (positive)"
    )
    assert prompt_line(fact("user:u-ben", "ben", "hate", "mornings", sentiment=-0.8), "u-ana").endswith("(negative)")
    assert "(" not in prompt_line(fact("user:u-ben", "ben", "visit", "Rome", sentiment=0.1), "u-ana")


def test_node_cards_weigh_in_the_ranking() -> None:
    fresh = fact("user:u-ana", "ana", "like", "jazz")
    faded_nodes = replace(fresh, node_retrievability=0.2)
    assert fact_rank(fresh) > fact_rank(faded_nodes) > 0
    assert fact_rank(replace(fresh, hops=2)) < fact_rank(fresh)


async def test_what_people_here_think_joins_the_persona_as_each_audience_may_see_it(app: App) -> None:
    from bot.brain import IncomingTurn

    def turn(text: str, author: str, channel: str = "c1", private: bool = False) -> IncomingTurn:
        return IncomingTurn(
            scope="g1",
            source="console",
            channel_id=channel,
            author_id=f"u-{author}",
            author_name=author,
            text=text,
            visible_in=channel if private else None,
        )

    for t in (
        turn("I love hiking", "ana"),
        turn("I really love hiking", "ben"),
        turn("I hate hiking", "dev", channel="c-priv", private=True),
        turn("Bruno is sick, I'm taking him to the vet on Friday.", "cy"),  # one person's mood: no stance of people
    ):
        await (await app.brain.respond(t)).complete()
    await app.brain.writer.drain()

    def people(bundle: ContextBundle) -> str:
        persona = bundle.section("persona")
        assert persona is not None
        return next(i.prompt_line for i in persona.items if i.kind == "stances")

    public = await app.brain.context("any plans this weekend?", "g1", channel_id="c1")
    assert people(public) == "What people here think: hiking (2 like it)"
    private = await app.brain.context("any plans?", "g1", channel_id="c-priv", visible_channel="c-priv")
    assert people(private) == "What people here think: hiking (2 like it, 1 dislikes it)"
    other = await app.brain.context("any plans?", "g2", channel_id="c1")
    persona = other.section("persona")
    assert persona is not None and all(i.kind != "stances" for i in persona.items)
