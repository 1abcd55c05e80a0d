"""The console's and the CLI's dream commands show their own scope (issue 32, items 4 and 5)."""

from __future__ import annotations

import argparse
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.console import Console, ConsoleIdentity
from dream.governance import Proposal, Voter
from tests.conftest import make_settings

APPROVER = Voter("u-mod", "mod", frozenset({"hippobot-approver"}))
# A guild's proposal, its examples quoted from that guild's messages.
TEA: dict[str, Any] = {
    "name": "tea_talk",
    "description": "Messages about tea",
    "examples": ["which oolong for a cold evening?", "is gyokuro worth the price?", "how long do I steep a sencha?"],
    "context_turns": 5,
    "context_vectors": 5,
    "similarity_threshold": 0.7,
    "triple_depth": 1,
}


async def guild_proposal(app: App) -> Proposal:
    return await app.governance.propose(
        "new_archetype",
        "new archetype 'tea_talk'",
        TEA,
        "- tea, tea, tea",
        {"scope": "g1"},
        centroid=None,
        now=datetime.now(UTC),
        scope="g1",
    )


def console(app: App, scope: str, script: str, out: io.StringIO) -> Console:
    return Console(
        app.brain,
        ConsoleIdentity("mod", "console", scope),
        io.StringIO(script),
        out,
        io.StringIO(),
        interactive=False,
        governance=app.governance,
        dream=app.dream,
        approver_role="hippobot-approver",
    )


async def test_dream_in_the_console_scope_shows_no_other_scopes_proposal(app: App) -> None:
    theirs = await guild_proposal(app)
    out = io.StringIO()
    await console(app, "local", "/dream\n", out).run()
    text = out.getvalue()
    assert "dream run #" in text, text
    assert f"Proposal #{theirs.id}" not in text and "tea_talk" not in text, text
    assert not any(e in text for e in TEA["examples"]), "another server's messages"
    assert (await app.governance.get(theirs.id)).post_pending, "it still waits for its own server's dream channel"


async def test_dream_in_a_guild_scope_posts_that_guilds_proposal(app: App) -> None:
    mine = await guild_proposal(app)
    out = io.StringIO()
    await console(app, "g1", "/dream\n", out).run()
    assert f"Proposal #{mine.id}: new archetype 'tea_talk'" in out.getvalue()
    assert not (await app.governance.get(mine.id)).post_pending


async def test_hippobot_dream_for_a_scope_prints_that_scopes_proposals_only(
    app: App, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`hippobot dream --scope doesnotexist` warns of a typo, runs, and prints no other scope's proposal
    (bot/cli.py passes ``only=args.scope`` to post_proposals)."""
    from bot import cli

    theirs = await guild_proposal(app)
    local = await app.governance.propose(
        "new_archetype",
        "new archetype 'coffee_talk'",
        {**TEA, "name": "coffee_talk"},
        "- coffee",
        {},
        centroid=None,
        now=datetime.now(UTC),
        scope="local",
    )
    settings = make_settings(db_url, tmp_path / "cli", console_scope="local")
    code = await cli._dream(settings, argparse.Namespace(scope="doesnotexist", now=None))
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "a typo?" in out.err and "dream run #" in out.out
    for other in (theirs, local):
        assert f"Proposal #{other.id}" not in out.out, out.out
    assert not any(e in out.out for e in TEA["examples"])
    assert (await app.governance.get(local.id)).post_pending, "the console's own waits for its own /dream"


async def test_hippobot_dream_shows_a_servers_earlier_proposals_once(
    app: App, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """P8: every nightly `hippobot dream --scope srv` reprinted every proposal still in the outbox (decided ones
    too) as waiting; proposals made before the run are counted in one line."""
    from bot import cli

    theirs = await guild_proposal(app)  # made before the run: the server's dream channel still has to show it
    settings = make_settings(db_url, tmp_path / "cli", console_scope="local")
    code = await cli._dream(settings, argparse.Namespace(scope="g1", now=None))
    out = capsys.readouterr()
    assert code == 0, out.err
    assert f"Proposal #{theirs.id}" not in out.out, out.out
    assert "(1 earlier proposal(s) wait in the outbox for their server's dream channel" in out.out, out.out
    assert (await app.governance.get(theirs.id)).post_pending, "it still waits for `hippobot run`"


async def test_archetypes_lists_the_archetype_the_scope_routes_with(app: App) -> None:
    mine = await guild_proposal(app)
    assert (await app.governance.vote(mine.id, APPROVER, True, now=datetime.now(UTC))).proposal.status == "applied"
    out = io.StringIO()
    await console(app, "g1", f"/archetypes\n/recall {TEA['examples'][0]}\n", out).run()
    text = out.getvalue()
    assert "archetype: tea_talk" in text, "/recall routes with it"
    listed = [line.split()[0] for line in text.splitlines() if "turns=" in line and "matches=" in line]
    assert "tea_talk" in listed, text
    elsewhere = io.StringIO()
    await console(app, "g2", "/archetypes\n", elsewhere).run()
    assert "tea_talk" not in elsewhere.getvalue(), "another guild's own archetype is not listed there"
