"""The weights layer: the replay mix, adapter proposals, approval, rollback, rejection and taint by forgetting.

These run the real database and governance with a stand-in trainer (writing an adapter directory takes a
real training run: tests/test_distill.py does that on the bundled model)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.app import App
from bot.brain import IncomingTurn
from dream.governance import Voter
from memory.layers.weights import (
    Cloze,
    DistillOutcome,
    DistillPolicy,
    TrainingText,
    WeightsLayer,
    AdapterError,
    cloze_of,
)
from tests.conftest import layer_of
from tests.fakes import ScriptedLLM

OWNER = Voter("owner", "owner", can_manage_server=True)
SECRET = "the vault code is 4471"


class StandInTrainer:
    """Writes an adapter directory and returns the numbers it is told to; remembers what it was given."""

    base_model = "stand-in"

    def __init__(self) -> None:
        self.calls: list[tuple[list[TrainingText], list[Cloze], Path | None]] = []
        self.passes = True

    def distill(
        self, texts: Sequence[TrainingText], questions: Sequence[Cloze], current: Path | None, out_dir: Path
    ) -> DistillOutcome:
        self.calls.append((list(texts), list(questions), current))
        out_dir.mkdir(parents=True)
        (out_dir / "adapter.gguf").write_bytes(b"stand-in")
        em = 0.5 if self.passes else 0.0
        metrics = {
            "em_current": 0.0,
            "em_candidate": em,
            "delta_em": em,
            "ppl_base": 30.0,
            "ppl_candidate": 30.3,
            "ppl_ratio": 1.01,
            "steps": 3,
            "train_s": 1.0,
            "texts": len(texts),
            "questions": len(questions),
        }
        return DistillOutcome(out_dir, metrics, self.passes, "EM 0.00 -> 0.50" if self.passes else "EM flat")


def turn(
    text: str, *, author: str = "ana", scope: str = "g1", channel: str = "c1", private: bool = False
) -> IncomingTurn:
    return IncomingTurn(
        scope=scope,
        source="console",
        channel_id=channel,
        author_id=f"u-{author}",
        author_name=author,
        text=text,
        visible_in=channel if private else None,
    )


async def say(app: App, *turns: IncomingTurn) -> None:
    for t in turns:
        await (await app.brain.respond(t)).complete()
    await app.brain.writer.drain()


def stand_in(layer: WeightsLayer) -> StandInTrainer:
    """The layer's trainer, the stand-in ``weights_of`` gave it."""
    assert isinstance(layer.trainer, StandInTrainer)
    return layer.trainer


def weights_of(app: App) -> WeightsLayer:
    layer = app.brain.layer("weights")
    assert isinstance(layer, WeightsLayer)
    layer.trainer = StandInTrainer()
    layer.enabled = True
    layer.policy = DistillPolicy(min_new_messages=2, min_questions=1)
    return layer


async def history(app: App) -> None:
    await say(
        app,
        turn("My sister lives in Lisbon and she loves the trams there"),
        turn("I work at Brightwave as a designer", author="ben"),
        turn("My dog is named Pepper, he is a beagle", author="chloe"),
        turn(f"Between us: {SECRET}", author="dev", channel="c-priv", private=True),
        turn("I live in Oslo", author="emil", scope="g2"),
    )


async def step(layer: WeightsLayer, now: datetime, scope: str | None = "g1") -> int | None:
    """One distillation step; the proposal it made, if any."""
    result = await layer.distill_step(now, scope)
    ids = [int(n.split("#")[1].split()[0]) for n in result.notes if "adapter proposal #" in n]
    return ids[0] if ids else None


def test_a_fact_becomes_a_cloze_question() -> None:
    assert cloze_of("ana's sister live in Lisbon", "live_in", "lisbon") == ("ana's sister live in", "Lisbon")
    assert cloze_of("ben work at Brightwave", "work_at", "brightwave") == ("ben work at", "Brightwave")
    assert cloze_of("ana not like olives", "not_like", "olives") is None, "a negation makes a poor question"
    assert cloze_of("ana like me", "like", "bot") is None


async def test_the_mix_is_the_scopes_public_memory_only(app: App) -> None:
    layer = weights_of(app)
    await history(app)
    texts, questions = await layer.replay_mix("g1", datetime.now(UTC))
    kinds = {t.kind for t in texts}
    assert kinds == {"episode", "fact", "turn"}
    everything = "\n".join(t.text for t in texts) + "\n".join(q.prompt + q.answer for q in questions)
    assert SECRET not in everything and "4471" not in everything, "a restricted channel never trains an adapter"
    assert "Oslo" not in everything, "another scope never trains this one's adapter"
    assert "Lisbon" in {q.answer for q in questions}
    ids = {i for t in texts for i in t.message_ids}
    scopes = {r["scope"] for r in await app.db.pool.fetch("SELECT scope FROM messages WHERE id = ANY($1)", list(ids))}
    assert scopes == {"g1"}


async def test_approval_makes_it_the_scopes_adapter_and_rollback_returns_to_the_last(
    app: App, llm: ScriptedLLM
) -> None:
    layer = weights_of(app)
    await history(app)
    now = datetime.now(UTC)
    first = await step(layer, now)
    assert first is not None
    assert (await app.governance.get(first)).kind == "adapter"
    bundle = await app.brain.context("hello", "g1")
    assert bundle.adapter is None, "a proposal is not in use until approved"

    await app.governance.vote(first, OWNER, True, now=now)
    adapter_one = (await app.brain.context("hello", "g1")).adapter
    assert adapter_one is not None and adapter_one.path.exists()
    await say(app, turn("what is new?"))
    assert llm.adapters[-1] == adapter_one, "the engine is asked to run this scope's adapter"
    await say(app, turn("hello from elsewhere", author="emil", scope="g2"))
    assert llm.adapters[-1] is None, "another scope's replies never use it"

    assert await step(layer, now + timedelta(hours=1)) is None, "too few new messages since the last candidate"
    await say(app, turn("Our book club meets on Thursdays", author="ben"), turn("I started learning the cello"))
    second = await step(layer, now + timedelta(days=1))
    assert second is not None
    assert stand_in(layer).calls[-1][2] == adapter_one.path, "the candidate is measured against the adapter in use"
    await app.governance.vote(second, OWNER, True, now=now + timedelta(days=1))
    adapter_two = (await app.brain.context("hello", "g1")).adapter
    assert adapter_two.id != adapter_one.id and adapter_one.path.exists(), "the replaced one is kept for rollback"

    gone, back = await layer.rollback("g1")
    assert (gone, back) == (adapter_two.id, adapter_one.id)
    assert (await app.brain.context("hello", "g1")).adapter == adapter_one
    assert not adapter_two.path.exists()
    gone, back = await layer.rollback("g1")
    assert back is None and (await app.brain.context("hello", "g1")).adapter is None
    with pytest.raises(AdapterError):
        await layer.rollback("g1")
    assert "no adapter (the base model)" in await layer.report("g1")


async def test_rejection_and_a_failed_evaluation_delete_the_candidate(app: App) -> None:
    layer = weights_of(app)
    await history(app)
    now = datetime.now(UTC)
    proposal = await step(layer, now)
    assert proposal is not None
    path = Path((await app.db.pool.fetchval("SELECT path FROM adapters WHERE proposal_id = $1", proposal)))
    assert path.exists()
    await app.governance.vote(proposal, OWNER, False, now=now)
    assert not path.exists()
    assert await app.db.pool.fetchval("SELECT status FROM adapters WHERE proposal_id = $1", proposal) == "rejected"

    await say(app, turn("I moved to Porto last week"), turn("Pepper learned a new trick", author="chloe"))
    stand_in(layer).passes = False
    result = await layer.distill_step(now + timedelta(days=1), "g1")
    assert result.counts["failed"] == 1 and result.counts["proposed"] == 0
    row = await app.db.pool.fetchrow("SELECT * FROM adapters ORDER BY id DESC LIMIT 1")
    assert row["status"] == "failed" and not Path(row["path"]).exists() and row["proposal_id"] is None
    assert json.loads(row["metrics"]) if isinstance(row["metrics"], str) else row["metrics"]


async def test_an_expired_proposal_deletes_its_candidate(app: App) -> None:
    layer = weights_of(app)
    await history(app)
    now = datetime.now(UTC)
    proposal = await step(layer, now)
    assert proposal is not None
    path = Path(await app.db.pool.fetchval("SELECT path FROM adapters WHERE proposal_id = $1", proposal))
    assert await app.governance.expire(now + timedelta(days=30)) == 1
    assert not path.exists()


async def test_a_candidate_whose_proposal_was_decided_without_its_handler_is_swept(app: App) -> None:
    layer = weights_of(app)
    await history(app)
    now = datetime.now(UTC)
    proposal = await step(layer, now)
    assert proposal is not None
    path = Path(await app.db.pool.fetchval("SELECT path FROM adapters WHERE proposal_id = $1", proposal))
    # as an older process that expired it without running the weights layer's rejection handler left it
    await app.db.pool.execute("UPDATE proposals SET status = 'expired' WHERE id = $1", proposal)
    assert path.exists()
    assert await layer.sweep() == 1
    assert not path.exists()
    assert await app.db.pool.fetchval("SELECT status FROM adapters WHERE proposal_id = $1", proposal) == "rejected"


async def test_forgetting_a_source_of_a_pending_candidate_withdraws_its_proposal(app: App) -> None:
    layer = weights_of(app)
    await history(app)
    proposal = await step(layer, datetime.now(UTC))
    assert proposal is not None
    await app.provenance.forget_author("g1", "u-ben")
    withdrawn = await app.governance.get(proposal)
    assert withdrawn.status == "expired"
    assert withdrawn.decided_by == "(its adapter was trained on a forgotten message)"


async def test_forgetting_a_person_taints_every_adapter_trained_on_their_words(app: App, llm: ScriptedLLM) -> None:
    layer = weights_of(app)
    await history(app)
    now = datetime.now(UTC)
    proposal = await step(layer, now)
    assert proposal is not None
    await app.governance.vote(proposal, OWNER, True, now=now)
    adapter = (await app.brain.context("hello", "g1")).adapter
    assert adapter is not None

    report = await app.provenance.forget_author("g2", "u-emil")
    assert report.counts.get("adapters_tainted", 0) == 0, "another scope's person never trained it"
    assert (await app.brain.context("hello", "g1")).adapter == adapter

    report = await app.provenance.forget_author("g1", "u-ben")
    assert report.counts["adapters_tainted"] == 1
    assert not adapter.path.exists(), "its weights carry the forgotten words: deleted"
    assert (await app.brain.context("hello", "g1")).adapter is None
    await say(app, turn("still there?"))
    assert llm.adapters[-1] is None, "the next reply already runs without it"
    row = await app.db.pool.fetchrow("SELECT status, note FROM adapters WHERE id = $1", adapter.id)
    assert row["status"] == "tainted"
    with pytest.raises(AdapterError):
        await layer.rollback("g1")

    await say(app, turn("I bake bread on Sundays"), turn("The trams in Lisbon are yellow"))
    await step(layer, now + timedelta(days=1))
    texts, _, current = stand_in(layer).calls[-1]
    assert current is None
    assert not any("Brightwave" in t.text for t in texts), "the next distillation trains without them"


async def test_a_candidate_whose_sources_were_forgotten_while_it_trained_is_never_proposed(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    layer = weights_of(app)
    await history(app)
    trainer = stand_in(layer)
    original = trainer.distill

    def forgetful(texts, questions, current, out_dir):
        outcome = original(texts, questions, current, out_dir)
        import asyncio

        asyncio.run_coroutine_threadsafe(app.provenance.forget_author("g1", "u-chloe"), loop).result()
        return outcome

    import asyncio

    loop = asyncio.get_running_loop()
    monkeypatch.setattr(trainer, "distill", forgetful)
    assert await step(layer, datetime.now(UTC)) is None
    row = await app.db.pool.fetchrow("SELECT status, path FROM adapters")
    assert row["status"] == "tainted" and not Path(row["path"]).exists()


async def test_the_dream_runs_distillation_only_when_enabled(app: App) -> None:
    from dream.steps import build_steps

    layer = layer_of(app, "weights", WeightsLayer)
    assert "adapter_distillation" not in [name for name, _ in build_steps(app.layers)], "off by default"
    layer.enabled, layer.trainer = True, StandInTrainer()
    assert "adapter_distillation" in [name for name, _ in build_steps(app.layers)]
