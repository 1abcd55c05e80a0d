"""The console's /approve and /reject decide its own scope's proposals and the global ones, never another
scope's (found by the new-user probe: `/approve N` in the console applied another server's proposal)."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from bot.app import App
from bot.console import Console, ConsoleIdentity
from dream.governance import Proposal

TEA = {
    "name": "tea_talk",
    "description": "Messages about tea",
    "examples": ["which oolong for a cold evening?", "is gyokuro worth the price?", "how long do I steep a sencha?"],
    "context_turns": 5,
    "context_vectors": 5,
    "similarity_threshold": 0.7,
    "triple_depth": 1,
}


async def proposal(app: App, scope: str | None, name: str = "tea_talk") -> Proposal:
    return await app.governance.propose(
        "new_archetype",
        f"new archetype '{name}'",
        {**TEA, "name": name},
        "- tea, tea, tea",
        {"scope": scope} if scope else {},
        centroid=None,
        now=datetime.now(UTC),
        scope=scope,
    )


async def run_console(app: App, scope: str, script: str) -> str:
    """What the console printed (its output, then its errors)."""
    out, err = io.StringIO(), io.StringIO()
    await Console(
        app.brain,
        ConsoleIdentity("owner", "console", scope),
        io.StringIO(script),
        out,
        err,
        interactive=False,
        governance=app.governance,
        dream=app.dream,
        approver_role="hippobot-approver",
    ).run()
    return out.getvalue() + err.getvalue()


async def test_approving_another_scopes_proposal_from_the_console_is_refused_naming_its_scope(app: App) -> None:
    theirs = await proposal(app, "g1")
    text = await run_console(app, "local", f"/approve {theirs.id}\n")
    assert f"error: proposal #{theirs.id} belongs to scope g1, not to this console's (local)" in text, text
    assert (await app.governance.get(theirs.id)).status == "pending"
    assert await app.db.pool.fetchval("SELECT count(*) FROM proposal_votes") == 0


async def test_rejecting_another_scopes_proposal_from_the_console_is_refused(app: App) -> None:
    theirs = await proposal(app, "g1")
    text = await run_console(app, "local", f"/reject {theirs.id}\n")
    assert "belongs to scope g1" in text, text
    assert (await app.governance.get(theirs.id)).status == "pending"


async def test_the_console_still_decides_its_own_scopes_proposal(app: App) -> None:
    mine = await proposal(app, "local")
    text = await run_console(app, "local", f"/approve {mine.id}\n")
    assert f"proposal #{mine.id} applied" in text, text


async def test_the_console_still_decides_a_global_proposal(app: App) -> None:
    """The console is the owner's, and the owner decides global proposals (/proposals lists them there)."""
    glob = await proposal(app, None, "tea_everywhere")
    text = await run_console(app, "local", f"/approve {glob.id}\n")
    assert f"proposal #{glob.id} applied" in text, text
