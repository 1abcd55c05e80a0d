"""Dream cycle and governance on the real database, MiniLM, and a month of synthetic history."""

from __future__ import annotations

import asyncio
import io
import re
from datetime import timedelta
from pathlib import Path

import pytest

from bot.app import App
from bot.brain import IncomingTurn
from bot.console import Console, ConsoleIdentity
from dream.cycle import DreamCycle, StepReport
from dream.governance import NotAnApprover, UnknownProposal, Voter
from dream.steps import DEFAULT_STEPS
from tests.dream_data import HELD_OUT_PLANNING, NOW, PLANNING, month_of_history

APPROVER = Voter("u-mod", "mod", frozenset({"hippobot-approver"}))
PLANNING_WORDS = re.compile(r"plan|project|milestone|timeline|roadmap|phase|step|schedule|task", re.I)


async def dreamt(app: App, tmp_path: Path) -> tuple[object, object]:
    await app.importer.run(month_of_history(tmp_path / "month.jsonl"), "g1")
    report = await app.dream.run(NOW)
    planning = [p for p in await app.governance.list() if PLANNING_WORDS.search(p.payload["name"])]
    return report, planning


async def test_a_month_with_unserved_planning_talk_yields_a_planning_proposal(app: App, tmp_path: Path) -> None:
    report, planning = await dreamt(app, tmp_path)
    assert report.status == "ok", report.render()
    assert len(planning) == 1, [p.payload["name"] for p in await app.governance.list()]
    p = planning[0]
    assert p.kind == "new_archetype" and p.status == "pending"
    assert 5 <= len(p.payload["examples"]) <= 8
    assert all(e in PLANNING for e in p.payload["examples"])
    assert 1 <= p.payload["context_turns"] <= 20 and 0 <= p.payload["context_vectors"] <= 15
    assert 0.5 <= p.payload["similarity_threshold"] <= 0.9 and 0 <= p.payload["triple_depth"] <= 3
    assert p.rationale.count("\n") >= 2 and "fit no archetype well" in p.rationale
    ids = [m["message_id"] for m in p.evidence["messages"]]
    texts = {r["id"]: r["content"] for r in await app.db.pool.fetch("SELECT id, content FROM messages WHERE id = ANY($1)", ids)}
    assert len(ids) >= 5 and sum(texts[i] in PLANNING for i in ids) / len(ids) >= 0.8
    assert all(m["similarity"] < 0.68 for m in p.evidence["messages"])
    run = await app.db.pool.fetchrow("SELECT status, report FROM dream_runs WHERE id = $1", report.run_id)
    assert run["status"] == "ok" and run["report"]["archetype_analysis"]["counts"]["proposed"] >= 1
    chart = Path(report.steps["digest"].notes[0].removeprefix("chart: "))
    assert chart.exists() and chart.stat().st_size > 5000


async def test_approving_applies_it_and_planning_messages_route_to_it(app: App, tmp_path: Path) -> None:
    _, planning = await dreamt(app, tmp_path)
    proposal = planning[0]
    outcome = await app.governance.vote(proposal.id, APPROVER, True, now=NOW)
    assert outcome.decided and outcome.proposal.status == "applied" and outcome.proposal.decided_by == "mod"
    row = await app.db.pool.fetchrow(
        "SELECT created_by, approved_by, active FROM context_archetypes WHERE archetype_name = $1", proposal.payload["name"]
    )
    assert (row["created_by"], row["approved_by"], row["active"]) == ("ai_dream_cycle", "mod", True)
    # the running router hears about it through NOTIFY, without a restart or the 60 s poll
    for _ in range(50):
        if proposal.payload["name"] in [a.name for a in app.router.archetypes]:
            break
        await asyncio.sleep(0.1)
    for text in HELD_OUT_PLANNING:
        reply = await app.brain.respond(IncomingTurn("g1", "console", "c9", "u1", "ana", text))
        await reply.complete()
        assert reply.plan.archetype == proposal.payload["name"], text
        assert reply.plan.turns == proposal.payload["context_turns"]


async def test_a_rejected_proposal_does_not_come_back(app: App, tmp_path: Path) -> None:
    _, planning = await dreamt(app, tmp_path)
    outcome = await app.governance.vote(planning[0].id, APPROVER, False, now=NOW)
    assert outcome.proposal.status == "rejected"
    again = await app.dream.run(NOW + timedelta(days=1))
    assert again.steps["archetype_analysis"].counts["already_covered"] >= 1
    names = [p.payload["name"] for p in await app.governance.list()]
    assert not any(PLANNING_WORDS.search(n) for n in names), names


async def test_only_approvers_may_vote_and_decided_proposals_stay_decided(app: App, tmp_path: Path) -> None:
    _, planning = await dreamt(app, tmp_path)
    pid = planning[0].id
    with pytest.raises(NotAnApprover):
        await app.governance.vote(pid, Voter("u-x", "someone"), True, now=NOW)
    assert await app.db.pool.fetchval("SELECT count(*) FROM proposal_votes") == 0
    manager = Voter("u-admin", "admin", can_manage_server=True)
    await app.governance.vote(pid, manager, False, now=NOW)
    late = await app.governance.vote(pid, APPROVER, True, now=NOW)
    assert not late.counted and late.proposal.status == "rejected"
    with pytest.raises(UnknownProposal):
        await app.governance.vote(99999, APPROVER, True, now=NOW)


async def test_pending_proposals_expire(app: App, tmp_path: Path) -> None:
    _, planning = await dreamt(app, tmp_path)
    assert await app.governance.expire(NOW + timedelta(days=30)) >= 1
    assert (await app.governance.get(planning[0].id)).status == "expired"
    late = await app.governance.vote(planning[0].id, APPROVER, True, now=NOW + timedelta(days=30))
    assert not late.counted


async def test_two_processes_dream_once(app: App) -> None:
    async def slow(services, now):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0.5)
        return StepReport(counts={"n": 1})

    first = DreamCycle(app.dream.services, [("slow", slow)])
    second = DreamCycle(app.dream.services, [("slow", slow)])
    a, b = await asyncio.gather(first.run(NOW, trigger="schedule", slot=NOW), second.run(NOW, trigger="schedule", slot=NOW))
    assert sorted([a.status, b.status]) == ["ok", "skipped"]
    late = await second.run(NOW, trigger="schedule", slot=NOW)  # after the first finished: same slot
    assert late.status == "skipped" and "already happened" in (late.reason or "")
    assert await app.db.pool.fetchval("SELECT count(*) FROM dream_runs") == 1


async def test_a_failing_step_leaves_the_others_work_in_place(app: App) -> None:
    async def boom(services, now):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire")

    async def count(services, now):  # type: ignore[no-untyped-def]
        await services.pool.execute("INSERT INTO dream_runs (trigger) VALUES ('manual')")  # visible side effect
        return StepReport(counts={"wrote": 1})

    report = await DreamCycle(app.dream.services, [("before", count), ("boom", boom), ("after", count)]).run(NOW)
    assert report.status == "partial"
    assert report.steps["boom"].error == "RuntimeError: disk on fire"
    assert report.steps["before"].counts == report.steps["after"].counts == {"wrote": 1}
    stored = await app.db.pool.fetchval("SELECT report FROM dream_runs WHERE id = $1", report.run_id)
    assert stored["boom"]["error"] and stored["after"]["counts"]["wrote"] == 1
    assert await app.db.pool.fetchval("SELECT count(*) FROM dream_runs") == 3


async def test_replay_and_decay_respect_pins_merge_duplicates_and_keep_messages(app: App, tmp_path: Path) -> None:
    await app.importer.run(month_of_history(tmp_path / "month.jsonl"), "g1")
    pool = app.db.pool
    await pool.execute("UPDATE episodes SET salience = 0.052")  # one decay step (x0.9) below the 0.05 floor
    pinned = await pool.fetchval("UPDATE episodes SET pinned = true WHERE id = (SELECT min(id) FROM episodes) RETURNING id")
    messages_before = await pool.fetchval("SELECT count(*) FROM messages")
    episodes_before = await pool.fetchval("SELECT count(*) FROM episodes")
    report = await app.dream.run(NOW)
    counts = {name: step.counts for name, step in report.steps.items()}
    assert counts["episodic_replay"]["replayed"] > 0
    assert counts["episodic_decay"]["merged"] > 0, "the history repeats lines verbatim"
    assert counts["episodic_decay"]["forgotten"] > 0, "old, unreplayed, low-salience traces fade"
    kept = await pool.fetchval("SELECT salience FROM episodes WHERE id = $1", pinned)
    assert kept is not None and kept >= 0.052, "a pinned memory never decays (replay may still reinforce it)"
    assert await pool.fetchval("SELECT count(*) FROM episodes") < episodes_before
    assert await pool.fetchval("SELECT count(*) FROM messages") == messages_before


async def test_the_console_approves_and_the_next_message_uses_the_new_plan(app: App, tmp_path: Path) -> None:
    _, planning = await dreamt(app, tmp_path)
    name = planning[0].payload["name"]
    out = io.StringIO()
    script = io.StringIO(f"/proposals\n/approve {planning[0].id}\n{HELD_OUT_PLANNING[0]}\n/recall {HELD_OUT_PLANNING[1]}\n")
    console = Console(app.brain, ConsoleIdentity("mod", "console", "g1"), script, out, io.StringIO(),
                      interactive=False, governance=app.governance, dream=app.dream, approver_role="hippobot-approver")
    await console.run()
    text = out.getvalue()
    assert f"Proposal #{planning[0].id}" in text
    assert f"proposal #{planning[0].id} applied by mod" in text
    assert f"archetype: {name}" in text
    match = await app.db.pool.fetchrow(
        """SELECT ca.archetype_name FROM archetype_matches am JOIN messages m ON m.id = am.message_id
           JOIN context_archetypes ca ON ca.id = am.archetype_id WHERE m.content = $1""", HELD_OUT_PLANNING[0]
    )
    assert match["archetype_name"] == name


def test_registry_order_ends_with_the_digest() -> None:
    names = [n for n, _ in DEFAULT_STEPS]
    assert names[-1] == "digest" and len(set(names)) == len(names)
