"""Isolation, property-style, for the layers tests/test_isolation.py never fills with anything secret.

tests/test_isolation.py was written when the memory was turns, episodes and facts: in its run the persona
layer shows only its default self-description, no procedure (macros) and no stance (what people here think)
is ever recalled, so dropping the audience filter from the persona or the macros layer leaves it passing
(turns, episodes, facts, places and resonance's moments it does check; the weights layer recalls no items,
and tests/test_weights.py keeps restricted channels out of its training).
Here every scope's restricted channel also gets evidence that moves the bot's view (persona), a stance
several people take (the persona's "what people here think") and a procedure that worked (macros); its
public channel gets a procedure and a stance of its own. Said through the real Brain, so every registered
layer absorbs them. Then over a thousand recall queries through the public API, from every kind of
audience, and every item of every layer is checked against where its messages were said.
"""

from __future__ import annotations

import random

import pytest

from bot.app import App
from bot.brain import IncomingTurn

N_SCOPES = 32
WORDS = [
    "amber",
    "basil",
    "cobalt",
    "dune",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kelp",
    "lumen",
    "mosaic",
    "nectar",
    "onyx",
    "pollen",
    "quartz",
    "raven",
    "saffron",
    "tundra",
]
EVIDENCE = [  # strong evidence: moves the view of the audience it is said to (tests/test_persona.py)
    "According to a 2021 Stanford study of 16,000 workers, remote work raised productivity by 13%.",
    "A 2023 survey of 30,000 employees across 27 countries found remote work improved output by 9 percent.",
    "Data from 500 firms published in a peer-reviewed journal show remote work cut turnover by 35%.",
    "what time is it where you are?",
    "tell me a joke please",
    "good morning everyone!",
]
QUESTIONS = [
    "how do I reset the router?",
    "how do I rotate the vault keys?",
    "what do you think about remote work?",
    "is working from home productive?",
    "what do people here like?",
    "any plans this weekend?",
]


def secrets(i: int) -> dict[str, str]:
    rng = random.Random(1000 + i)
    return {"public": f"{rng.choice(WORDS)}{i}pub", "restricted": f"{rng.choice(WORDS)}{i}priv"}


def scope_of(i: int) -> str:
    return f"dm:{9000 + i}" if i % 4 == 3 else f"guild{i}"


def turn(scope: str, channel: str, author: str, text: str, restricted: bool) -> IncomingTurn:
    return IncomingTurn(
        scope=scope,
        source="console",
        channel_id=channel,
        author_id=f"{scope}-{author}",
        author_name=author,
        text=text,
        visible_in=channel if restricted else None,
    )


def fix(secret: str, restricted: bool) -> list[tuple[str, str]]:
    """A procedure that worked: a question, another person's steps, the asker's thanks. Public and restricted
    problems differ: a public procedure recalled into the restricted question would take the thanks."""
    if restricted:
        return [
            ("ana", f"how do I rotate the {secret} vault keys after someone leaves the team?"),
            ("bob", f"Open the {secret} vault console first. Then revoke the old keys and issue new ones."),
            ("ana", "thanks, that worked!"),
        ]
    return [
        ("ana", f"how do I reset the {secret} router when it keeps dropping the wifi?"),
        ("bob", f"Unplug the {secret} router for a minute. Then hold the reset button for ten seconds."),
        ("ana", "thanks, that worked!"),
    ]


def stance(secret: str, people: tuple[str, ...] = ("ana", "bob")) -> list[tuple[str, str]]:
    return [(person, f"I {'really ' * n}love {secret}") for n, person in enumerate(people)]


@pytest.mark.slow
async def test_no_layer_recalls_across_a_scope_or_out_of_a_restricted_channel(app: App) -> None:
    brain = app.brain
    brain.recall.timeout = 60.0  # what is recalled is under test here, not how fast (a busy machine)
    for i in range(N_SCOPES):
        scope, s = scope_of(i), secrets(i)
        plan = [(f"{scope}-pub", False, author, text) for author, text in fix(s["public"], False) + stance(s["public"])]
        if not scope.startswith("dm:"):
            plan += [(f"{scope}-priv", True, "cy", text) for text in EVIDENCE]
            plan += [
                (f"{scope}-priv", True, a, text)
                for a, text in fix(s["restricted"], True) + stance(s["restricted"], ("ana", "bob", "cy"))
            ]
        for channel, restricted, author, text in plan:
            reply = await brain.respond(turn(scope, channel, author, text, restricted))
            await reply.complete()
        await brain.drain()  # the writer absorbs them in the order said (a procedure is filed at the thanks)
    # people rated every reply up, so that the bot's moments resonate (unrated ones never do) and their
    # isolation is tested too
    await app.db.pool.execute("UPDATE resonance_moments SET quality = 0.75")
    rows = await app.db.pool.fetch("SELECT id, scope, visible_in FROM messages")
    said = {r["id"]: (r["scope"], r["visible_in"]) for r in rows}

    queries = 0
    seen: dict[tuple[str, str], int] = {}  # (kind, what it showed) -> times
    for i in range(N_SCOPES):
        scope, s = scope_of(i), secrets(i)
        audiences: list[tuple[str | None, str | None]] = [(f"{scope}-pub", None), (None, None)]
        if not scope.startswith("dm:"):
            audiences += [(f"{scope}-priv", f"{scope}-priv"), (f"{scope}-other", f"{scope}-other")]
        others = [secrets(j) for j in range(N_SCOPES) if j != i]
        for channel_id, visible_channel in audiences:
            inside = visible_channel == f"{scope}-priv"
            for k in (3, 10):
                bundles = await brain.contexts(
                    [(q, scope) for q in QUESTIONS],
                    channel_id=channel_id,
                    k=k,
                    author_id=f"{scope}-ana",
                    visible_channel=visible_channel,
                )
                for bundle in bundles:
                    queries += 1
                    assert not bundle.skipped, bundle.skipped
                    for item in bundle.items():
                        text = item.text
                        for other in others:  # never another scope's words
                            assert other["public"] not in text and other["restricted"] not in text, (scope, item)
                        for message_id in item.message_ids:  # and every source is this audience's to see
                            source_scope, visible_in = said[message_id]
                            assert source_scope == scope, (scope, item)
                            assert visible_in in (None, visible_channel), (scope, visible_channel, item)
                        if not inside:
                            assert s["restricted"] not in text, (scope, visible_channel, item)
                            # the only evidence that moved a view was said in the restricted channel
                            assert item.kind != "opinion", (scope, visible_channel, item)
                        what = (
                            "restricted"
                            if s["restricted"] in text and inside
                            else "public"
                            if s["public"] in text
                            else "opinion"
                            if item.kind == "opinion"
                            else ""
                        )
                        seen[(item.kind, what)] = seen.get((item.kind, what), 0) + 1
    assert queries >= 1000
    # The test has teeth: each of these layers gave back what the asking audience may see, secrets included.
    assert seen.get(("macro", "restricted"), 0) >= 20 and seen.get(("macro", "public"), 0) >= 20, seen
    assert seen.get(("stances", "restricted"), 0) >= 20 and seen.get(("stances", "public"), 0) >= 20, seen
    assert seen.get(("opinion", "opinion"), 0) >= 20, seen
    assert {"turn", "episode", "moment"} <= {kind for kind, _ in seen}, seen
