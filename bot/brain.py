"""The Brain: one message through the memory stack and the LLM, for any transport.

    persist the message -> embed once -> archetype plan -> recall ->
    prompt within budget -> generate (streamed) -> after the reply: persist
    it, write the episode, log the archetype match (background, serial).

``respond`` does everything up to the prompt before it returns a ``Reply``;
iterating the reply streams the model's text. The memory writes are queued
only once the stream is exhausted and never delay it; ``drain`` waits for
them (transports call it on shutdown).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import numpy as np

from bot.llm import Generation, LanguageModel
from bot.prompt import Prompt, PromptBuilder
from memory.clock import Clock, SystemClock
from memory.archetypes import ArchetypeRouter, ArchetypeStore, ContextPlan, MatchRecord
from memory.conversation import ConversationStore, NewMessage, StoredMessage, require_scope
from memory.embed import Embedder
from memory.episodic import EpisodicStore, NewEpisode, WriteGate
from memory.errors import InvalidInput
from memory.recall import ContextBundle, Recall
from memory.semantic import SemanticMemory
from memory.recall import novelty as episode_novelty

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IncomingTurn:
    """A message from any transport, before it is stored."""

    scope: str
    source: str  # 'discord' | 'console'
    channel_id: str
    author_id: str
    author_name: str
    text: str
    external_id: str | None = None  # None: a fresh uuid (console)
    created_at: datetime | None = None  # None: now
    visible_in: str | None = None  # None: public in the scope; else the (parent) channel whose audience may see it
    thread_parent_id: str | None = None  # a thread's parent channel


class Busy(Exception):
    """The bot cannot take this message now (generation or memory queues full): ask the person to retry."""


@dataclass
class TurnTrace:
    """Seconds spent in each stage of one turn (for the benchmark and logs)."""

    persist_s: float = 0.0
    embed_s: float = 0.0
    classify_s: float = 0.0
    recall_s: float = 0.0
    prompt_s: float = 0.0
    first_token_s: float | None = None
    tokens: int = 0
    tokens_per_s: float | None = None
    write_s: float | None = None


class MemoryWriter:
    """Runs memory writes one after another in the background; nothing is dropped on shutdown."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[tuple[str, Callable[[], Awaitable[None]]]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.failures = 0

    def submit(self, label: str, job: Callable[[], Awaitable[None]]) -> None:
        self._queue.put_nowait((label, job))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="memory-writer")

    async def _run(self) -> None:
        while not self._queue.empty():
            label, job = self._queue.get_nowait()
            try:
                await job()
            except Exception:  # a failed write is logged with its ids, the queue goes on
                self.failures += 1
                log.exception("memory write failed: %s", label)
            finally:
                self._queue.task_done()

    async def drain(self) -> None:
        """Wait until every queued write has finished."""
        await self._queue.join()


class Reply:
    """A reply being generated: iterate for text deltas."""

    def __init__(
        self,
        brain: Brain,
        turn: IncomingTurn,
        message: StoredMessage,
        vector: np.ndarray,
        bundle: ContextBundle,
        prompt: Prompt,
        generation: Generation,
        trace: TurnTrace,
    ) -> None:
        self.turn = turn
        self.message = message
        self.bundle = bundle
        self.prompt = prompt
        self.trace = trace
        self.external_id = str(uuid.uuid4())  # a transport may set the id it posted the reply under
        self._brain = brain
        self._vector = vector
        self._generation = generation
        self._finished = False

    @property
    def plan(self) -> ContextPlan:
        return self.bundle.plan

    @property
    def text(self) -> str:
        return self._generation.text

    @property
    def mean_surprise(self) -> float | None:
        return self._generation.stats.mean_surprise

    def __aiter__(self) -> AsyncIterator[str]:
        return self._stream()

    async def _stream(self) -> AsyncIterator[str]:
        async for delta in self._generation:
            yield delta
        stats = self._generation.stats
        self.trace.first_token_s = stats.first_token_s
        self.trace.tokens = stats.tokens
        self.trace.tokens_per_s = stats.tokens_per_second
        if not self._finished:
            self._finished = True
            self._brain._after_reply(self, self._vector)

    async def complete(self) -> str:
        async for _ in self:
            pass
        return self.text

    def cancel(self) -> None:
        self._generation.cancel()


class Brain:
    def __init__(
        self,
        *,
        conversations: ConversationStore,
        episodes: EpisodicStore,
        archetypes: ArchetypeRouter,
        archetype_store: ArchetypeStore,
        recall: Recall,
        embedder: Embedder,
        llm: LanguageModel | None,
        prompts: PromptBuilder | None,
        gate: WriteGate,
        bot_id: str,
        bot_name: str,
        max_message_chars: int,
        semantic: SemanticMemory | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.conversations = conversations
        self.episodes = episodes
        self.archetypes = archetypes
        self._archetype_store = archetype_store
        self.recall = recall
        self.embedder = embedder
        self.llm = llm
        self._prompts = prompts
        self._gate = gate
        self.bot_id = bot_id
        self.bot_name = bot_name
        self._max_chars = max_message_chars
        self.semantic = semantic
        self.clock: Clock = clock or SystemClock()
        self.writer = MemoryWriter()
        # replies whose write is still queued, so the next turn sees them anyway
        self._unsaved: dict[str, StoredMessage] = {}
        self._temp_ids = itertools.count(-1, -1)

    # --- input --------------------------------------------------------------

    def validate(self, text: str) -> str:
        """The text to use, or InvalidInput with a message fit to show the person."""
        if not isinstance(text, str):
            raise InvalidInput("a message must be text")
        cleaned = text.replace("\x00", "").strip()
        if not cleaned:
            raise InvalidInput("the message is empty")
        if len(cleaned) > self._max_chars:
            raise InvalidInput(
                f"the message is {len(cleaned):,} characters long; the limit is {self._max_chars:,}"
            )
        return cleaned

    async def receive(self, turn: IncomingTurn) -> StoredMessage:
        """Validate and persist an incoming message (before anything else happens)."""
        require_scope(turn.scope)
        text = self.validate(turn.text)
        return await self.conversations.add(
            NewMessage(
                scope=turn.scope,
                source=turn.source,
                external_id=turn.external_id or str(uuid.uuid4()),
                channel_id=turn.channel_id,
                author_id=turn.author_id,
                author_name=turn.author_name,
                content=text,
                created_at=turn.created_at or self.clock.now(),
                visible_in=turn.visible_in,
                thread_parent_id=turn.thread_parent_id,
            )
        )

    # --- the pipeline -----------------------------------------------------------

    async def respond(self, turn: IncomingTurn) -> Reply:
        """Persist the message, assemble its context and start generating the reply."""
        if self.llm is None or self._prompts is None:
            raise RuntimeError("this Brain was built without a language model")
        trace = TurnTrace()
        t0 = time.perf_counter()
        message = await self.receive(turn)
        t1 = time.perf_counter()
        vector = await self.embedder.embed(message.content)
        t2 = time.perf_counter()
        plan = self.archetypes.classify(vector)
        t3 = time.perf_counter()
        bundle = await self.recall.gather(
            turn.scope,
            vector,
            plan,
            channel_id=turn.channel_id,
            before_message_id=message.id,
            extra_turns=list(self._unsaved.values()),
            text=message.content,
            author_id=message.author_id,
            now=self.clock.now(),
        )
        t4 = time.perf_counter()
        prompt = self._prompts.build(bundle, message.author_name, message.content)
        t5 = time.perf_counter()
        trace.persist_s, trace.embed_s, trace.classify_s = t1 - t0, t2 - t1, t3 - t2
        trace.recall_s, trace.prompt_s = t4 - t3, t5 - t4
        log.debug(
            "message %s scope=%s archetype=%s sim=%.3f episodes=%d turns=%d prompt_tokens=%d",
            message.id, turn.scope, plan.archetype, plan.similarity,
            len(prompt.episodes_used), prompt.turns_used, prompt.tokens,
        )
        generation = self.llm.generate(prompt.text, stop=prompt.stop, stop_pattern=prompt.stop_pattern)
        return Reply(self, turn, message, vector, bundle, prompt, generation, trace)

    async def context(
        self, text: str, scope: str, *, channel_id: str | None = None, k: int | None = None,
        author_id: str | None = None,
    ) -> ContextBundle:
        """The context the Brain would assemble for ``text`` (read-only; nothing is logged)."""
        return (await self.contexts([(text, scope)], channel_id=channel_id, k=k, author_id=author_id))[0]

    async def contexts(
        self, queries: Sequence[tuple[str, str]], *, channel_id: str | None = None, k: int | None = None,
        author_id: str | None = None,
    ) -> list[ContextBundle]:
        """``context`` for many (text, scope) pairs, embedded in one batch."""
        texts = [self.validate(t) for t, _ in queries]
        for _, scope in queries:
            require_scope(scope)
        vectors = await self.embedder.embed_many(texts) if texts else []
        bundles = []
        for text, (_, scope), vector in zip(texts, queries, vectors):
            plan = self.archetypes.classify(vector)
            if k is not None:
                plan = replace(plan, vectors=max(0, k))
            bundles.append(await self.recall.gather(
                scope, vector, plan, channel_id=channel_id, text=text, author_id=author_id, now=self.clock.now()))
        return bundles

    # --- after the reply ------------------------------------------------------------

    def _after_reply(self, reply: Reply, vector: np.ndarray) -> None:
        text = reply.text.strip()
        now = self.clock.now()
        pending = None
        if text:
            pending = StoredMessage(
                id=next(self._temp_ids), scope=reply.turn.scope, source=reply.turn.source,
                external_id=reply.external_id, channel_id=reply.turn.channel_id, author_id=self.bot_id,
                author_name=self.bot_name, is_bot=True, content=text, derived_from_id=reply.message.id,
                created_at=now,
            )
            self._unsaved[pending.external_id] = pending

        async def write() -> None:
            started = time.perf_counter()
            try:
                await self._write_turn(reply, vector, pending, now)
            finally:
                if pending is not None:
                    self._unsaved.pop(pending.external_id, None)
            reply.trace.write_s = time.perf_counter() - started

        self.writer.submit(f"turn message={reply.message.id}", write)

    async def _write_turn(
        self, reply: Reply, vector: np.ndarray, pending: StoredMessage | None, now: datetime
    ) -> None:
        message, bundle = reply.message, reply.bundle
        novelty = bundle.novelty
        if bundle.nearest_similarity is None and bundle.plan.vectors == 0:
            nearest = await self.episodes.search(message.scope, vector, 1)
            novelty = episode_novelty(nearest[0].similarity) if nearest else 1.0
        surprise = reply.mean_surprise
        salience = self._gate.score(surprise, novelty)
        async with self.conversations.transaction() as conn:
            stored_reply = None
            if pending is not None:
                stored_reply = await self.conversations.add(
                    NewMessage(
                        scope=pending.scope, source=pending.source, external_id=pending.external_id,
                        channel_id=pending.channel_id, author_id=pending.author_id,
                        author_name=pending.author_name, content=pending.content, created_at=now,
                        is_bot=True, derived_from_id=message.id,
                    ),
                    conn,
                )
            content = f"{message.author_name}: {message.content}"
            if stored_reply is not None:
                content += f"\n{self.bot_name}: {stored_reply.content}"
            await self.episodes.add_many(
                [
                    NewEpisode(
                        scope=message.scope, channel_id=message.channel_id, author_id=message.author_id,
                        message_id=message.id, content=content, embedding=vector, created_at=message.created_at,
                        reply_message_id=stored_reply.id if stored_reply else None,
                        surprise=surprise, novelty=novelty, salience=salience,
                    )
                ],
                conn,
            )
            await self._archetype_store.record_matches(
                [MatchRecord(message.scope, message.id, bundle.plan, message.created_at, vector)], conn
            )
            await self.episodes.mark_recalled(message.scope, reply.prompt.episodes_used, now, conn)
            if self.semantic is not None:
                await self.semantic.review(message.scope, reply.prompt.facts_used, now, conn)
        if self.semantic is not None:
            # Only the person's own words: never the bot's reply, never what was just recalled.
            await self.semantic.absorb(message, now)

    async def edit(self, source: str, channel_id: str, external_id: str, new_text: str) -> bool:
        """A person edited a message: update it and the episode derived from it. False when unknown."""
        stored = await self.conversations.find_transport(source, channel_id, external_id)
        if stored is None or stored.is_bot:
            return False
        text = self.validate(new_text)
        vector = await self.embedder.embed(text)
        async with self.conversations.transaction() as conn:
            await self.conversations.set_content(stored.id, text, self.clock.now(), conn)
            episode = await conn.fetchval("SELECT content FROM episodes WHERE message_id = $1", stored.id)
            if episode is not None:
                _, _, rest = episode.partition("\n")
                updated = f"{stored.author_name}: {text}" + (f"\n{rest}" if rest else "")
                await self.episodes.update_source(stored.scope, stored.id, updated, vector, conn)
        return True

    async def drain(self) -> None:
        await self.writer.drain()
