"""Places and procedures (issue 13, seed 001 SMPD): place codes, gated moves, A*, macros, audience, forgetting."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from unittest.mock import AsyncMock, MagicMock

import asyncpg
import discord
import numpy as np
import pytest

from bot import places_cli
from bot.app import App
from bot.discord.places import PlacesCog
from bot.discord.services import Services
from memory.conversation import ConversationStore, NewMessage, StoredMessage
from memory.embed import MiniLMEmbedder
from memory.errors import InvalidInput
from memory.layers.macros import MacrosLayer
from memory.layers.places import PlacesLayer
from memory.places import AGGREGATE, BLOCK, INSERT, GateConfig, SpatialGate, outcome, plan, steps
from memory.places.classifier import ChannelClassifier
from memory.places.codes import channel_label, label, name_text
from memory.places.graph import PlaceGraph, PlaceNode, Transition
from memory.places.planner import Route
from tests.conftest import layer_of
from tests.test_discord_commands import bot_double, run_command

SCOPE = "g1"
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

DOCKER = [
    "How do I expose a port from my docker container to the host?",
    "docker compose keeps restarting my container, how do I see the logs?",
    "what is the difference between a docker volume and a bind mount?",
]
BREAD = [
    "My sourdough starter smells like acetone, is it dead?",
    "How long should I proof a bread dough in the fridge overnight?",
    "what flour is best for a chewy baguette crust?",
]


# --- pure parts ------------------------------------------------------------------------------------------------


def test_outcomes_steps_and_questions_are_read_from_words() -> None:
    assert outcome("thanks, that worked!") == "success"
    assert outcome("✅") == "success"
    assert outcome("thanks but still the same error") == "failure"
    assert outcome("I have a question about docker") is None
    lines = steps("Hmm. You should run `docker logs web` first. Then restart the daemon! Is it up?")
    assert lines == ["Run `docker logs web` first.", "Restart the daemon!"]
    assert steps("I think it's the network, not sure.") == []
    assert (
        label(
            [
                "thanks, that worked, the image is small now",
                "docker image build fails, same problem",
                "my docker image works now",
            ]
        )
        == "image, docker, small, build"
    )  # no "worked", no "problem"
    # a contraction is its first word, never "ll" or "re" (P7: a place labelled "ll, favourite, food")
    assert (
        label(["I'll bring my favourite food", "we’re cooking Ana's favourite food"])
        == "favourite, food, bring, cooking"
    )
    assert steps("Run pip install -e . in the project root, then activate it. Wait... then restart the shell.") == [
        "Run pip install -e . in the project root, then activate it.",
        "Wait... then restart the shell.",
    ]


def test_the_gate_inserts_aggregates_and_blocks_with_reasons() -> None:
    gate = SpatialGate(GateConfig(max_degree=3))
    d = gate.decide(1, 2, edge_exists=False, reverse_exists=False, recent=[], degree_src=0, degree_dst=0)
    assert d.action == INSERT and "novel" in d.reason
    d = gate.decide(1, 2, edge_exists=True, reverse_exists=False, recent=[(1, 2)], degree_src=1, degree_dst=1)
    assert d.action == AGGREGATE
    # bouncing straight back over an existing edge is flapping: no new edge
    d = gate.decide(2, 1, edge_exists=False, reverse_exists=True, recent=[(1, 2)], degree_src=1, degree_dst=1)
    assert d.action == BLOCK and "bounce" in d.reason
    # the same move later, after other moves, is a real route
    d = gate.decide(
        2, 1, edge_exists=False, reverse_exists=True, recent=[(1, 2), (2, 3), (3, 2)], degree_src=1, degree_dst=1
    )
    assert d.action == INSERT
    d = gate.decide(1, 4, edge_exists=False, reverse_exists=False, recent=[], degree_src=3, degree_dst=0)
    assert d.action == BLOCK and "degree" in d.reason
    assert (
        SpatialGate(GateConfig(enabled=False))
        .decide(2, 1, edge_exists=False, reverse_exists=True, recent=[(1, 2)], degree_src=1, degree_dst=1)
        .action
        == INSERT
    )
    with pytest.raises(ValueError):
        GateConfig(repeat_N=0)


def _node(i: int, channel: str, v: np.ndarray, *, questions: int = 0, resolutions: int = 0) -> PlaceNode:
    return PlaceNode(i, channel, None, None, v / np.linalg.norm(v), channel, 10, questions, resolutions, T0)


def test_astar_picks_the_fitting_place_and_breaks_near_ties_by_routes_that_worked() -> None:
    e = np.eye(384, dtype=np.float32)
    topic = e[0]
    nodes = {
        1: _node(1, "lobby", e[5]),
        2: _node(2, "help-a", e[0] + 0.05 * e[1]),
        3: _node(3, "help-b", e[0] + 0.05 * e[2]),
        4: _node(4, "music", e[3]),
    }
    bare = PlaceGraph(nodes, {})
    routes = plan(bare, topic, start_channel="lobby", k=3)
    assert {r.destination.channel_id for r in routes[:2]} == {"help-a", "help-b"}
    assert len({r.destination.channel_id for r in routes}) == len(routes)  # one route per channel
    assert all(r.destination.channel_id != "music" for r in routes)  # not about the topic at all
    # people who asked in the lobby went to help-b and got answers: that route wins the near tie
    worn = PlaceGraph(nodes, {1: (Transition(1, 3, 8, 7, 120.0),)})
    best = plan(worn, topic, start_channel="lobby", k=1)[0]
    assert [p.channel_id for p in best.places] == ["lobby", "help-b"] and "people went" in best.reason
    costs = [r.cost for r in plan(worn, topic, start_channel="lobby", k=2)]
    assert costs == sorted(costs)
    with pytest.raises(ValueError):
        plan(bare, topic, k=0)


def test_a_channels_name_settles_what_its_code_leaves_close() -> None:
    e = np.eye(384, dtype=np.float32)
    topic = 0.72 * e[0] + 0.69 * e[1]
    topic /= np.linalg.norm(topic)  # a little nearer #100's code than #200's
    graph = PlaceGraph({1: _node(1, "100", e[0]), 2: _node(2, "200", e[1])}, {})
    named = {"200": topic.copy()}  # #200 is called what the topic is about
    assert plan(graph, topic, k=1)[0].destination.channel_id == "100"
    assert plan(graph, topic, k=1, names=named)[0].destination.channel_id == "200"
    assert plan(graph, topic, k=1, names=named, name_weight=0.0)[0].destination.channel_id == "100"
    assert plan(graph, e[0], k=1, names=named)[0].destination.channel_id == "100"  # a name does not outvote a code
    assert name_text("🐍・python-help") == "python" and name_text("off-topic") is None and name_text(None) is None
    # and so does a learned P(channel | topic), a channel it does not know counting as 0
    assert plan(graph, topic, k=1, likelihoods={"200": 0.9, "100": 0.1})[0].destination.channel_id == "200"
    assert plan(graph, topic, k=1, likelihoods={"200": 0.9})[0].destination.channel_id == "200"
    assert plan(graph, topic, k=1, likelihoods={"200": 0.9}, model_weight=0.0)[0].destination.channel_id == "100"
    # a route the model hardly expects, with a middling fit, is unsure: answers say so, prompts leave it out
    [sure] = plan(graph, topic, k=1, likelihoods={"200": 0.9})
    assert not sure.unsure and sure.as_dict()["unsure"] is False
    unsure = Route(sure.places, 0.62, sure.cost, sure.reason, likelihood=0.1)
    assert unsure.unsure and not Route(sure.places, 0.62, sure.cost, sure.reason).unsure  # no model: no opinion
    # where the model knows few channels, chance itself is no evidence (P8: 25 % of four channels, "right here")
    assert Route(sure.places, 0.56, sure.cost, sure.reason, likelihood=0.25, channels=4).unsure
    assert not Route(sure.places, 0.56, sure.cost, sure.reason, likelihood=0.25, channels=14).unsure
    assert not Route(sure.places, 0.56, sure.cost, sure.reason, likelihood=0.6, channels=4).unsure
    from bot.discord.places import render

    assert render("knitting", [unsure], []).startswith("No channel here is clearly about “knitting”")


def test_a_channel_model_learns_what_tells_channels_apart() -> None:
    rng = np.random.default_rng(0)
    e = np.eye(384, dtype=np.float32)
    shared = 3.0 * e[9]  # what every message says ("how do I ..."): the codes share it, the model weighs it down
    a = [shared + e[0] + 0.03 * rng.standard_normal(384).astype(np.float32) for _ in range(8)]
    b = [shared + e[1] + 0.03 * rng.standard_normal(384).astype(np.float32) for _ in range(8)]
    model = ChannelClassifier.train(np.stack(a + b), ["a"] * 8 + ["b"] * 8)
    assert model is not None and model.channels == ("a", "b")
    p = model.probabilities(shared + e[1])
    assert abs(sum(p.values()) - 1) < 1e-6 and p["b"] > p["a"]
    assert ChannelClassifier.train(np.stack(a), ["a"] * 8) is None  # one channel: nothing to tell apart
    assert ChannelClassifier.train(np.stack(a[:2] + b[:2]), ["a", "a", "b", "b"]) is None  # too little to learn from
    assert [channel_label(c) for c in ("123", "general", "console:console")] == ["<#123>", "#general", "#console"]


# --- the place graph in PostgreSQL -----------------------------------------------------------------------------


class History:
    """Messages stored for real, one minute apart, in the order written."""

    def __init__(self, pool: asyncpg.Pool, scope: str = SCOPE, source: str = "import") -> None:
        self.store = ConversationStore(pool)
        self.scope = scope
        self.source = source
        self.t = T0
        self.n = 0

    async def say(
        self,
        author: str,
        channel: str,
        text: str,
        *,
        visible_in: str | None = None,
        reply_to: str | None = None,
        minutes: float = 1,
        channel_name: str | None = None,
    ) -> StoredMessage:
        self.n += 1
        self.t += timedelta(minutes=minutes)
        return await self.store.add(
            NewMessage(
                scope=self.scope,
                source=self.source,
                external_id=f"x{self.n}",
                channel_id=channel,
                author_id=f"u-{author}",
                author_name=author,
                content=text,
                created_at=self.t,
                reply_to_external=reply_to,
                visible_in=visible_in,
                channel_name=channel_name,
            )
        )


Layers = tuple[PlacesLayer, MacrosLayer]


@pytest.fixture
async def layers(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> Layers:
    return PlacesLayer(pool, embedder), MacrosLayer(pool, embedder)


async def absorb(layers: Layers, embedder: MiniLMEmbedder, m: StoredMessage) -> None:
    from memory.archetypes import ContextPlan
    from memory.layers.base import AbsorbedTurn

    plan_ = ContextPlan(None, 0.0, 8, 5, 0.65, 1)
    turn = AbsorbedTurn(m, None, await embedder.embed(m.content), plan_, m.created_at)
    for layer in layers:
        await layer.absorb(turn)


async def test_places_follow_topics_and_moves_become_gated_edges(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder, layers: Layers
) -> None:
    places, _ = layers
    h = History(pool)
    for i, (d, b) in enumerate(zip(DOCKER, BREAD)):
        await absorb(layers, embedder, await h.say(f"d{i}", "devops", d))
        await absorb(layers, embedder, await h.say(f"b{i}", "baking", b))
    graph = await places.store.graph(SCOPE, None)
    assert {n.channel_id for n in graph.nodes.values()} == {"devops", "baking"}
    assert len(graph.nodes) == 2  # each channel's messages share one topic code
    # ana asks in the lobby, is sent to devops, and it works there
    await absorb(layers, embedder, await h.say("ana", "lobby", "where can I get help with my docker networking setup?"))
    await absorb(layers, embedder, await h.say("ana", "devops", "my docker container cannot reach the host port"))
    await absorb(layers, embedder, await h.say("ana", "devops", "thanks, that worked!"))
    graph = await places.store.graph(SCOPE, None)
    edges = [t for ts in graph.out.values() for t in ts]
    assert len(edges) == 1 and edges[0].moves == 1 and edges[0].successes == 1
    assert graph.nodes[edges[0].dst].channel_id == "devops"
    # bouncing back at once makes no edge: blocked, logged with its reason, counted
    await absorb(layers, embedder, await h.say("ana", "lobby", "ok see you all later friends, going offline now"))
    await absorb(layers, embedder, await h.say("ana", "devops", "one more docker question about compose files"))
    await absorb(layers, embedder, await h.say("ana", "lobby", "back in the lobby again to chat about nothing"))
    counts = await places.store.gate_counts(SCOPE)
    assert counts["blocked_new_edges"] >= 1 and counts["attempts"] == 4
    blocked = [d for d in await places.store.decisions(SCOPE) if d["action"] == BLOCK]
    assert blocked and "redundant" in str(blocked[0]["reason"])
    stats = await places.stats(SCOPE)
    assert stats["spatial gate attempts"] == 4 and stats["places"] >= 3
    # "where do I ask about X?" from the lobby: devops first, along the route that worked
    routes = await places.where_to(SCOPE, "docker port mapping", channel_id="lobby")
    assert routes[0].destination.channel_id == "devops"
    assert [p.channel_id for p in routes[0].places] == ["lobby", "devops"]
    assert "#lobby → #devops (1 move(s), 1 ended well)" in routes[0].reason
    seen = await places.where_discussed(SCOPE, "sourdough bread")
    assert seen[0].destination.channel_id == "baking"
    with pytest.raises(InvalidInput):
        await places.where_to(SCOPE, "   ")
    with pytest.raises(InvalidInput):
        await places.where_to(SCOPE, "x" * 600)


DOCKER_MORE = [
    "my docker image build takes forever on every small code change",
    "the container exits with code 137 right after it starts",
    "how do I pass environment variables into a docker compose service?",
]
BREAD_MORE = [
    "my bread crust gets too dark before the crumb is baked through",
    "how much water should a rye bread dough take?",
    "the croissant layers melt together in the oven",
]


async def test_a_channel_model_learns_from_its_audience_and_unlearns_what_is_forgotten(
    app: App, embedder: MiniLMEmbedder
) -> None:
    places, macros = layer_of(app, "places", PlacesLayer), layer_of(app, "macros", MacrosLayer)
    assert isinstance(places, PlacesLayer)
    h = History(app.db.pool)
    for text in DOCKER + DOCKER_MORE:
        await absorb((places, macros), embedder, await h.say("ana", "devops", text))
    for text in BREAD + BREAD_MORE:
        await absorb((places, macros), embedder, await h.say("bob", "baking", text))
    secret = await h.say("cy", "mods", "should we ban the spam account posting crypto links?", visible_in="mods")
    await absorb((places, macros), embedder, secret)
    await absorb(
        (places, macros),
        embedder,
        await h.say("cy", "mods", "the spam bot posted crypto links again", visible_in="mods"),
    )
    # the reply path never waits for one: the first recall plans with the codes and learns in the background
    assert await places._model(SCOPE, None, wait=False) is None
    await asyncio.gather(*places._training.values())
    public = await places._model(SCOPE, None, wait=False)
    assert public is not None and public.channels == ("baking", "devops")  # the restricted channel is not in it
    assert await places._model(SCOPE, "devops", wait=False) is public  # one model for every public audience
    inside = await places._model(SCOPE, "mods", wait=True)
    assert inside is not None and inside.channels == ("baking", "devops", "mods")
    assert (
        max(inside.probabilities(await embedder.embed("banning spam accounts")).items(), key=lambda x: x[1])[0]
        == "mods"
    )
    routes = await places.where_to(SCOPE, "my sourdough loaf came out flat", channel_id="general")
    assert routes[0].destination.channel_id == "baking"
    assert routes[0].likelihood is not None and f"{routes[0].likelihood:.0%} likely" in routes[0].reason
    # a new message leaves the model usable; forgetting one it learned from does not
    await absorb((places, macros), embedder, await h.say("ana", "devops", "docker volumes fill my disk quickly"))
    assert await places._model(SCOPE, "mods", wait=False) is inside
    await app.provenance.forget_message(SCOPE, secret.id)
    assert places._models == {}
    relearned = await places._model(SCOPE, "mods", wait=True)
    assert relearned is not None and relearned is not inside
    await app.provenance.forget_channel("import", "mods")
    without_mods = await places._model(SCOPE, "mods", wait=True)
    assert without_mods is not None and without_mods.channels == ("baking", "devops")


async def test_a_restricted_channel_is_a_place_only_its_audience_sees(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder, layers: Layers
) -> None:
    places, _ = layers
    h = History(pool)
    await absorb(layers, embedder, await h.say("ana", "general", "what's everyone cooking for dinner tonight?"))
    await absorb(
        layers,
        embedder,
        await h.say("ana", "mods", "should we ban the spam account posting crypto links?", visible_in="mods"),
    )
    public = await places.store.graph(SCOPE, None)
    inside = await places.store.graph(SCOPE, "mods")
    assert {n.channel_id for n in public.nodes.values()} == {"general"}
    assert {n.channel_id for n in inside.nodes.values()} == {"general", "mods"}
    edge = await pool.fetchrow("SELECT visible_in FROM place_edges")
    assert edge["visible_in"] == "mods"  # the move touched the restricted channel: only its audience sees it
    assert not public.out and inside.out
    assert await places.where_to(SCOPE, "ban a spam account", channel_id="general") == [] or all(
        r.destination.channel_id != "mods" for r in await places.where_to(SCOPE, "ban a spam account")
    )


async def test_a_place_is_named_by_its_channels_newest_message_its_audience_may_see(
    app: App, embedder: MiniLMEmbedder
) -> None:
    places, macros = layer_of(app, "places", PlacesLayer), layer_of(app, "macros", MacrosLayer)
    h = History(app.db.pool)
    for text, name in zip(DOCKER, ["docker", "docker", "containers"]):  # renamed on the way
        await absorb((places, macros), embedder, await h.say("ana", "100", text, channel_name=name))
    for text in BREAD:  # an import that names no channel
        await absorb((places, macros), embedder, await h.say("bob", "200", text))
    await absorb(
        (places, macros),
        embedder,
        await h.say("cy", "300", "should we ban the spam account?", visible_in="300", channel_name="mod-log"),
    )
    await absorb(
        (places, macros),
        embedder,
        await h.say("cy", "100", "weird one, no idea", visible_in="100", channel_name="secret-containers"),
    )  # gone private
    names = lambda g: {n.channel_id: n.name for n in g.nodes.values()}  # noqa: E731
    assert names(await places.store.graph(SCOPE, None)) == {"100": "containers", "200": None}
    assert names(await places.store.graph(SCOPE, "300")) == {"100": "containers", "200": None, "300": "mod-log"}
    assert names(await places.store.graph(SCOPE, "100"))["100"] == "secret-containers"
    # what the planner blends: a unit vector per named channel the audience sees
    vectors = await places._names(await places.store.graph(SCOPE, None))
    assert set(vectors) == {"100"} and abs(float(np.linalg.norm(vectors["100"])) - 1) < 1e-5
    # the command line names a numbered channel by its name (Discord renders <#100> itself; a terminal cannot)
    out = io.StringIO()
    args = argparse.Namespace(text="docker compose logs", scope=SCOPE, channel=None, k=3, stats=False, json=False)
    assert await places_cli.run(app.settings, args, out, embedder=embedder) == 0
    assert "#containers" in out.getvalue() and "<#100>" not in out.getvalue()
    assert "Where it was discussed:\n  #containers" in out.getvalue(), out.getvalue()
    # P9: a topic nobody discussed was listed "Where it was discussed" at the nearest channels' fit of 0.57
    args.text = "knitting patterns for socks"
    assert await places_cli.run(app.settings, args, out := io.StringIO(), embedder=embedder) == 0
    assert "Where it was discussed:\n  #" not in out.getvalue(), out.getvalue()
    args.text = "docker compose logs"
    # asking from a channel named as people see it; a name nothing has is refused, not ignored
    args.channel = "#Containers"
    assert await places_cli.run(app.settings, args, out := io.StringIO(), embedder=embedder) == 0
    assert "right here" in out.getvalue()
    args.channel = "#nosuch"
    assert await places_cli.run(app.settings, args, io.StringIO(), embedder=embedder) == 2
    # forgetting the channel forgets its name with its messages
    await app.provenance.forget_channel("import", "100")
    assert "100" not in names(await places.store.graph(SCOPE, "100"))
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages WHERE channel_name LIKE '%containers'") == 0


async def test_places_without_a_topic_lists_the_places_its_audience_sees(  # issue 32.7
    app: App, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    places, macros = layer_of(app, "places", PlacesLayer), layer_of(app, "macros", MacrosLayer)
    h = History(app.db.pool)
    for text in DOCKER:
        await absorb((places, macros), embedder, await h.say("ana", "100", text, channel_name="docker"))
    for text in BREAD:  # an import that names no channel
        await absorb((places, macros), embedder, await h.say("bob", "200", text))
    await absorb(
        (places, macros),
        embedder,
        await h.say("cy", "300", "should we ban the spam account?", visible_in="300", channel_name="mod-log"),
    )
    # the usage line says TEXT is optional, and it is: the list needs the database, not the model
    parser = argparse.ArgumentParser(prog="hippobot")
    places_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["places", "--scope", SCOPE])
    assert args.text is None

    def no_model(self: object) -> None:
        raise AssertionError("listing places loaded the embedder")

    monkeypatch.setattr("memory.embed.MiniLMEmbedder.load", no_model)
    assert await places_cli.run(app.settings, args, out := io.StringIO()) == 0
    listed = out.getvalue()
    assert listed.startswith(f"Places in scope {SCOPE}:") and "#docker: " in listed and "<#200>: " in listed
    assert "3 message(s)" in listed and "mod-log" not in listed and "300" not in listed  # a restricted channel
    args.channel = "#mod-log"  # asked from there, its audience sees it too
    assert await places_cli.run(app.settings, args, out := io.StringIO()) == 0
    assert "#mod-log: " in out.getvalue() and "#docker: " in out.getvalue()
    args.channel, args.json = None, True
    assert await places_cli.run(app.settings, args, out := io.StringIO()) == 0
    data = json.loads(out.getvalue())
    assert data["scope"] == SCOPE and {p["channel"] for p in data["places"]} == {"100", "200"}
    assert data["places"][0]["messages"] == 3
    args.scope, args.json = "empty-scope", False
    assert await places_cli.run(app.settings, args, out := io.StringIO()) == 0
    assert out.getvalue().startswith("No places in scope empty-scope: they are learned")
    args.scope, args.text = SCOPE, ""  # an empty topic given is still refused, not taken for no topic
    assert await places_cli.run(app.settings, args, io.StringIO()) == 2


async def test_forgetting_removes_what_a_message_alone_built(app: App, embedder: MiniLMEmbedder) -> None:
    places, macros = (
        layer_of(app, "places", PlacesLayer),
        layer_of(app, "macros", MacrosLayer),
    )  # registered by App.open
    assert isinstance(places, PlacesLayer) and isinstance(macros, MacrosLayer)
    h = History(app.db.pool)
    q = await h.say("ana", "devops", "docker compose says port 5432 is already allocated, how do I fix it?")
    await absorb((places, macros), embedder, q)
    tip = await h.say(
        "bob",
        "devops",
        "Run `docker ps` to find the old container. Then stop it with docker stop.",
        reply_to=q.external_id,
    )
    await absorb((places, macros), embedder, tip)
    ok = await h.say("ana", "devops", "thanks, that worked!")
    await absorb((places, macros), embedder, ok)
    assert await app.db.pool.fetchval("SELECT count(*) FROM macros") == 1
    report = await app.provenance.forget_message(SCOPE, tip.id)
    assert report.counts.get("macros") == 1  # its steps were the macro's only steps
    from tests.test_forgetting import traces

    assert await traces(app, "container") == {}  # a word only bob's tip used: in no label, signature or step
    assert await app.db.pool.fetchval("SELECT count(*) FROM macros") == 0
    assert await app.db.pool.fetchval("SELECT count(*) FROM macro_steps") == 0
    # bob's only message built bob's membership; the place stays (ana's messages), recomputed without it
    assert await app.db.pool.fetchval("SELECT messages FROM places") == 2
    report = await app.provenance.forget_author(SCOPE, "u-ana")
    assert report.counts.get("places") == 1
    for table in ("places", "place_messages", "place_moves", "place_edges", "macros", "macro_problems"):
        assert await app.db.pool.fetchval(f"SELECT count(*) FROM {table}") == 0, table


# --- macros ----------------------------------------------------------------------------------------------------


async def test_advice_that_worked_is_kept_even_when_it_is_no_instruction(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder, layers: Layers
) -> None:
    _, macros = layers
    h = History(pool)
    q = await h.say("ana", "data", "my pandas merge suddenly returns three times as many rows as before")
    await absorb(layers, embedder, q)
    await absorb(
        layers,
        embedder,
        await h.say(
            "bob",
            "data",
            "Your join key is not unique on the right side; "
            "drop_duplicates on it before the merge. Which version is it?",
            reply_to=q.external_id,
        ),
    )
    await absorb(layers, embedder, await h.say("ana", "data", "thanks, that worked!"))
    [m] = await macros.suggest(SCOPE, "pandas merge gives me duplicated rows")
    assert m.steps == ("Your join key is not unique on the right side; drop_duplicates on it before the merge.",)


async def test_a_confirmed_exchange_becomes_a_procedure_without_the_failed_attempt(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder, layers: Layers
) -> None:
    _, macros = layers
    h = History(pool)
    q = await h.say("ana", "python", "pip install fails with 'externally-managed-environment' on Debian, why?")
    await absorb(layers, embedder, await h.say("cy", "python", "anyone watching the match tonight?"))
    await absorb(layers, embedder, q)
    await absorb(
        layers, embedder, await h.say("bob", "python", "Reinstall python from source.", reply_to=q.external_id)
    )
    await absorb(layers, embedder, await h.say("ana", "python", "still the same error"))
    fix = await h.say(
        "bob",
        "python",
        "Create a venv with `python3 -m venv .venv`. Then activate it and run pip there.",
        reply_to=q.external_id,
    )
    await absorb(layers, embedder, fix)
    done = await h.say("ana", "python", "that did it, thanks!")
    await absorb(layers, embedder, done)
    found = await macros.suggest(SCOPE, "Debian says externally managed environment when I pip install")
    assert len(found) == 1
    m = found[0]
    assert m.steps == ("Create a venv with `python3 -m venv .venv`.", "Activate it and run pip there.")
    assert m.successes == 1 and m.failures == 0 and "externally-managed" in m.signature
    assert await macros.suggest(SCOPE, "my sourdough starter smells of acetone") == []
    # absorbing the confirmation again (after a crash) files nothing twice
    await absorb(layers, embedder, done)
    assert await pool.fetchval("SELECT count(*) FROM macro_outcomes") == 1
    # the macro reached someone's prompt and they said it did not work: a failure for it
    later = await h.say("dan", "python", "pip refuses: externally managed environment error on my debian box")
    from memory.archetypes import ContextPlan
    from memory.layers.base import AbsorbedTurn

    await macros.absorb(
        AbsorbedTurn(
            later,
            None,
            await embedder.embed(later.content),
            ContextPlan(None, 0.0, 8, 5, 0.65, 1),
            later.created_at,
            used={"macros": (m.id,)},
        )
    )
    await macros.absorb(
        AbsorbedTurn(
            nope := await h.say("dan", "python", "didn't work for me, same error"),
            None,
            await embedder.embed(nope.content),
            ContextPlan(None, 0.0, 8, 5, 0.65, 1),
            nope.created_at,
        )
    )
    again = await macros.store.get(SCOPE, m.id)
    assert again is not None and again.failures == 1 and again.uses == 1
    # the dream ages it by elapsed time and merges near-duplicates
    aged = await macros.age_step(T0 + timedelta(days=120), SCOPE)
    assert aged.counts["macros_aged"] == 1
    strength = await pool.fetchval("SELECT strength FROM macros WHERE id = $1", m.id)
    assert 0.2 < strength < 0.3  # two half-lives
    assert (await macros.merge_step(T0, SCOPE)).counts["macros_merged"] == 0


async def test_dream_steps_merge_places_and_drop_unused_ones(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder, layers: Layers
) -> None:
    places, _ = layers
    h = History(pool)
    # a high join threshold splits one topic into two places; the dream merges them back
    strict = PlacesLayer(pool, embedder, merge_similarity=0.6)
    strict.store.join_similarity = 0.99
    for text in DOCKER:
        await strict.observe(m := await h.say("ana", "devops", text), await embedder.embed(m.content), m.created_at)
    assert await pool.fetchval("SELECT count(*) FROM places") == 3
    merged = await strict.merge_step(T0, SCOPE)
    assert merged.counts["places_merged"] >= 1
    assert await pool.fetchval("SELECT sum(messages) FROM places") == 3
    dropped = await places.ttl_step(T0 + timedelta(days=400), SCOPE)
    assert dropped.counts["places_dropped"] >= 1 and await pool.fetchval("SELECT count(*) FROM places") == 0


# --- the plan field, recall, the CLI and /whereto ----------------------------------------------------------------


async def test_recall_adds_where_and_what_worked_when_the_plan_asks(app: App, embedder: MiniLMEmbedder) -> None:
    places, macros = (
        layer_of(app, "places", PlacesLayer),
        layer_of(app, "macros", MacrosLayer),
    )  # registered by App.open
    assert isinstance(places, PlacesLayer) and isinstance(macros, MacrosLayer)
    app.brain.recall.timeout = 60.0
    h = History(app.db.pool)
    for i, text in enumerate(DOCKER):
        await absorb((places, macros), embedder, await h.say(f"d{i}", "devops", text))
    debugging = await app.brain.context("Why isn't my docker container working? I get an error", SCOPE)
    assert debugging.plan.archetype == "technical_debugging" and debugging.plan.place_depth == 1
    section = debugging.section("places")
    assert section is not None and "#devops" in section.items[0].prompt_line
    chat = await app.brain.context("ok", SCOPE)
    assert chat.plan.place_depth == 0 and chat.section("places") is None
    asked = await app.brain.context("which channel is for docker questions?", SCOPE)  # whatever the plan says
    where = asked.section("places")
    assert where is not None and "#devops" in where.items[0].prompt_line
    # the CLI and the slash command on the same memory
    out = io.StringIO()
    args = argparse.Namespace(text="docker volumes", scope=SCOPE, channel=None, k=3, stats=False, json=True)
    assert await places_cli.run(app.settings, args, out, embedder=embedder) == 0
    data = json.loads(out.getvalue())
    assert data["ask_in"][0]["channel"] == "devops"
    out = io.StringIO()
    args.json, args.stats = False, True
    assert await places_cli.run(app.settings, args, io.StringIO(), embedder=embedder) == 2  # a topic with --stats
    args.text = None
    assert await places_cli.run(app.settings, args, out, embedder=embedder) == 0
    assert "spatial gate attempts" in out.getvalue()
    args.stats, args.text = False, ""
    assert await places_cli.run(app.settings, args, io.StringIO(), embedder=embedder) == 2
    cog = PlacesCog(bot_double(), Services.of(app))
    i = MagicMock(spec=discord.Interaction)
    i.user = SimpleNamespace(id=7)
    i.guild_id, i.channel_id, i.channel = int("1"), 42, None
    i.response = MagicMock(spec=discord.InteractionResponse)
    i.response.is_done.return_value = False
    i.response.send_message = AsyncMock()
    i.guild_id = None  # a DM: the DM scope has no places
    await run_command(cog, PlacesCog.whereto, i, "docker volumes")
    assert "don't know yet" in said(i)


def interaction(guild_id: int | None, channel_id: int) -> MagicMock:
    i = MagicMock(spec=discord.Interaction)
    i.user = SimpleNamespace(id=7)
    i.guild_id, i.channel_id, i.channel = guild_id, channel_id, None
    i.response = MagicMock(spec=discord.InteractionResponse)
    i.response.is_done.return_value = False
    i.response.send_message = AsyncMock()

    async def defer(**_: object) -> None:
        i.response.is_done.return_value = True

    i.response.defer = AsyncMock(side_effect=defer)
    i.followup = MagicMock()
    i.followup.send = AsyncMock()
    return i


def said(i: MagicMock) -> str:
    """What the bot answered: inline, or as a follow-up after deferring."""
    sent = i.followup.send if i.followup.send.called else i.response.send_message
    return sent.call_args.args[0]


async def test_whereto_in_a_server_keeps_a_restricted_channels_places_and_procedures_there(
    app: App, embedder: MiniLMEmbedder
) -> None:
    places, macros = layer_of(app, "places", PlacesLayer), layer_of(app, "macros", MacrosLayer)
    guild = "77"
    h = History(app.db.pool, scope=guild)
    for i, text in enumerate(DOCKER):
        await absorb((places, macros), embedder, await h.say(f"d{i}", "100", text))
    await absorb((places, macros), embedder, await h.say("ana", "100", "is there a channel for moderators?"))
    q = await h.say("ana", "200", "how do I ban a spam bot account that keeps posting invite links?", visible_in="200")
    tip = await h.say(
        "bob",
        "200",
        "Open the member list. Then right-click the account and choose Ban.",
        reply_to=q.external_id,
        visible_in="200",
    )
    ok = await h.say("ana", "200", "thanks, that worked!", visible_in="200")
    for m in (q, tip, ok):
        await absorb((places, macros), embedder, m)
    cog = PlacesCog(bot_double(), Services.of(app))
    outside = interaction(77, 100)  # the public channel of the same server
    await run_command(cog, PlacesCog.whereto, outside, "banning spam accounts")
    answer = said(outside)
    assert outside.response.defer.called  # learning the model may take longer than Discord waits
    assert "<#200>" not in answer and "member list" not in answer and "What worked before" not in answer
    inside = interaction(77, 200)  # the restricted channel itself
    await run_command(cog, PlacesCog.whereto, inside, "banning spam accounts")
    answer = said(inside)
    assert "<#200>" in answer and "Open the member list" in answer
    # the command line asks as the channel's audience too
    for channel, sees in (("100", False), ("200", True)):
        out = io.StringIO()
        args = argparse.Namespace(
            text="banning spam accounts", scope=guild, channel=channel, k=3, stats=False, json=False
        )
        assert await places_cli.run(app.settings, args, out, embedder=embedder) == 0
        assert ("Open the member list" in out.getvalue()) is sees, channel
    assert await macros.suggest(guild, "ban a spam account") == []  # what everyone may see
    [restricted] = await macros.suggest(guild, "ban a spam account", visible_channel="200")
    assert await macros.suggest("g2", "ban a spam account", visible_channel="200") == []  # another server
    assert await macros.store.get(guild, restricted.id) is None  # by id too, only for its audience
    seen = await macros.store.get(guild, restricted.id, visible_channel="200")
    assert seen is not None and seen.id == restricted.id
    moves = await places.store.decisions(guild, visible_channel="200")
    assert {d["message_id"] for d in await places.store.decisions(guild)} < {d["message_id"] for d in moves}
    # bad topics: a clear reply, nothing raised
    for bad in ("", "   ", "\x00", "x" * 10_000, "where do I ask?", "which channel is for help"):
        i = interaction(77, 100)
        await run_command(cog, PlacesCog.whereto, i, bad)
        assert "⚠️" in said(i) and not i.response.defer.called


async def test_the_cli_checks_the_topic_before_anything_starts(app: App, embedder: MiniLMEmbedder) -> None:
    places, macros = layer_of(app, "places", PlacesLayer), layer_of(app, "macros", MacrosLayer)
    h = History(app.db.pool)
    for i, text in enumerate(DOCKER):
        await absorb((places, macros), embedder, await h.say(f"d{i}", "devops", text))
    unreachable = app.settings.model_copy(update={"database_url": "postgresql://nobody@127.0.0.1:1/none"})
    for bad in ("", "\x00\x00", "y" * 600, "\ud800\udc80?", "!!!"):
        args = argparse.Namespace(text=bad, scope=SCOPE, channel=None, k=3, stats=False, json=True)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert await places_cli.run(unreachable, args, io.StringIO()) == 2  # no database, no model needed
        assert "the topic " in err.getvalue()
    args = argparse.Namespace(text="\ud800 docker volumes", scope=SCOPE, channel=None, k=3, stats=False, json=True)
    out = io.StringIO()
    assert await places_cli.run(app.settings, args, out, embedder=embedder) == 0  # a lone surrogate is replaced
    assert json.loads(out.getvalue())["ask_in"][0]["channel"] == "devops"


async def test_a_check_mark_on_a_question_resolves_its_place_in_that_server_only(
    app: App, embedder: MiniLMEmbedder
) -> None:
    from bot.discord.reactions import ReactionsCog

    places, macros = layer_of(app, "places", PlacesLayer), layer_of(app, "macros", MacrosLayer)
    h = History(app.db.pool, scope="77", source="discord")
    q = await h.say("ana", "100", DOCKER[0])
    await absorb((places, macros), embedder, q)
    cog = ReactionsCog(bot_double(user=None), Services.of(app))

    def check(guild: int) -> SimpleNamespace:
        return SimpleNamespace(
            emoji="✅", channel_id=100, message_id=q.external_id, user_id=5, guild_id=guild, member=None
        )

    resolutions = "SELECT resolutions FROM places WHERE scope = '77'"
    await cog._reaction(check(78), added=True)  # another server naming this channel and message: nothing
    assert await app.db.pool.fetchval(resolutions) == 0
    await cog._reaction(check(77), added=True)
    await cog._reaction(check(77), added=True)  # a second check mark is the same resolution
    assert await app.db.pool.fetchval(resolutions) == 1


async def test_the_askers_cross_on_a_reply_is_a_failure_of_the_procedures_it_suggested(
    app: App, embedder: MiniLMEmbedder
) -> None:
    from bot.discord.reactions import ReactionsCog

    places, macros = layer_of(app, "places", PlacesLayer), layer_of(app, "macros", MacrosLayer)
    h = History(app.db.pool, scope="77", source="discord")
    q = await h.say("ana", "100", "how do I ban a spam bot account that keeps posting invite links?")
    tip = await h.say(
        "bob", "100", "Open the member list. Then right-click the account and choose Ban.", reply_to=q.external_id
    )
    ok = await h.say("ana", "100", "thanks, that worked!")
    for m in (q, tip, ok):
        await absorb((places, macros), embedder, m)
    [macro] = await macros.suggest("77", "ban a spam account")
    later = await h.say("cy", "100", "a spam bot keeps posting invite links, how do I ban it?")
    await macros.store.record_uses(later, [macro.id])  # the procedure reached the prompt for this question
    reply = await app.conversations.add(
        NewMessage(
            "77",
            "discord",
            "r1",
            "100",
            "bot",
            "hippobot",
            "Open the member list, right-click it and choose Ban.",
            later.created_at + timedelta(seconds=5),
            is_bot=True,
            derived_from_id=later.id,
        )
    )
    cog = ReactionsCog(bot_double(user=None), Services.of(app))

    def react(emoji: str, user: str, guild: int = 77) -> SimpleNamespace:
        return SimpleNamespace(
            emoji=emoji, channel_id=100, message_id=reply.external_id, user_id=user, guild_id=guild, member=None
        )

    stats = "SELECT successes, failures FROM macros WHERE id = $1"
    before = tuple(await app.db.pool.fetchrow(stats, macro.id))
    await cog._reaction(react("❌", "u-ana"), added=True)  # not the asker: nothing
    await cog._reaction(react("❌", "u-cy", guild=78), added=True)  # another server: nothing
    assert tuple(await app.db.pool.fetchrow(stats, macro.id)) == before
    await cog._reaction(react("❌", "u-cy"), added=True)
    assert tuple(await app.db.pool.fetchrow(stats, macro.id)) == (before[0], before[1] + 1)
    await cog._reaction(react("❌", "u-cy"), added=False)  # taken back
    assert tuple(await app.db.pool.fetchrow(stats, macro.id)) == before
    await cog._reaction(react("✅", "u-cy"), added=True)
    assert tuple(await app.db.pool.fetchrow(stats, macro.id)) == (before[0] + 1, before[1])
    await app.provenance.forget_message("77", reply.id)  # the reply goes: so does what its reaction taught
    assert tuple(await app.db.pool.fetchrow(stats, macro.id)) == before


async def test_asking_for_directions_does_not_make_a_place_about_the_topic(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder, layers: Layers
) -> None:
    from memory.places.codes import asks_for_directions

    assert asks_for_directions("where do I ask about docker? compose keeps failing")
    assert asks_for_directions("is there a channel for sourdough?") and asks_for_directions("which channel is for git")
    assert not asks_for_directions("where did you buy that flour?") and not asks_for_directions(DOCKER[0])
    places, _ = layers
    h = History(pool)
    lobby = "good morning all, the weather is lovely today and I am drinking coffee"
    await absorb(layers, embedder, await h.say("ana", "lobby", lobby))
    code = "SELECT centroid FROM places WHERE channel_id = 'lobby'"
    before = (await pool.fetchval(code)).to_numpy()
    await absorb(layers, embedder, await h.say("ben", "lobby", "where do I ask about docker? my compose file fails"))
    assert np.allclose((await pool.fetchval(code)).to_numpy(), before)
    assert await pool.fetchval("SELECT count(*) FROM place_messages WHERE weight = 0") == 1  # still on the map
