"""Isolation, property-style: no recall crosses a scope, and a restricted channel's memory stays in it.

Thirty-two scopes (guilds and DMs), each with a public channel and a
restricted one, each holding distinctive secrets said through the real
Brain (so every layer absorbs them: turns, episodes, facts). Then over a
thousand recall queries through the public API, from every kind of
audience, and every item of every layer is checked against where its
messages were said.
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


def secrets(i: int) -> dict[str, str]:
    """Distinctive words for scope i: one said in public, one in the restricted channel."""
    rng = random.Random(i)
    return {"public": f"{rng.choice(WORDS)}{i}pub", "restricted": f"{rng.choice(WORDS)}{i}priv"}


def scope_of(i: int) -> str:
    return f"dm:{9000 + i}" if i % 4 == 3 else f"guild{i}"


@pytest.mark.slow
async def test_no_recall_crosses_a_scope_or_leaves_a_restricted_channel(app: App) -> None:
    brain = app.brain
    said: dict[int, tuple[str, str | None]] = {}  # message id -> (scope, visible_in)
    for i in range(N_SCOPES):
        scope, s = scope_of(i), secrets(i)
        dm = scope.startswith("dm:")
        lines: list[tuple[str, str | None, str]] = [
            ("pub", None, f"My locker code is {s['public']} and my sister lives in Lisbon{i}")
        ]
        if not dm:
            lines.append(("priv", "priv", f"The vault password is {s['restricted']}, my brother works at Acme{i}"))
        for channel, visible, text in lines:
            channel_id = f"{scope}-{channel}"
            reply = await brain.respond(
                IncomingTurn(
                    scope=scope,
                    source="console",
                    channel_id=channel_id,
                    author_id=f"u{i}",
                    author_name=f"user{i}",
                    text=text,
                    visible_in=channel_id if visible else None,
                )
            )
            await reply.complete()
            said[reply.message.id] = (scope, channel_id if visible else None)
    await brain.drain()
    rows = await app.db.pool.fetch("SELECT id, scope, visible_in FROM messages")
    said = {r["id"]: (r["scope"], r["visible_in"]) for r in rows}  # replies included

    questions = [
        "what is my locker code?",
        "what is the vault password?",
        "where does my sister live?",
        "where does my brother work?",
        "tell me the secret words",
        "what did I say earlier?",
    ]
    queries = 0
    own_secret_seen = own_private_seen = 0
    kinds: set[str] = set()
    for i in range(N_SCOPES):
        scope, s = scope_of(i), secrets(i)
        audiences: list[tuple[str | None, str | None]] = [(f"{scope}-pub", f"{scope}-pub"), (None, None)]
        if not scope.startswith("dm:"):
            audiences += [(f"{scope}-priv", f"{scope}-priv"), (f"{scope}-other", f"{scope}-other")]
        others = [secrets(j) for j in range(N_SCOPES) if j != i]
        for asked_in, visible_channel in audiences:
            for k in (3, 10):
                bundles = await brain.contexts(
                    [(q, scope) for q in questions],
                    channel_id=asked_in,
                    k=k,
                    author_id=f"u{i}",
                    visible_channel=visible_channel,
                )
                for bundle in bundles:
                    queries += 1
                    assert not bundle.skipped, bundle.skipped
                    for item in bundle.items():
                        kinds.add(item.kind)
                        text = item.text
                        for other in others:  # never another scope's words
                            assert other["public"] not in text and other["restricted"] not in text, (scope, text)
                        for message_id in item.message_ids:  # and every source is this audience's to see
                            source_scope, visible_in = said[message_id]
                            assert source_scope == scope, (scope, item)
                            assert visible_in in (None, visible_channel), (scope, visible_channel, item)
                        if visible_channel != f"{scope}-priv":
                            assert s["restricted"] not in text, (scope, visible_channel, item)
                        own_secret_seen += s["public"] in text
                        own_private_seen += s["restricted"] in text and visible_channel == f"{scope}-priv"
    assert queries >= 1000
    # The test has teeth: the audiences that may see a secret do get it back.
    assert own_secret_seen > 100 and own_private_seen > 50
    assert {"turn", "episode", "fact"} <= kinds  # every layer was exercised


async def test_the_consoles_archetype_counts_are_its_own_scopes(app: App) -> None:
    """Global archetypes count matches across every scope; /archetypes shows the console's scope's alone."""
    import io
    import re

    from bot.console import Console, ConsoleIdentity

    for i, text in enumerate(
        [
            "why does my docker build fail with exit code 137?",
            "my python script throws a KeyError when I parse the config, any idea?",
        ]
    ):
        reply = await app.brain.respond(
            IncomingTurn(
                scope="g1",
                source="console",
                channel_id="c",
                author_id="u",
                author_name="ana",
                text=text,
                external_id=f"m{i}",
            )
        )
        await reply.complete()
    await app.brain.drain()

    async def shown(scope: str) -> list[int]:
        out = io.StringIO()
        console = Console(
            app.brain,
            ConsoleIdentity("bo", "console", scope),
            io.StringIO("/archetypes\n"),
            out,
            io.StringIO(),
            interactive=False,
        )
        assert await console.run() == 0
        return [int(m) for m in re.findall(r"matches=(\d+)", out.getvalue())]

    assert sum(await shown("g1")) >= 1
    assert sum(await shown("g2")) == 0, "another scope's traffic is not this scope's to see"
