"""The memory layer seam: a new layer plugs in by registration; slow or failing layers never stop a reply;
absorption is durable and re-reads the message."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import asyncpg
import pytest

from bot.app import App
from bot.brain import Busy, IncomingTurn
from memory.absorption import AbsorbHints
from memory.conversation import StoredMessage
from memory.layers.base import PREAMBLE, AbsorbedTurn, BaseLayer, MemoryItem, RecallQuery, Section, StepResult
from tests.fakes import ScriptedLLM


def turn(text: str, *, scope: str = "g1", author: str = "ana", channel: str = "c1") -> IncomingTurn:
    return IncomingTurn(
        scope=scope, source="console", channel_id=channel, author_id=f"u-{author}", author_name=author, text=text
    )


class NotebookLayer(BaseLayer):
    """A layer the core has never heard of: it keeps the last word of each message, in memory."""

    name = "notebook"

    def __init__(self) -> None:
        self.words: dict[int, str] = {}
        self.absorbed: list[AbsorbedTurn] = []
        self.forgotten: list[int] = []
        self.edits: list[str] = []

    async def recall(self, query: RecallQuery) -> Section | None:
        items = tuple(MemoryItem("note", None, w, f"noted: {w}", (i,), ref=i) for i, w in self.words.items())
        return Section(self.name, "", items, placement=PREAMBLE, priority=5, boosts={7: 0.3})

    async def absorb(self, t: AbsorbedTurn) -> None:
        self.absorbed.append(t)
        self.words[t.message.id] = t.message.content.split()[-1]

    async def edited(self, message: StoredMessage, conn: asyncpg.Connection) -> None:
        self.edits.append(message.content)
        self.words[message.id] = message.content.split()[-1]

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        gone = [i for i in message_ids if i in self.words]
        for i in gone:
            del self.words[i]
        self.forgotten += gone
        return {"notes": len(gone)}

    def dream_steps(self):
        async def tidy(now, scope):
            return StepResult(counts={"notes": len(self.words)})

        return (("notebook_tidy", tidy),)


class SlowLayer(BaseLayer):
    name = "slow"

    async def recall(self, query: RecallQuery) -> Section | None:
        await asyncio.sleep(60)
        return None


class BrokenLayer(BaseLayer):
    name = "broken"

    async def recall(self, query: RecallQuery) -> Section | None:
        raise RuntimeError("the layer's table is gone")

    async def absorb(self, t: AbsorbedTurn) -> None:
        raise RuntimeError("cannot write")


async def test_a_new_layer_plugs_in_by_registration_alone(app: App, llm: ScriptedLLM) -> None:
    notebook = NotebookLayer()
    app.layers.append(notebook)  # the composition root's one line
    first = await app.brain.respond(turn("remember the word pineapple"))
    await first.complete()
    await app.brain.drain()
    assert notebook.absorbed and notebook.absorbed[0].message.id == first.message.id
    assert notebook.absorbed[0].reply is not None and notebook.absorbed[0].reply.content == llm.reply

    second = await app.brain.respond(turn("what was the word?"))
    await second.complete()
    assert "noted: pineapple" in llm.prompts[-1]  # its section reached the prompt
    assert llm.boosts[-1][7] == 0.3  # and its boosts the engine (beside resonance's from the first reply)
    assert second.prompt.used["notebook"] == (first.message.id,)
    await app.brain.drain()

    assert await app.brain.edit("console", "c1", second.message.external_id, "what was the word again")
    await app.brain.drain()
    assert notebook.edits == ["what was the word again"]

    report = await app.provenance.forget_message("g1", first.message.id)
    assert report.counts["notes"] == 1 and "1 notes" in str(report)
    assert first.message.id not in notebook.words


async def test_a_slow_or_failing_layer_is_skipped_and_the_reply_still_comes(app: App, llm: ScriptedLLM) -> None:
    app.brain.recall.timeout = 0.5
    app.layers += [SlowLayer(), BrokenLayer()]
    reply = await app.brain.respond(turn("hello there"))
    assert await reply.complete() == llm.reply
    assert set(reply.bundle.skipped) == {"slow", "broken"}
    assert app.brain.recall.failures["slow"] == 1 and app.brain.recall.failures["broken"] == 1
    await app.brain.drain()
    # The other layers absorbed the turn; the broken one leaves it unabsorbed, to be retried at the next start.
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes") == 1
    assert await app.conversations.count_unabsorbed() == 1
    assert app.brain.absorber.failures["broken"] == 1
    # Retried once the layer is fixed: the others' work is not doubled, the archetype match not counted twice.
    matches = await app.db.pool.fetchval("SELECT coalesce(sum(match_count), 0) FROM context_archetypes")
    app.layers.remove(next(layer for layer in app.layers if layer.name == "broken"))
    assert await app.absorb_backlog() == 1
    assert await app.conversations.count_unabsorbed() == 0
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes") == 1
    assert await app.db.pool.fetchval("SELECT count(*) FROM archetype_matches") == 1
    assert await app.db.pool.fetchval("SELECT coalesce(sum(match_count), 0) FROM context_archetypes") == matches


async def test_an_edit_before_the_queued_write_wins(
    app: App, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = asyncio.Event()
    original = app.brain.absorber.absorb

    async def held(message_id: int, hints: AbsorbHints | None = None) -> bool:
        await gate.wait()
        return await original(message_id, hints)

    monkeypatch.setattr(app.brain.absorber, "absorb", held)
    reply = await app.brain.respond(turn("My cat is called Miso"))
    await reply.complete()  # the turn's write is queued, held back
    assert await app.brain.edit("console", "c1", reply.message.external_id, "My cat is called Luna")
    gate.set()
    await app.brain.drain()
    episode = await app.db.pool.fetchval("SELECT content FROM episodes")
    assert "Luna" in episode and "Miso" not in episode
    names = await app.db.pool.fetch("SELECT name FROM kg_nodes WHERE scope = 'g1' AND name IN ('miso', 'luna')")
    assert [r["name"] for r in names] == ["luna"], "the graph holds the edited text's fact, not the old one"


async def test_a_cancelled_reply_is_still_absorbed(app: App, llm: ScriptedLLM) -> None:
    llm.delay = 0.05
    reply = await app.brain.respond(turn("a long story about my trip to Porto"))
    stream = reply.__aiter__()
    await stream.__anext__()
    reply.cancel()  # e.g. Discord refused an edit mid-stream
    await app.brain.drain()
    assert await app.conversations.count_unabsorbed() == 0
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes") == 1


async def test_full_queues_answer_busy_but_keep_the_message(app: App, llm: ScriptedLLM) -> None:
    app.brain._max_generations = 1
    first = await app.brain.respond(turn("first"))
    with pytest.raises(Busy):
        await app.brain.respond(turn("second"))
    await first.complete()
    await app.brain.drain()
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages WHERE content = 'second'") == 1
    assert await app.conversations.count_unabsorbed() == 0  # absorbed without a reply


async def test_start_up_absorbs_what_a_crash_left_behind(app: App, llm: ScriptedLLM) -> None:
    for text in ("my dentist is Dr. Okafor", "I moved to Porto in May"):
        await app.brain.receive(turn(text))  # stored, then the process died before any write
    assert await app.conversations.count_unabsorbed() == 2
    seen: list[tuple[int, int]] = []
    assert await app.absorb_backlog(progress=lambda done, total: seen.append((done, total))) == 2
    assert seen[-1] == (2, 2)
    assert await app.conversations.count_unabsorbed() == 0
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes") == 2
    assert await app.absorb_backlog() == 0  # idempotent


async def test_layer_dream_steps_are_registered_with_the_cycle(app: App) -> None:
    from dream.steps import build_steps

    notebook = NotebookLayer()
    names = [name for name, _ in build_steps([*app.layers, notebook])]
    assert "notebook_tidy" in names and "knowledge_graph" in names
    assert names[-1] == "digest"


def test_layers_absorb_in_waves_after_the_layers_they_name() -> None:
    from memory.absorption import absorb_waves
    from memory.layers.base import BaseLayer

    def layer(name: str, after: tuple[str, ...] = ()) -> BaseLayer:
        x = BaseLayer()
        x.name, x.absorb_after = name, after
        return x

    places, macros, facts = layer("places"), layer("macros", ("places",)), layer("facts")
    ghost = layer("ghost", ("unregistered",))
    waves = absorb_waves([macros, places, facts, ghost])
    assert [[x.name for x in w] for w in waves] == [["places", "facts", "ghost"], ["macros"]]
    a, b = layer("a", ("b",)), layer("b", ("a",))  # a cycle: registration order decides, nothing is lost
    assert [[x.name for x in w] for w in absorb_waves([a, b])] == [["a"], ["b"]]
