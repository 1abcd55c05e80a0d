"""Dream cycle and governance on the real database, MiniLM, and a month of synthetic history."""

from __future__ import annotations

import asyncio
import io
import re
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

import dream.archetype_analysis as analysis
import dream.replay as replay_module
from bot.app import App
from bot.console import Console, ConsoleIdentity
from dream.cycle import DreamCycle, RunReport, StepReport
from dream.digest import render_digest
from dream.governance import GovernanceError, NotAnApprover, OtherScope, Proposal, UnknownKind, UnknownProposal, Voter
from dream.steps import DEFAULT_STEPS
from dream.themes import LIGHT_VERBS, PoorMatch, Recurrence, gerund, theme_words
from memory.salience import TRIVIA, batch_novelty, imported_salience
from tests.conftest import admit_every_import
from tests.dream_data import (
    DENTIST,
    HELD_OUT_PLANNING,
    NOW,
    PLANNING,
    month_of_history,
    planning_month,
    two_months_of_history,
)

APPROVER = Voter("u-mod", "mod", frozenset({"hippobot-approver"}))
PLANNING_WORDS = re.compile(r"plan|project|milestone|timeline|roadmap|phase|step|schedule|task", re.I)


async def dreamt(app: App, tmp_path: Path) -> tuple[RunReport, list[Proposal]]:
    await app.importer.run(month_of_history(tmp_path / "month.jsonl"), "g1")
    report = await app.dream.run(NOW)
    planning = [p for p in await app.governance.list() if PLANNING_WORDS.search(p.payload["name"])]
    return report, planning


@pytest.fixture(autouse=True)
def every_imported_message_is_an_episode(app: App) -> None:
    """The dream replays and decays episodes: here every imported message becomes one (the import's gate
    would keep the month's trivia out of the episodic index, and trivia fading is what is tested)."""
    admit_every_import(app)


@pytest.mark.slow
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
    # what changes for those messages: the plan they get today, and each setting that moves
    assert "Today " in p.rationale and re.search(r"that is (recent turns|memories|graph depth) \d+ -> \d+", p.rationale)
    ids = [m["message_id"] for m in p.evidence["messages"]]
    texts = {
        r["id"]: r["content"]
        for r in await app.db.pool.fetch("SELECT id, content FROM messages WHERE id = ANY($1)", ids)
    }
    assert len(ids) >= 5 and sum(texts[i] in PLANNING for i in ids) / len(ids) >= 0.8
    assert all(m["similarity"] < 0.68 for m in p.evidence["messages"])
    run = await app.db.pool.fetchrow("SELECT status, report FROM dream_runs WHERE id = $1", report.run_id)
    assert run["status"] == "ok" and run["report"]["archetype_analysis"]["counts"]["proposed"] >= 1
    chart = Path(report.steps["digest"].notes[0].removeprefix("chart: "))
    assert chart.exists() and chart.stat().st_size > 5000


async def test_approving_applies_it_in_its_guild_and_planning_messages_route_to_it_there(
    app: App, tmp_path: Path
) -> None:
    _, planning = await dreamt(app, tmp_path)
    proposal = planning[0]
    assert proposal.scope == "g1"
    outcome = await app.governance.vote(proposal.id, APPROVER, True, now=NOW)
    assert outcome.decided and outcome.proposal.status == "applied" and outcome.proposal.decided_by == "mod"
    row = await app.db.pool.fetchrow(
        "SELECT id, created_by, approved_by, active, scope FROM context_archetypes WHERE archetype_name = $1",
        proposal.payload["name"],
    )
    assert (row["created_by"], row["approved_by"], row["active"], row["scope"]) == ("ai_dream_cycle", "mod", True, "g1")
    # its examples remember the messages they came from (forgetting one removes it)
    sources = await app.db.pool.fetch(
        "SELECT s.example, m.content FROM archetype_example_sources s JOIN messages m ON m.id = s.message_id "
        "WHERE s.archetype_id = $1",
        row["id"],
    )
    assert len(sources) == len(proposal.payload["examples"]) and all(r["example"] == r["content"] for r in sources)
    # the running router hears about it through NOTIFY, without a restart or the 60 s poll
    for _ in range(50):
        if proposal.payload["name"] in [a.name for a in app.router.archetypes_in("g1")]:
            break
        await asyncio.sleep(0.1)
    assert proposal.payload["name"] not in [a.name for a in app.router.archetypes], "not global"
    for vector in await app.embedder.embed_many(HELD_OUT_PLANNING):
        plan = app.router.classify(vector, "g1")
        assert plan.archetype == proposal.payload["name"]
        assert plan.turns == proposal.payload["context_turns"]
        assert app.router.classify(vector, "g2").archetype != proposal.payload["name"], "another guild: unchanged"


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


@pytest.mark.slow
async def test_a_vote_past_a_proposals_time_says_it_expired_and_the_list_agrees(app: App, tmp_path: Path) -> None:
    _, planning = await dreamt(app, tmp_path)
    later = NOW + timedelta(days=30)  # no expiry step ran in between
    late = await app.governance.vote(planning[0].id, APPROVER, True, now=later)
    assert not late.counted and late.proposal.status == "expired", "not 'pending; the vote changes nothing'"
    assert await app.governance.list(scope="g1", now=later) == []


async def test_a_history_imported_long_after_it_happened_is_replayed_and_analysed(app: App, tmp_path: Path) -> None:
    """The look-back windows end at the history's own last message, not the calendar's today: a month of
    history imported four months later (no --now) is replayed and yields its proposal."""
    await app.importer.run(month_of_history(tmp_path / "month.jsonl"), "g1")
    report = await app.dream.run(NOW + timedelta(days=120))
    assert report.status == "ok", report.render()
    assert report.steps["episodic_replay"].counts["replayed"] > 0, report.render()
    planning = [p for p in await app.governance.list() if PLANNING_WORDS.search(p.payload["name"])]
    assert len(planning) == 1, report.render()
    last = await app.db.pool.fetchval("SELECT max(created_at) FROM messages WHERE scope = 'g1'")
    assert f"days to {last:%Y-%m-%d}" in planning[0].rationale, "the rationale names the history's own days"


async def test_the_digest_says_what_the_night_did_in_plain_words(app: App, tmp_path: Path) -> None:
    report, planning = await dreamt(app, tmp_path)
    steps = report.steps
    assert "proposed as archetypes" in steps["archetype_analysis"].headline
    assert "episodes replayed" in steps["episodic_replay"].headline
    text = render_digest(report.run_id, "g1", NOW, NOW - timedelta(days=30), NOW, 120, steps)
    lines = text.splitlines()
    assert lines[0].startswith("Dream digest for g1") and "120 message(s)" in lines[0]
    assert any(line.startswith("- ") and "proposed as archetypes" in line for line in lines)
    assert f"proposal #{planning[0].id}" in text and "Failed" not in text
    assert "=" not in text, "no counter names: words a moderator reads"
    quiet = render_digest(2, "g1", NOW, NOW, NOW, 0, {"episodic_replay": StepReport(counts={"replayed": 0})})
    assert "A quiet night" in quiet
    failed = render_digest(3, None, NOW, NOW, NOW, 0, {"place_merge": StepReport(error="boom")})
    assert "Failed (the rest of the run stands): place_merge (boom)" in failed
    assert "nothing said since" not in text, "the window ends this night"
    later = NOW + timedelta(days=20)  # P8: a month of nightly digests of the same weeks read alike
    stale = render_digest(4, "g1", later, NOW - timedelta(days=30), NOW, 120, steps)
    assert f"(nothing said since {NOW:%Y-%m-%d}: the history's last weeks)" in stale.splitlines()[0]


def _said(text: str, author: str, day: int) -> PoorMatch:
    return PoorMatch(day, text, "general", author, 0.5, None, np.zeros(3, dtype=np.float32), NOW + timedelta(days=day))


def test_only_a_recurring_kind_of_request_with_content_makes_a_theme() -> None:
    r = Recurrence(people=3, days=3)
    asks = [f"can we draft a schedule for the {s} launch?" for s in ("app", "site", "game", "book", "shop", "band")]
    assert r.fails([_said(t, "abcd"[i % 4], i) for i, t in enumerate(asks)]) is None
    assert r.fails([_said(t, "ana", i) for i, t in enumerate(asks)]) == "said by 1 people (needs 3)"
    assert r.fails([_said(t, "ana" if i < 4 else "bcd"[i - 4], i) for i, t in enumerate(asks)]) == "mostly one person's"
    assert r.fails([_said(t, "abcd"[i % 4], 0) for i, t in enumerate(asks)]) == "on 1 days (needs 3)"
    hellos = ["hey all", "haha", "morning!", "oh hey Kofi", "surviving haha", "thanks!"]
    assert r.fails([_said(t, "abcd"[i % 4], i) for i, t in enumerate(hellos)]) == "mostly greetings and small talk"


def test_a_theme_is_never_named_after_a_person() -> None:
    texts = [f"julia can you fix the {t} again?" for t in ("zip", "bike chain", "shoe", "lamp", "kettle", "door")]
    name, terms = theme_words(texts, ["what a lovely day", "see you soon"], exclude=frozenset({"julia"}))
    assert "julia" not in name and "julia" not in terms, (name, terms)


async def test_two_processes_dream_once(app: App) -> None:
    async def slow(services, now):
        await asyncio.sleep(0.5)
        return StepReport(counts={"n": 1})

    first = DreamCycle(app.dream.services, [("slow", slow)])
    second = DreamCycle(app.dream.services, [("slow", slow)])
    a, b = await asyncio.gather(
        first.run(NOW, trigger="schedule", slot=NOW), second.run(NOW, trigger="schedule", slot=NOW)
    )
    assert sorted([a.status, b.status]) == ["ok", "skipped"]
    late = await second.run(NOW, trigger="schedule", slot=NOW)  # after the first finished: same slot
    assert late.status == "skipped" and "already happened" in (late.reason or "")
    assert await app.db.pool.fetchval("SELECT count(*) FROM dream_runs") == 1


async def test_a_run_finishes_in_its_own_time_not_the_servers(app: App) -> None:
    """A dream at a simulated time (``--now``) finishes a moment after it started, in that time."""

    async def quick(services, now):
        return StepReport(counts={"n": 1})

    then = datetime(2025, 3, 1, 3, 0, tzinfo=UTC)
    report = await DreamCycle(app.dream.services, [("quick", quick)]).run(then)
    row = await app.db.pool.fetchrow("SELECT started_at, finished_at FROM dream_runs WHERE id = $1", report.run_id)
    assert row["started_at"] == then
    assert timedelta(0) <= row["finished_at"] - then < timedelta(minutes=5)


async def test_a_failing_step_leaves_the_others_work_in_place(app: App) -> None:
    async def boom(services, now):
        raise RuntimeError("disk on fire")

    async def count(services, now):
        await services.pool.execute("INSERT INTO dream_runs (trigger) VALUES ('manual')")  # visible side effect
        return StepReport(counts={"wrote": 1})

    report = await DreamCycle(app.dream.services, [("before", count), ("boom", boom), ("after", count)]).run(NOW)
    assert report.status == "partial"
    assert report.steps["boom"].error == "RuntimeError: disk on fire"
    assert report.steps["before"].counts == report.steps["after"].counts == {"wrote": 1}
    stored = await app.db.pool.fetchval("SELECT report FROM dream_runs WHERE id = $1", report.run_id)
    assert stored["boom"]["error"] and stored["after"]["counts"]["wrote"] == 1
    assert await app.db.pool.fetchval("SELECT count(*) FROM dream_runs") == 3


async def test_a_run_stopped_part_way_is_abandoned_and_the_next_one_runs(app: App) -> None:
    started = asyncio.Event()

    async def done(services, now):
        return StepReport(counts={"done": 1})

    async def forever(services, now):
        started.set()
        await asyncio.sleep(3600)
        return StepReport()

    run = asyncio.create_task(DreamCycle(app.dream.services, [("first", done), ("stuck", forever)]).run(NOW))
    await started.wait()
    run.cancel()  # what SIGTERM does to the scheduler's run
    with pytest.raises(asyncio.CancelledError):
        await run
    row = await app.db.pool.fetchrow("SELECT status, report FROM dream_runs")
    assert row["status"] == "abandoned" and row["report"]["first"]["counts"] == {"done": 1}
    # A row a killed process left 'running' is closed by the next run, which goes ahead.
    await app.db.pool.execute("INSERT INTO dream_runs (trigger) VALUES ('manual')")
    report = await DreamCycle(app.dream.services, [("first", done)]).run(NOW)
    assert report.status == "ok"
    statuses = [r["status"] for r in await app.db.pool.fetch("SELECT status FROM dream_runs ORDER BY id")]
    assert statuses == ["abandoned", "abandoned", "ok"]


async def test_replay_and_decay_respect_pins_merge_duplicates_and_keep_messages(app: App, tmp_path: Path) -> None:
    await app.importer.run(month_of_history(tmp_path / "month.jsonl"), "g1")
    pool = app.db.pool
    await pool.execute("UPDATE episodes SET salience = 0.01")  # all trivia
    pinned = await pool.fetchval(
        "UPDATE episodes SET pinned = true WHERE id = (SELECT min(id) FROM episodes) RETURNING id"
    )
    messages_before = await pool.fetchval("SELECT count(*) FROM messages")
    episodes_before = await pool.fetchval("SELECT count(*) FROM episodes")
    report = await app.dream.run(NOW)
    counts = {name: step.counts for name, step in report.steps.items()}
    assert counts["episodic_replay"]["replayed"] > 0
    assert counts["episodic_decay"]["merged"] > 0, "the history repeats lines verbatim"
    assert counts["episodic_decay"]["forgotten"] == 0, "nothing has gone unreinforced for two months yet"
    later = await app.dream.run(NOW + timedelta(days=90))
    assert later.steps["episodic_decay"].counts["forgotten"] > 0, "long-unreinforced trivia fades"
    kept = await pool.fetchval("SELECT salience FROM episodes WHERE id = $1", pinned)
    assert kept is not None and kept >= 0.01, "a pinned memory is never forgotten (replay may still reinforce it)"
    assert await pool.fetchval("SELECT count(*) FROM episodes") < episodes_before
    assert await pool.fetchval("SELECT count(*) FROM messages") == messages_before


async def test_the_console_approves_and_the_next_message_uses_the_new_plan(app: App, tmp_path: Path) -> None:
    _, planning = await dreamt(app, tmp_path)
    name = planning[0].payload["name"]
    out = io.StringIO()
    script = io.StringIO(
        f"/proposals\n/approve {planning[0].id}\n{HELD_OUT_PLANNING[0]}\n/recall {HELD_OUT_PLANNING[1]}\n"
    )
    console = Console(
        app.brain,
        ConsoleIdentity("mod", "console", "g1"),
        script,
        out,
        io.StringIO(),
        interactive=False,
        governance=app.governance,
        dream=app.dream,
        approver_role="hippobot-approver",
    )
    await console.run()
    text = out.getvalue()
    assert f"Proposal #{planning[0].id}" in text
    assert f"proposal #{planning[0].id} applied by mod" in text
    await app.router.refresh()
    assert app.router.classify(await app.embedder.embed(HELD_OUT_PLANNING[0]), "g1").archetype == name
    assert f"archetype: {name}" in text  # the console's /recall routed with the guild's new archetype


def test_registry_order_ends_with_the_digest() -> None:
    names = [n for n, _ in DEFAULT_STEPS]
    assert names[-1] == "digest" and len(set(names)) == len(names)


# --- one theme, one readable proposal ---------------------------------------------------------------

STOP = {"the", "a", "and", "of", "for", "to", "in", "on", "with", "our", "my", "what", "how", "can", "we"}


@pytest.mark.slow
async def test_a_planning_month_yields_one_planning_proposal_with_a_readable_name(app: App, tmp_path: Path) -> None:
    path, planning = planning_month(tmp_path / "planning.jsonl")
    await app.importer.run(path, "g1")
    report = await app.dream.run(NOW)
    proposals = await app.governance.list()
    about_planning = [
        p for p in proposals if sum(e in planning for e in p.payload["examples"]) >= len(p.payload["examples"]) / 2
    ]
    assert len(about_planning) == 1, [(p.payload["name"], p.payload["examples"][:2]) for p in proposals]
    p = about_planning[0]
    assert p.evidence["clusters_merged"] >= 2, "the theme came out of clustering in several pieces"
    assert report.steps["archetype_analysis"].counts["proposed"] == len(proposals)
    words = p.payload["name"].split("_")
    assert PLANNING_WORDS.search(p.payload["name"]) and 1 <= len(words) <= 2, p.payload["name"]
    assert not set(words) & (LIGHT_VERBS | STOP), p.payload["name"]
    assert p.payload["description"].startswith("Messages about " + " ".join(words))


def test_names_are_made_of_content_words() -> None:
    planning = [t for t in PLANNING if "plan" in t or "roadmap" in t] * 2
    words, terms = theme_words(planning, ["good morning everyone", "I had pizza for lunch", "my train was late"])
    assert words and not set(words) & LIGHT_VERBS and "let" not in terms
    assert [gerund(v) for v in ("plan", "bake", "cook", "map", "tie", "visit")] == [
        "planning",
        "baking",
        "cooking",
        "mapping",
        "tying",
        "visiting",
    ]


async def test_proposing_only_stores_the_outbox_posts(app: App, tmp_path: Path) -> None:
    class Recorder:
        posted: list[int] = []

        async def post_proposal(self, proposal):
            self.posted.append(proposal.id)
            return "ref"

        async def post_digest(self, text, chart):
            return None

    app.dream.services.channel = Recorder()
    _, planning = await dreamt(app, tmp_path)
    assert Recorder.posted == []
    assert planning[0].post_pending and planning[0].posted_ref is None


# --- the dream never blocks the loop ----------------------------------------------------------------


async def test_the_analysis_and_replay_run_off_the_event_loop(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    """A few thousand poor matches and episodes: while clustering, the replay order and the near-duplicate
    search run, another coroutine keeps ticking."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(6, 384))
    pool = app.db.pool
    n = 2500
    rows = [
        (
            "g1",
            "import",
            str(i),
            "c1",
            f"u{i % 7}",
            "x",
            f"message {i} about theme {i % 6} {rng.integers(10**9)}",
            NOW - timedelta(days=1, minutes=i),
        )
        for i in range(n)
    ]
    await pool.executemany(
        """INSERT INTO messages (scope, source, external_id, channel_id, author_id, author_name, content, created_at,
                                 absorbed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)""",
        rows,
    )
    ids = [r["id"] for r in await pool.fetch("SELECT id FROM messages ORDER BY id")]
    vectors = centres[np.arange(n) % 6] + rng.normal(scale=0.9, size=(n, 384))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    vectors[1] = vectors[0]  # one near-duplicate pair of episodes: the nightly merge finds it
    await pool.executemany(
        """INSERT INTO archetype_matches (scope, message_id, similarity, used_default, matched_at, embedding)
           VALUES ('g1', $1, 0.55, true, $2, $3)""",
        [(i, NOW - timedelta(days=1), v) for i, v in zip(ids, vectors)],
    )
    await pool.executemany(
        """INSERT INTO episodes (scope, channel_id, author_id, message_id, content, embedding, salience, created_at,
                                 last_reinforced_at) VALUES ('g1', 'c1', 'u', $1, 'x', $2, 0.5, $3, $3)""",
        [(i, v, NOW - timedelta(days=1)) for i, v in zip(ids, vectors)],
    )

    ticks = 0
    during: dict[str, tuple[int, bool]] = {}

    def watched(name, fn):
        def run(*args, **kw):
            start = ticks
            result = fn(*args, **kw)
            # Running on the loop's own thread, no other coroutine could have ticked meanwhile.
            during[name] = (ticks - start, threading.current_thread() is threading.main_thread())
            return result

        return run

    monkeypatch.setattr(analysis, "find_themes", watched("find_themes", analysis.find_themes))
    monkeypatch.setattr(replay_module, "replay_order", watched("replay_order", replay_module.replay_order))
    monkeypatch.setattr(replay_module, "_nearest_exact", watched("_nearest_exact", replay_module._nearest_exact))
    services = app.dream.services

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.001)

    stop = asyncio.Event()
    task = asyncio.create_task(ticker(stop))
    try:
        report = await analysis.archetype_proposals(services, NOW)
        await replay_module.replay(services, NOW)
        merged = await replay_module.decay_and_merge(services, NOW)
    finally:
        stop.set()
        await task
    assert report.counts["poor_matches"] == n
    assert merged.counts["merged"] >= 1
    assert not any(on_loop for _, on_loop in during.values()), f"ran on the loop's thread: {during}"
    assert during["find_themes"][0] >= 3, f"the loop ticked {during['find_themes'][0]} times during clustering"


# --- a dream for one guild --------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_run_for_one_guild_works_on_that_guild_only(app: App, tmp_path: Path) -> None:
    path = month_of_history(tmp_path / "month.jsonl")
    await app.importer.run(path, "g1")
    await app.importer.run(path, "g2")
    pool = app.db.pool

    async def snapshot(scope: str) -> list[tuple]:
        return [
            tuple(r)
            for r in await pool.fetch(
                "SELECT id, salience, replay_count, last_reinforced_at FROM episodes WHERE scope = $1 ORDER BY id",
                scope,
            )
        ]

    g2_before = await snapshot("g2")
    report = await app.dream.run(NOW, scope="g1")
    assert report.status == "ok" and report.scope == "g1"
    assert await pool.fetchval("SELECT scope FROM dream_runs WHERE id = $1", report.run_id) == "g1"
    assert {p.scope for p in await app.governance.list()} == {"g1"}
    assert report.steps["episodic_replay"].counts["scopes"] == 1
    assert await snapshot("g2") == g2_before, "the other guild's memories were not touched"
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE scope = 'g1' AND replay_count > 0") > 0
    nightly = await app.dream.run(NOW + timedelta(hours=1), trigger="schedule", slot=NOW)
    assert await pool.fetchval("SELECT scope FROM dream_runs WHERE id = $1", nightly.run_id) is None
    assert {p.scope for p in await app.governance.list()} == {"g1", "g2"}


# --- governance per scope ---------------------------------------------------------------------------

PAYLOAD = {
    "name": "tea_talk",
    "description": "Tea",
    "examples": ["tea?", "which tea is best?", "green or black?"],
    "context_turns": 5,
    "context_vectors": 5,
    "similarity_threshold": 0.7,
    "triple_depth": 1,
}


async def test_an_edit_from_a_guilds_data_makes_its_own_copy_never_the_global_row(app: App) -> None:
    now = datetime.now(UTC)
    global_before = await app.db.pool.fetchrow(
        "SELECT id, example_messages FROM context_archetypes WHERE archetype_name = 'general_question'"
    )
    p = await app.governance.propose(
        "edit_archetype",
        "edit",
        {"name": "general_question", "examples": ["what is a quasar?", "why do cats purr?"]},
        "r",
        {"messages": []},
        centroid=None,
        now=now,
        scope="g1",
    )
    await app.governance.vote(p.id, APPROVER, True, now=now)
    after = await app.db.pool.fetchrow(
        "SELECT id, example_messages FROM context_archetypes WHERE archetype_name = 'general_question' AND scope IS NULL"
    )
    assert tuple(after) == tuple(global_before)
    own = await app.archetype_store.get("general_question", scope="g1")
    assert own.scope == "g1" and own.examples == ("what is a quasar?", "why do cats purr?")
    assert (await app.archetype_store.get("general_question", scope="g2")).scope is None


async def test_proposals_are_listed_and_voted_per_scope(app: App) -> None:
    now = datetime.now(UTC)
    mine = await app.governance.propose("new_archetype", "t", PAYLOAD, "r", {}, centroid=None, now=now, scope="g1")
    await app.governance.propose(
        "new_archetype", "t", {**PAYLOAD, "name": "tea_two"}, "r", {}, centroid=None, now=now, scope="g2"
    )
    glob = await app.governance.propose(
        "new_archetype", "t", {**PAYLOAD, "name": "tea_all"}, "r", {}, centroid=None, now=now
    )
    assert [p.id for p in await app.governance.list(scope="g1")] == [mine.id]
    assert [p.id for p in await app.governance.list(scope=None)] == [glob.id]
    assert len(await app.governance.list()) == 3
    for proposal_id in (mine.id, glob.id):
        with pytest.raises(OtherScope):
            await app.governance.vote(proposal_id, APPROVER, True, now=now, scope="g2")
    assert await app.db.pool.fetchval("SELECT count(*) FROM proposal_votes") == 0
    assert (await app.governance.vote(mine.id, APPROVER, True, now=now, scope="g1")).decided


async def test_kinds_are_registered_and_a_vote_on_an_unknown_kind_is_a_clear_error(app: App) -> None:
    now = datetime.now(UTC)
    pid = await app.db.pool.fetchval(
        """INSERT INTO proposals (kind, title, payload, rationale, evidence, expires_at)
           VALUES ('persona_shift', 't', '{}'::jsonb, 'r', '{}'::jsonb, $1) RETURNING id""",
        now + timedelta(days=1),
    )
    with pytest.raises(UnknownKind, match="persona_shift"):
        await app.governance.vote(pid, APPROVER, True, now=now)
    assert await app.db.pool.fetchval("SELECT count(*) FROM proposal_votes") == 0
    with pytest.raises(GovernanceError):
        await app.governance.propose("persona_shift", "t", {}, "r", {}, centroid=None, now=now)
    applied = []

    async def apply(conn, row, approvers):
        applied.append((row["id"], approvers))

    app.governance.register_kind("persona_shift", apply)
    assert (await app.governance.vote(pid, APPROVER, True, now=now)).proposal.status == "applied"
    assert applied == [(pid, "mod")]


async def test_a_proposal_records_its_sources_and_forgetting_one_redacts_its_words(app: App) -> None:
    now = datetime.now(UTC)
    from memory.conversation import NewMessage

    said = [
        await app.conversations.add(NewMessage("g1", "console", f"x{i}", "c1", "u1", "ana", text, now))
        for i, text in enumerate(["which tea is best?", "green or black?"])
    ]
    p = await app.governance.propose(
        "new_archetype",
        "t",
        PAYLOAD,
        "r",
        {"messages": [{"message_id": m.id} for m in said]},
        centroid=None,
        now=now,
        scope="g1",
        sources=[(said[0].id, "which tea is best?")],
    )
    cited = await app.db.pool.fetch("SELECT message_id, example FROM proposal_sources WHERE proposal_id = $1", p.id)
    assert {(r["message_id"], r["example"]) for r in cited} == {
        (said[0].id, "which tea is best?"),
        (said[1].id, "green or black?"),
    }, "quoted: cited too"
    await app.db.pool.execute("DELETE FROM messages WHERE id = $1", said[1].id)
    after = await app.governance.get(p.id)
    assert "green or black?" not in after.payload["examples"] and len(after.evidence["messages"]) == 1


# --- decay by elapsed time --------------------------------------------------------------------------


def test_imported_salience_comes_from_the_message() -> None:
    for trivia in ("ok", "lol", "thanks!", "good morning", "haha same"):
        assert imported_salience(trivia, 1.0) < TRIVIA, trivia
    for substantive in (DENTIST, "I'm training for the Berlin marathon in April", "my train was late again"):
        assert imported_salience(substantive, 0.3) >= TRIVIA, substantive
    assert imported_salience(DENTIST, 0.3) > imported_salience("I had pizza for lunch", 0.3)
    assert imported_salience("the meeting moved to 5pm", 0.0) < imported_salience("the meeting moved to 5pm", 0.8)
    v = np.eye(3, dtype=np.float32)[[0, 0, 1]]
    assert batch_novelty(v).round(3).tolist() == [0.0, 0.0, 1.0]


@pytest.mark.slow
async def test_two_months_imported_and_dreamt_twice_keep_the_history_and_the_old_fact(app: App, tmp_path: Path) -> None:
    path, kinds = two_months_of_history(tmp_path / "history.jsonl")
    await app.importer.run(path, "g1")
    pool = app.db.pool
    before = await pool.fetchval("SELECT count(*) FROM episodes")
    first = await app.dream.run(NOW)
    assert first.status == "ok", first.render()

    async def snapshot() -> list[tuple]:
        return [
            tuple(r)
            for r in await pool.fetch(
                "SELECT id, salience, replay_count, last_reinforced_at, merged_count FROM episodes ORDER BY id"
            )
        ]

    settled = await snapshot()
    second = await app.dream.run(NOW + timedelta(hours=1))
    assert await snapshot() == settled, "a second run the same night changes nothing"
    assert second.steps["episodic_decay"].counts == {"forgotten": 0, "consolidated": 0, "merged": 0}
    assert second.steps["episodic_replay"].counts["replayed"] == 0
    assert len(settled) >= 0.95 * before, (len(settled), before)
    left = {r["content"].partition(": ")[2] for r in await pool.fetch("SELECT content FROM episodes")}
    assert set(kinds["substantive"]) <= left, "no substantive message was forgotten or merged away"
    bundle = await app.brain.context("who is my dentist?", "g1")
    assert any(DENTIST in item.text for item in bundle.items() if item.kind == "episode")


@pytest.mark.slow
async def test_a_month_later_unreinforced_trivia_fades_and_substance_stays(app: App, tmp_path: Path) -> None:
    path, kinds = two_months_of_history(tmp_path / "history.jsonl")
    await app.importer.run(path, "g1")
    await app.dream.run(NOW)
    pool = app.db.pool
    trivia_before = await pool.fetchval("SELECT count(*) FROM episodes WHERE salience < $1", TRIVIA)
    later = await app.dream.run(NOW + timedelta(days=30))
    assert later.steps["episodic_decay"].counts["forgotten"] > 0
    left = [r["content"].partition(": ")[2] for r in await pool.fetch("SELECT content FROM episodes")]
    assert sum(t in ("ok", "lol", "haha") for t in left) < sum(t in ("ok", "lol", "haha") for t in kinds["trivia"])
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE salience < $1", TRIVIA) < trivia_before
    # Substance stays: as an episode, or (issue 30.1) as facts that say it, its episode let go 14 days after
    # consolidation marked it.
    held = {
        r["content"]
        for r in await pool.fetch(
            "SELECT DISTINCT m.content FROM messages m JOIN kg_edge_sources s ON s.message_id = m.id"
        )
    }
    gone = set(kinds["substantive"]) - set(left)
    assert gone <= held, sorted(gone - held)[:5]
    assert len(gone) < len(set(kinds["substantive"])) / 2, "most substantive episodes stay"


async def test_a_proposal_made_in_a_callers_transaction_is_undone_with_it(app: App) -> None:
    """Layers propose through governance with their own connection (memory.proposer.Proposer): the proposal
    and its sources are stored, or not, with what the layer writes beside it."""
    now = datetime.now(UTC)
    from memory.conversation import NewMessage

    said = await app.conversations.add(NewMessage("g1", "console", "x0", "c1", "u1", "ana", "tea is best", now))

    class Undo(Exception):
        pass

    with pytest.raises(Undo):
        async with app.db.pool.acquire() as conn, conn.transaction():
            p = await app.governance.propose(
                "persona",
                "t",
                {},
                "r",
                {},
                centroid=None,
                now=now,
                scope="g1",
                sources=[(said.id, "tea is best")],
                conn=conn,
            )
            assert await conn.fetchval("SELECT count(*) FROM proposal_sources WHERE proposal_id = $1", p.id) == 1
            raise Undo
    assert await app.db.pool.fetchval("SELECT count(*) FROM proposals") == 0
    assert await app.db.pool.fetchval("SELECT count(*) FROM proposal_sources") == 0
