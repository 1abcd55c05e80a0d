"""The persona layer (issue 10, seed 002): opinions that move on evidence and not on pressure, belief decay in
the dream, large shifts only after approval, forgetting that recomputes, per-audience states."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import asyncpg
import pytest

from bot.app import App
from bot.brain import IncomingTurn
from dream.governance import Voter
from memory.embed import MiniLMEmbedder
from memory.layers.persona import PersonaLayer
from memory.persona.evidence import ARGUMENT_FLOOR, PROBE_WEIGHT, STANCE_WEIGHT, parse_ess
from memory.persona.state import (
    COOLING_PERIOD,
    EMPIRICAL,
    SOCIAL,
    Belief,
    Evidence,
    PersonaState,
    Staged,
    TopicStance,
    apply_due,
    apply_evidence,
    confidence,
    decay,
    magnitude,
)
from tests.fakes import ScriptedLLM

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
MOD = Voter("u-mod", "mod", can_manage_server=True)
STRONG_FOR = [
    "According to a 2021 Stanford study of 16,000 workers, remote work raised productivity by 13%.",
    "A 2023 survey of 30,000 employees across 27 countries found remote work improved output by 9 percent.",
    "Data from 500 firms published in a peer-reviewed journal show remote work cut turnover by 35%.",
]
AGAINST = [
    "A 2022 study of 8,000 zebrafinch breeders published in Nature found remote work reduced innovation by 20%.",
    "According to data from 1,200 firms, remote work lowered promotions by 30 percent in 2023.",
    "A 2024 meta-analysis of 40 studies found remote work harms mentoring, with 25% fewer contacts.",
]
FILLER = [
    "ok, thanks for listening to all that.",
    "what time is it where you are?",
    "tell me a joke please",
    "good morning everyone!",
    "I'll be back later tonight.",
]


def turn(
    text: str, *, scope: str = "g1", author: str = "ana", channel: str = "c1", visible_in: str | None = None
) -> IncomingTurn:
    return IncomingTurn(
        scope=scope,
        source="console",
        channel_id=channel,
        author_id=f"u-{author}",
        author_name=author,
        text=text,
        visible_in=visible_in,
    )


async def persona_app(app: App) -> PersonaLayer:
    layer = app.brain.layer("persona")
    assert isinstance(layer, PersonaLayer)  # registered by App.open (settings.persona_enabled)
    app.brain.recall.timeout = 60.0  # what is recalled is under test here, not how fast (a busy CI machine)
    return layer


async def current_state(
    layer: PersonaLayer, scope: str, visible_in: str | None, *, conn: asyncpg.Connection | None = None
) -> PersonaState:
    """The current persona state of ``scope`` for the audience ``visible_in`` (None: the public one); the test
    has made one, so there is one."""
    version = await layer.store.current(scope, visible_in, conn=conn)
    assert version is not None, f"no persona state for {scope} ({visible_in or 'public'})"
    return version.state


async def say(app: App, *texts: str, **kw: str) -> None:
    for text in texts:
        reply = await app.brain.respond(turn(text, **kw))
        await reply.complete()
        await app.brain.drain()


class DigestChannel:
    def __init__(self) -> None:
        self.digests: list[str] = []

    async def post_proposal(self, proposal: object) -> str | None:
        return None

    async def post_digest(self, text: str, chart: object) -> None:
        self.digests.append(text)


# --- the rules, without a database ------------------------------------------------------------------------


def ev(i: int, score: float, rtype: str, direction: int, novelty: float = 1.0, topic: str = "t") -> Evidence:
    return Evidence(i, score, rtype, novelty, (TopicStance(topic, direction),))


def test_updates_wait_for_the_cooling_period_then_commit_netted() -> None:
    s = PersonaState(interaction_count=20)
    apply_evidence(s, ev(1, 0.9, EMPIRICAL, +1))
    apply_evidence(s, ev(2, 0.9, EMPIRICAL, -1))
    assert "t" not in s.beliefs and len(s.staged) == 2  # staged, not committed
    for i in range(COOLING_PERIOD):
        apply_evidence(s, ev(10 + i, 0.0, SOCIAL, 0))
    assert not s.staged and abs(s.beliefs["t"].position) < 0.01  # each committed once due
    due_together = PersonaState(
        interaction_count=30,
        staged=[Staged("u", 0.09, 30, 1), Staged("u", -0.09, 30, 2), Staged("v", 0.2, 30, 3), Staged("v", 0.2, 30, 4)],
    )
    apply_due(due_together)
    assert "u" not in due_together.beliefs  # opposing deltas due together net to nothing
    assert due_together.beliefs["v"].position == pytest.approx(0.25)  # at most 0.25 committed at once


def test_the_seeds_magnitudes_thresholds_and_caps() -> None:
    assert magnitude(ev(1, 0.24, EMPIRICAL, 1), 50) == 0.0  # below 0.25 nothing moves
    assert magnitude(ev(1, 0.9, EMPIRICAL, 1), 50) == pytest.approx(0.09)
    assert magnitude(ev(1, 0.9, EMPIRICAL, 1), 3) == pytest.approx(0.045)  # halved while bootstrapping
    assert magnitude(ev(1, 0.9, EMPIRICAL, 1, novelty=0.0), 50) == pytest.approx(0.009)  # novelty floor 0.1
    assert magnitude(ev(1, 1.0, SOCIAL, 1), 50) == pytest.approx(0.02)  # the social-pressure cap
    assert confidence(1) == pytest.approx(0.2314, abs=1e-3) and confidence(19) == 1.0


def test_a_direction_read_with_little_certainty_takes_a_smaller_step() -> None:
    """The scorer's certainty of a direction (the stance model's total over 6, at most 1) scales the step; the
    seed's magnitude and caps are unchanged."""
    sure, unsure = PersonaState(interaction_count=20), PersonaState(interaction_count=20)
    apply_evidence(sure, Evidence(1, 0.9, EMPIRICAL, 1.0, (TopicStance("t", 1),)))
    apply_evidence(unsure, Evidence(1, 0.9, EMPIRICAL, 1.0, (TopicStance("t", 1, 0.25),)))
    assert sure.staged[0].delta == pytest.approx(0.09) and unsure.staged[0].delta == pytest.approx(0.0225)


def test_a_flip_of_an_established_opinion_is_held_not_committed() -> None:
    s = PersonaState(interaction_count=50, beliefs={"t": Belief(0.12, 0.5, 5, 50, [])})
    for i in range(3):
        apply_evidence(s, ev(i, 1.0, EMPIRICAL, -1))
    for i in range(COOLING_PERIOD):
        apply_evidence(s, ev(10 + i, 0.0, SOCIAL, 0))
    assert 0 < s.beliefs["t"].position < 0.12  # moved towards the evidence, never across zero
    assert s.held and all(h.after < 0 for h in s.held)


def test_decay_is_a_power_law_of_the_gap_with_a_floor_and_drops_the_faint() -> None:
    s = PersonaState(
        interaction_count=1000,
        beliefs={
            "fresh": Belief(0.5, confidence(3), 3, 998, []),
            "old": Belief(0.5, confidence(3), 3, 0, []),
            "faint": Belief(0.3, confidence(1), 1, 0, []),
        },
    )
    s.interaction_count = 100_000
    s.beliefs["fresh"].last_reinforced = 99_998
    dropped = decay(s)
    assert s.beliefs["fresh"].confidence == pytest.approx(confidence(3))  # gap under 5: untouched
    assert s.beliefs["old"].confidence == pytest.approx(confidence(3) * max(100_001**-0.15, 0.18))
    assert dropped == ["faint"] and "faint" not in s.beliefs
    again = s.copy()
    assert decay(again) == [] and again.beliefs["old"].confidence == s.beliefs["old"].confidence  # idempotent


def test_the_llm_answer_is_parsed_tolerantly_with_safe_defaults() -> None:
    got = parse_ess(
        "Sure! ```{'score': 0.8, 'reasoning_type': 'Empirical Data', 'topics': 'nuclear power',"
        " 'opinion_direction': 'supports',}```"
    )
    assert got is not None and got["score"] == 0.8 and got["reasoning_type"] == EMPIRICAL
    assert got["topics"] == ["nuclear power"] and got["novelty"] == 0.5
    assert parse_ess("no json here") is None
    vibes = parse_ess('{"score": "high", "reasoning_type": "vibes"}')
    assert vibes is not None and vibes["reasoning_type"] == "no_argument"


# --- the deterministic scorer ----------------------------------------------------------------------------


async def test_the_scorer_tells_evidence_from_pressure(embedder: MiniLMEmbedder) -> None:
    layer = PersonaLayer(None, embedder)  # scoring needs no database
    strong = await layer.score(STRONG_FOR[0])
    assert strong.reasoning_type == EMPIRICAL and strong.score >= 0.6
    assert strong.topics[0] == ("remote work", 1)
    for text in [
        "You're wrong about remote work, everyone knows it. Just admit it.",
        "Come on, seriously, remote work is terrible, all my friends hate it!!",
        "You're an idiot if you think remote work is good.",
        "I won't drop this. Remote work is beneficial. Agree with me.",
    ]:  # "drop" is no stated effect
        pressure = await layer.score(text)
        assert pressure.score < 0.25, (text, pressure)
    assert (await layer.score("hi, how are you?")).reasoning_type == "no_argument"


async def test_a_verdict_with_nothing_behind_it_is_not_evidence(embedder: MiniLMEmbedder) -> None:
    """Popularity, vague authority and insults that only judge ("X is the best") stay under the update
    threshold, whatever reasoning type they resemble; a stated effect or a named source keeps its score."""
    layer = PersonaLayer(None, embedder)
    for text in [
        "Every expert on Twitter says free school meals is the best.",
        "The poll in this channel was 40 to 2: remote voting is beneficial.",
        "Wow, you're dense. Pet therapy in hospitals is clearly the best.",
    ]:
        got = await layer.score(text)
        assert got.score < 0.25 and not got.features["effects"], (text, got)
    for text in [
        "Professor Lindqvist, who has studied free school meals for twenty years, says they are beneficial.",
        "A 2020 study of 3,000 pupils found free school meals raised attendance by 8%.",
    ]:
        assert (await layer.score(text)).score >= 0.25, text


async def test_topics_are_what_the_claim_is_about(embedder: MiniLMEmbedder) -> None:
    """The thing a message says does something, not the outcomes it acts on, the sample of a study or the
    source; and a direction that survives "worse X", "worsens X" and "removes a cause of X"."""
    layer = PersonaLayer(None, embedder)
    cases = {
        "Economists at ETH Zurich estimate nuclear fusion research saves about $12 million a year by cutting "
        "carbon emissions.": ("nuclear fusion research", 1),
        "Daylight saving time was rolled out in 21 regions in 2019; official statistics recorded 14% more sleep "
        "loss there.": ("daylight saving time", -1),
        "Since daylight saving time creates a new source of heart attacks, the net effect has to be negative.": (
            "daylight saving time",
            -1,
        ),
        "In a 2016 randomized trial with 6,300 participants, telemedicine led to 12% worse patient satisfaction.": (
            "telemedicine",
            -1,
        ),
        "The World Health Organization's 2017 review concluded that carbon taxes worsen air quality.": (
            "carbon taxes",
            -1,
        ),
        "Since e-scooter schemes remove a major cause of injuries, the 2019 pilot saw injuries drop by 12%.": (
            "e-scooter schemes",
            1,
        ),
        "Economists at Oxford estimate remote voting costs about $10 million a year through extra fraud.": (
            "remote voting",
            -1,
        ),
    }
    for text, want in cases.items():
        got = await layer.score(text)
        assert got.topics[0] == want, (text, got.topics)
        assert all(t != "regions" and t != "official statistics" for t, _ in got.topics)


async def test_a_reasoned_argument_counts_and_its_conclusion_sets_the_direction(embedder: MiniLMEmbedder) -> None:
    """An argument with no figures and no authority: a casual connective ("..., so X falls") makes it one; a
    clause about a world without the thing counts reversed; the conclusion (or what a "but" sets
    against the rest) outweighs the premises; "made X worse" is judged by the comparative; a link stops at a
    comma ("with crime down, trust can grow"); and an outcome no stance word names
    ("homelessness") takes the polarity of the stance words nearest it."""
    layer = PersonaLayer(None, embedder)
    cases = {
        "Think it through. Community gardens remove one of the main drivers of loneliness, so unless something "
        "replaces that, loneliness has to come down. And with loneliness down, wellbeing has room to grow.": (
            "community gardens",
            1,
        ),
        "Towns without community gardens saw food costs keep climbing over the same years, so the drop where "
        "the gardens opened is no background trend.": ("community gardens", 1),
        "Follow the money: paying for community gardens pulls budget away from what actually produces public "
        "health, so public health declines.": ("community gardens", -1),
        "Community gardens cost less than the damage they prevent, so on net the town comes out ahead.": (
            "community gardens",
            1,
        ),
        "An audit from 2019: community gardens were supposed to cut food waste, but food waste actually climbed "
        "20 percent across the towns sampled.": ("community gardens", -1),
        "An evaluation across 12 towns found community gardens made social cohesion worse by about 15%.": (
            "community gardens",
            -1,
        ),
    }
    for text, (topic, sign) in cases.items():
        got = await layer.score(text)
        parts = got.features["direction"][topic]
        assert got.score >= 0.25 and parts["lexicon"] * sign > 0, (text, got.score, parts)  # the lexicon's rules
        if text.startswith("Towns without"):
            # A known miss: the plain stance model reads it against X (about -5), the one that reads outcomes
            # replaced about -0.6, and their mean outweighs the lexicon's +1. The reading is unsure, so the step
            # it takes is under half a sure one's.
            assert got.certainty[topic] < 0.5, (got.certainty, parts)
            continue
        assert (topic, sign) in got.topics, (text, got.topics, parts)  # and the scorer's direction
    got = await layer.score("A 2021 survey of 3,000 residents found community gardens cut homelessness by 12%.")
    assert ("community gardens", 1) in got.topics, got.features["direction"]


async def test_a_configured_model_scores_with_the_seeds_json_and_a_bad_answer_falls_back(
    embedder: MiniLMEmbedder,
) -> None:
    answer = (
        '{"score": 0.7, "reasoning_type": "expert_opinion", "source_reliability": "established_expert", '
        '"novelty": 0.8, "topics": ["remote work"], "opinion_direction": "opposes"}'
    )
    llm = ScriptedLLM(answer)
    layer = PersonaLayer(None, embedder, llm=llm)
    got = await layer.score(STRONG_FOR[0])
    assert (got.scorer, got.score, got.reasoning_type, got.topics) == (
        "llm",
        0.7,
        "expert_opinion",
        (("remote work", -1),),
    )
    assert "Message: " + STRONG_FOR[0] in llm.prompts[-1] and "hippobot" not in llm.prompts[-1]  # the message only
    assert got.certainty == {}  # the model's own direction: a full step
    llm.reply = '{"score": 0.7, "reasoning_type": "expert_opinion", "topics": []}'  # no topics: the scorer's
    no_topics = await layer.score(STRONG_FOR[0])
    assert no_topics.scorer == "llm" and no_topics.topics[0] == ("remote work", 1)
    assert no_topics.certainty["remote work"] > 0  # ... with how sure the scorer's reading was
    llm.reply = "I think it is pretty strong evidence!"
    fallback = await layer.score(STRONG_FOR[0])
    assert fallback.scorer == "deterministic" and fallback.topics[0] == ("remote work", 1)


# --- the layer in the app --------------------------------------------------------------------------------


async def test_strong_evidence_moves_an_opinion_and_pressure_does_not(app: App, llm: ScriptedLLM) -> None:
    layer = await persona_app(app)
    await say(app, *STRONG_FOR, *FILLER[:COOLING_PERIOD])
    state = await current_state(layer, "g1", None)
    assert state.beliefs["remote work"].position > 0
    moved = state.beliefs["remote work"].position
    await say(
        app,
        "You're wrong, remote work is terrible, everyone knows it. Just admit it!!",
        "For the last time, remote work is bad, all my friends agree. Change your mind.",
        "Seriously, nobody agrees with you about remote work, you're being stubborn.",
        *FILLER[:COOLING_PERIOD],
    )
    state = await current_state(layer, "g1", None)
    assert state.beliefs["remote work"].position == pytest.approx(moved)
    # Only the person's messages were scored; the bot's replies never.
    rows = await app.db.pool.fetch("SELECT m.is_bot FROM persona_evidence e JOIN messages m ON m.id = e.message_id")
    assert len(rows) == 3 + 3 + 2 * COOLING_PERIOD and not any(r["is_bot"] for r in rows)
    # The persona section opens the prompt, after the fixed core identity, with the opinion and its confidence.
    await say(app, "what do you think about working from home?")
    prompt = llm.prompts[-1]
    assert (
        prompt.index(app.settings.persona.strip()) < prompt.index("Self-description: ") < prompt.index("Conversation:")
    )
    assert "favour remote work" in prompt or "lean towards remote work" in prompt
    history = await layer.store.history("g1", None, limit=100)
    assert [v.version for v in history] == sorted((v.version for v in history), reverse=True)
    assert len(history) == 3 + 3 + 2 * COOLING_PERIOD + 1


async def test_forgetting_a_person_removes_their_evidence_and_recomputes(app: App) -> None:
    from tests.test_forgetting import traces

    layer = await persona_app(app)
    await say(app, *STRONG_FOR, author="zed")
    await say(app, *FILLER[:COOLING_PERIOD], author="ana")
    assert "remote work" in (await current_state(layer, "g1", None)).beliefs
    report = await app.provenance.forget_author("g1", "u-zed")
    assert report.counts.get("persona_evidence") == 3
    state = await current_state(layer, "g1", None)
    assert "remote work" not in state.beliefs and "remote work" not in state.engagement
    assert state.interaction_count == COOLING_PERIOD
    assert await traces(app, "remote work") == {}  # the topic only her words named is gone from every table
    assert await traces(app, "u-zed") == {}


async def test_forgetting_public_evidence_also_recomputes_the_restricted_personas_that_started_from_it(
    app: App,
) -> None:
    layer = await persona_app(app)
    await say(app, *STRONG_FOR, author="zed")
    await say(app, *FILLER[:COOLING_PERIOD], author="ana")
    await say(app, "ok, the mods channel is quiet today", author="mo", channel="mods", visible_in="mods")
    inside = await current_state(layer, "g1", "mods")
    assert "remote work" in inside.beliefs or "remote work" in inside.engagement  # a copy of the public one
    await app.provenance.forget_author("g1", "u-zed")
    for audience in (None, "mods"):
        state = await current_state(layer, "g1", audience)
        assert "remote work" not in state.beliefs and "remote work" not in state.engagement, audience
    from tests.test_forgetting import traces

    assert await traces(app, "remote work") == {}


async def test_forgetting_the_evidence_of_a_pending_shift_withdraws_its_proposal(app: App) -> None:
    from tests.test_forgetting import traces

    layer = await persona_app(app)
    async with app.db.pool.acquire() as conn, conn.transaction():
        await layer.store.lock(conn, "g1", None)
        await layer.store.write(
            conn,
            "g1",
            None,
            PersonaState(
                interaction_count=30,
                last_reflection_at=30,
                beliefs={"remote work": Belief(0.12, confidence(4), 4, 30, [])},
            ),
            "test: a settled view",
            NOW,
        )
    await say(app, *AGAINST, author="zed")
    await say(app, *FILLER[:COOLING_PERIOD], author="ana")
    [proposal] = await app.governance.list(scope="g1")
    assert proposal.kind == "persona" and await traces(app, "zebrafinch")
    await app.provenance.forget_author("g1", "u-zed")
    withdrawn = await app.governance.get(proposal.id)
    assert withdrawn.status == "expired" and withdrawn.payload["action"] == "withdrawn"
    assert await traces(app, "zebrafinch") == {}
    state = await current_state(layer, "g1", None)
    assert not state.held and state.pending_proposal is None
    assert state.beliefs["remote work"].position == pytest.approx(0.12)  # back to the view before her evidence


async def test_a_restricted_channels_evidence_shapes_only_its_own_persona(app: App, llm: ScriptedLLM) -> None:
    layer = await persona_app(app)
    await say(app, *STRONG_FOR, *FILLER[:COOLING_PERIOD], channel="secret", visible_in="secret")
    assert await layer.store.current("g1", None) is None
    secret = await current_state(layer, "g1", "secret")
    assert secret.beliefs["remote work"].position > 0
    await say(app, "what do you think about working from home?", channel="lobby")
    assert "remote work" not in llm.prompts[-1]
    await say(app, "what do you think about working from home?", channel="secret", visible_in="secret")
    assert "remote work" in llm.prompts[-1]


async def test_belief_decay_runs_in_the_dream_and_the_digest_reports_it(app: App) -> None:
    layer = await persona_app(app)
    await say(app, *STRONG_FOR, *FILLER[:COOLING_PERIOD])
    async with app.db.pool.acquire() as conn, conn.transaction():
        await layer.store.lock(conn, "g1", None)
        state = await current_state(layer, "g1", None, conn=conn)
        state.beliefs["faint idea"] = Belief(0.2, confidence(1), 1, 0, [])
        state.interaction_count = 60_000
        await layer.store.write(conn, "g1", None, state, "test: a long quiet time", NOW)
    channel = DigestChannel()
    app.dream.services.channel = channel
    report = await app.dream.run(NOW, scope="g1")
    step = report.steps["belief_decay"]
    assert step.error is None and step.counts["beliefs_decayed"] == 1 and step.counts["beliefs_dropped"] == 1
    assert re.search(r"^- 1 opinion weakened with time; 1 opinion dropped\b", channel.digests[0], re.M)
    row = await app.db.pool.fetchval("SELECT report FROM dream_runs WHERE id = $1", report.run_id)
    assert row["belief_decay"]["counts"]["beliefs_dropped"] == 1
    state = await current_state(layer, "g1", None)
    assert "faint idea" not in state.beliefs and state.beliefs["remote work"].confidence < confidence(3)


async def test_belief_decay_counts_reflections_under_a_plain_name(app: App) -> None:
    # The dream report printed "reflection{s}=0": the headline's plural template had leaked into a count's name.
    await persona_app(app)
    report = await app.dream.run(NOW, scope="g1")
    assert set(report.steps["belief_decay"].counts) == {"beliefs_decayed", "beliefs_dropped", "reflections"}


async def test_a_large_shift_waits_for_approval_and_is_applied_only_after_it(app: App) -> None:
    layer = await persona_app(app)
    async with app.db.pool.acquire() as conn, conn.transaction():
        await layer.store.lock(conn, "g1", None)
        held = PersonaState(
            interaction_count=30, last_reflection_at=30, beliefs={"remote work": Belief(0.15, confidence(4), 4, 30, [])}
        )
        await layer.store.write(conn, "g1", None, held, "test: a settled view", NOW)
    await say(app, *AGAINST, *FILLER[:COOLING_PERIOD])
    state = await current_state(layer, "g1", None)
    assert 0 < state.beliefs["remote work"].position < 0.15  # moved, not flipped
    assert state.held and state.pending_proposal is not None
    proposal = await app.governance.get(state.pending_proposal)
    assert proposal.kind == "persona" and proposal.status == "pending" and proposal.scope == "g1"
    assert "Before:" in proposal.render() and "After:" in proposal.render()
    assert set(proposal.payload["examples"]) <= set(AGAINST) and proposal.payload["examples"]
    outcome = await app.governance.vote(proposal.id, MOD, True, now=NOW, scope="g1")
    assert outcome.decided and outcome.proposal.status == "applied"
    state = await current_state(layer, "g1", None)
    assert state.beliefs["remote work"].position < 0 and not state.held and state.pending_proposal is None


async def test_a_restricted_channels_shift_is_proposed_without_its_messages_wording_or_topics(app: App) -> None:
    """The dream channel may be read by people outside the restricted channel: its proposal quotes nothing
    from it, yet approving it still applies the shift, and forgetting its evidence still withdraws it."""
    layer = await persona_app(app)
    async with app.db.pool.acquire() as conn, conn.transaction():
        await layer.store.lock(conn, "g1", "secret")
        held = PersonaState(
            interaction_count=30, last_reflection_at=30, beliefs={"remote work": Belief(0.15, confidence(4), 4, 30, [])}
        )
        await layer.store.write(conn, "g1", "secret", held, "test: a settled view", NOW)
    await say(app, *AGAINST, *FILLER[:COOLING_PERIOD], channel="secret", visible_in="secret")
    state = await current_state(layer, "g1", "secret")
    assert state.held and state.pending_proposal is not None
    proposal = await app.governance.get(state.pending_proposal)
    posted = proposal.render()
    for secret in ("zebrafinch", "remote work", "innovation", state.snapshot or "-", *AGAINST):
        assert secret not in posted, secret
    assert "restricted channel" in posted and "examples" not in proposal.payload
    outcome = await app.governance.vote(proposal.id, MOD, True, now=NOW, scope="g1")
    assert outcome.decided and outcome.proposal.status == "applied"
    state = await current_state(layer, "g1", "secret")
    assert state.beliefs["remote work"].position < 0 and not state.held


# --- seeing and steering it ------------------------------------------------------------------------------


async def test_the_cli_shows_the_persona_its_json_and_its_history(
    app: App, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse
    import io
    import json

    from bot.persona_cli import add_parser, run
    from tests.conftest import make_settings

    await persona_app(app)
    await say(app, *STRONG_FOR, *FILLER[:COOLING_PERIOD])
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    settings = make_settings(db_url, tmp_path / "cli", console_scope="g1")
    out = io.StringIO()
    assert await run(settings, parser.parse_args(["persona", "--history"]), out) == 0
    text = out.getvalue()
    assert "Persona of g1, version 6" in text and "remote work" in text and "History:" in text
    assert "Core identity (fixed): " + settings.persona in text
    out = io.StringIO()
    assert await run(settings, parser.parse_args(["persona", "--scope", "g1", "--json"]), out) == 0
    data = json.loads(out.getvalue())
    assert data["version"] == 6 and data["state"]["beliefs"]["remote work"]["position"] > 0
    out = io.StringIO()
    capsys.readouterr()
    assert await run(settings, parser.parse_args(["persona", "--scope", "nobody-here"]), out) == 0
    assert "not shaped by anyone yet" in out.getvalue()
    assert "nothing is stored in scope 'nobody-here' (a typo?)" in capsys.readouterr().err


async def test_the_cli_shows_a_channel_without_its_own_persona_the_scopes(
    app: App, db_url: str, tmp_path: Path
) -> None:
    # `hippobot persona --channel general` said "not shaped by anyone yet (the seed)" while the bot spoke there
    # with the scope's shaped persona (a public channel, or a restricted one nobody shaped, has none of its own).
    import argparse
    import io

    from bot.persona_cli import add_parser, run
    from tests.conftest import make_settings

    await persona_app(app)
    await say(app, *STRONG_FOR, *FILLER[:COOLING_PERIOD])
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    out = io.StringIO()
    settings = make_settings(db_url, tmp_path / "cli", console_scope="g1")
    assert await run(settings, parser.parse_args(["persona", "--channel", "lobby"]), out) == 0
    text = out.getvalue()
    assert "Channel lobby has no persona of its own" in text and "Persona of g1, version 6" in text
    assert "not shaped by anyone yet" not in text


async def test_the_discord_commands_show_for_everyone_and_reset_only_as_an_approved_proposal(app: App) -> None:
    from bot.discord.persona import PersonaCog
    from tests.test_discord_commands import GUILD, cog_args, interaction, member, run_command, said

    layer = await persona_app(app)
    await say(app, *STRONG_FOR, *FILLER[:COOLING_PERIOD], scope=str(GUILD), channel="42")
    cog = PersonaCog(*cog_args(app))
    show = interaction(member(111))
    await run_command(cog, cog.show, show)
    assert "remote work" in said(show) and "Snapshot:" in said(show)
    history = interaction(member(111))
    await run_command(cog, cog.history, history)
    assert said(history).startswith("v6")
    refused = interaction(member(111))
    await run_command(cog, cog.reset, refused)
    assert "needs Manage Server" in said(refused)
    assert not await app.governance.list(scope=str(GUILD))
    asked = interaction(member(222, manage=True))
    await run_command(cog, cog.reset, asked)
    assert "waiting for approval" in said(asked)
    [proposal] = await app.governance.list(scope=str(GUILD))
    assert proposal.kind == "persona" and proposal.payload["action"] == "reset"
    state = await current_state(layer, str(GUILD), None)
    assert state.beliefs and state.epoch == 0  # nothing changed before the approval
    await app.governance.vote(proposal.id, MOD, True, now=NOW, scope=str(GUILD))
    state = await current_state(layer, str(GUILD), None)
    assert not state.beliefs and state.epoch == 1  # approved: a new epoch, the old evidence no longer counts


async def test_a_topic_under_discussion_is_read_where_the_parser_cuts_it(app: App) -> None:
    """ "in the lecture recording group": the small parser makes the topic a modifier and finds only "exam
    results"; in a scope already discussing lecture recording, the message is evidence about it."""
    layer = await persona_app(app)
    cut = (
        "In a controlled trial over 9 areas, exam results came out 8% worse in the lecture recording group than "
        "in the control group."
    )
    assert all(t != "lecture recording" for t, _ in (await layer.score(cut)).topics)
    await say(app, "A 2021 study of 4,000 students found lecture recording raised exam results by 11%.")
    state = await current_state(layer, "g1", None)
    assert [s.topic for s in state.staged] == ["lecture recording"]  # a step towards a view: under discussion
    await say(app, cut)
    rows = await app.db.pool.fetch("SELECT topics FROM persona_evidence ORDER BY id")
    topics = [json.loads(r["topics"]) if isinstance(r["topics"], str) else r["topics"] for r in rows]
    assert topics[0][0][1:3] == ["lecture recording", 1]
    assert topics[-1][0][1:3] == ["lecture recording", -1], topics[-1]
    assert all(0 < t[3] <= 1 for row in topics for t in row)  # how sure each direction is, kept for recomputing


async def test_an_edit_replaces_the_messages_evidence(app: App) -> None:
    layer = await persona_app(app)
    reply = await app.brain.respond(turn(STRONG_FOR[0]))
    await reply.complete()
    await app.brain.drain()
    assert (await current_state(layer, "g1", None)).staged
    assert await app.brain.edit("console", "c1", reply.message.external_id, "never mind, ignore that")
    await app.brain.drain()
    rows = await app.db.pool.fetch("SELECT score, reasoning_type FROM persona_evidence")
    assert len(rows) == 1 and rows[0]["score"] < 0.25  # scored again, as the new text
    state = await current_state(layer, "g1", None)
    assert not state.staged and "remote work" not in state.engagement


async def test_the_direction_probe_reads_an_analogy_the_lexicon_cannot(embedder: MiniLMEmbedder) -> None:
    """An argument by analogy names no outcome and no stance word: the lexicon and the pole prototypes leave
    it undecided, and the direction probe (bench/train_persona_probes.py) decides it."""
    layer = PersonaLayer(None, embedder)
    cases = {
        "Tidal power is what insulation is to a house: boring to install, and you feel the difference every winter.": 1,
        "Tidal power is like treating a fever by breaking the thermometer: it looks tidy while the real causes "
        "keep growing.": -1,
    }
    for text, want in cases.items():
        got = await layer.score(text)
        assert ("tidal power", want) in got.topics, (text, got.features["direction"])
        parts = got.features["direction"]["tidal power"]
        without_probe = (
            parts["total"] - PROBE_WEIGHT * parts.get("probe", 0.0) - STANCE_WEIGHT * parts.get("stance", 0.0)
        )
        assert abs(without_probe) <= 0.25, (text, parts)  # undecided without the stance model or the probe


async def test_the_argument_probe_tells_reasons_from_pressure_and_chat(
    embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The argument probe gives a reasoned message with no connective, figure or authority a far higher
    probability of being evidence than pressure or small talk; at its threshold such a message scores the
    floor, which an update needs, while pressure and chat stay far below."""
    import memory.persona.evidence as evidence

    layer = PersonaLayer(None, embedder)
    scorer = layer.deterministic
    reasons = "Look at who pays for tidal power: the households on the coast, while the profits go to investors inland."
    others = [
        "Tidal power is great and that is all there is to it, stop arguing with me.",
        "Tidal power is a disaster, I have said it a hundred times and I will keep saying it.",
        "I went to the seaside last weekend and the weather was lovely, we had fish and chips.",
    ]
    vectors = await embedder.embed_many([reasons, *others])
    p_reasons = scorer._argument_probability(vectors[0])
    assert p_reasons is not None and p_reasons >= 0.6
    assert all((p := scorer._argument_probability(v)) is not None and p < 0.2 for v in vectors[1:])
    before = await layer.score(reasons)
    assert before.score < ARGUMENT_FLOOR  # the prototypes and cues alone do not count it
    monkeypatch.setattr(evidence, "ARGUMENT_PROBABILITY", 0.6)
    after = await layer.score(reasons)
    assert after.score == ARGUMENT_FLOOR and "argument probe" in after.features["why"], after.features["why"]
    for text in others:
        assert (await layer.score(text)).score < 0.25


async def test_the_stance_model_reads_arguments_with_no_figure_and_only_for_evidence(embedder: MiniLMEmbedder) -> None:
    """The shipped stance model (bench/train_persona_stance.py) reads the direction of an argument that names no
    outcome; a message too weak to move a view is read without it (the probe instead), and a missing model
    leaves the lexicon and the probe to decide."""
    from memory.persona.evidence import EvidenceScorer
    from memory.persona.stance import StanceModel

    model = StanceModel()
    assert model.available, "memory/persona/stance/ ships with the package"
    assert model.valence is not None and model.plain is not None  # its outcome classifier, its plain twin
    assert model.plain.plain is None and model.valence.valence is None
    logits = model.logits(
        [
            "Think about what happens when this policy is scrapped: the people who relied on it are the first to lose "
            "out, and nobody steps in to replace it.",
            "This policy sounds kind, but it rewards exactly the behaviour it was meant to stop, and the bill lands on "
            "the people with the least.",
        ]
    )
    assert logits is not None and logits[0] > 0 > logits[1], logits

    layer = PersonaLayer(None, embedder)
    strong = await layer.score(
        "A 2022 trial of 9,000 households found tidal power cut energy bills by 18%, and "
        "the savings held for five years."
    )  # the same text as strong_text below
    assert strong.score >= 0.25 and ("tidal power", 1) in strong.topics
    assert "stance" in strong.features["direction"]["tidal power"]
    weak = await layer.score("tidal power is great, everyone knows it")
    assert all("stance" not in parts for key, parts in weak.features["direction"].items() if key != "phrase_polarity")

    strong_text = (
        "A 2022 trial of 9,000 households found tidal power cut energy bills by 18%, and the savings "
        "held for five years."
    )
    missing = EvidenceScorer(embedder, stance=StanceModel(Path("/nonexistent/stance")))
    fallback = await missing.score(strong_text, (await embedder.embed_many([strong_text]))[0])
    assert ("tidal power", 1) in fallback.topics and "probe" in fallback.features["direction"]["tidal power"]


@pytest.mark.parametrize("limit", ["0", "-3", "ten"])
def test_persona_history_refuses_a_limit_that_is_not_a_count_of_versions(
    limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new user's probe: `hippobot persona --history --limit 0` (or -3) showed one version without a word."""
    import argparse

    from bot.persona_cli import add_parser

    parser = argparse.ArgumentParser(prog="hippobot")
    add_parser(parser.add_subparsers(dest="command"))
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["persona", "--history", "--limit", limit])
    assert exited.value.code == 2 and "argument --limit" in capsys.readouterr().err
