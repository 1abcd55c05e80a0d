"""Durable absorption: what every memory layer learns from a message, resumed after a crash.

Each person message records when its memory was absorbed
(``messages.absorbed_at``). ``absorb`` re-reads the message and the bot's
reply by id, so an edit or a delete that landed first wins; it runs every
layer's ``absorb``, logs the archetype match and marks the message absorbed.
Layers are idempotent, so a message interrupted half-way is simply absorbed
again. At start-up ``backlog`` absorbs every person message that never was,
oldest first. Edits fan out over the layers the same way. Absorbing a message,
or following its edit, holds its claim (``ConversationStore.absorbing``, an
advisory lock), so processes sharing the database (shards starting together, an
import beside the bot) absorb each message once.
"""

from __future__ import annotations

import asyncio
import re
import logging
from collections.abc import Callable, Mapping, Sequence
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from memory.archetypes import ArchetypeRouter, ArchetypeStore, MatchRecord
from memory.clock import Clock
from memory.conversation import ConversationStore
from memory.embed import Embedder
from memory.layers.base import AbsorbedTurn, MemoryLayer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AbsorbHints:
    """What the live turn knew that the store does not: the vector of the text it saw, the reply's surprise and
    entropy, the message's novelty at recall, and which items of each layer reached the prompt; or what an
    import knew: the vector, and the message's novelty among the messages imported with it."""

    text: str | None = None
    vector: np.ndarray | None = None
    surprise: float | None = None
    used: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    entropy: float | None = None
    novelty: float | None = None
    batch_novelty: float | None = None


# Asking that something not be passed on ("don't tell anyone", "keep this between us", "this is confidential").
_PRIVATE = re.compile(
    r"\b(?:do not|don'?t|dont|please don'?t) (?:tell|mention (?:it|this) to|share (?:it|this) with|repeat (?:it|this) to)"
    r" (?:anyone|anybody|others|the others|people|a soul)\b"
    r"|\bkeep (?:this|it|that) (?:between us|between you and me|to yourself|secret|private|quiet)\b"
    r"|\bbetween you and me\b|\b(?:this|it) is (?:private|confidential|a secret)\b",
    re.I,
)


def kept_private(text: str) -> bool:
    """Whether a message asks not to be passed on: it is never made a memory another person could recall."""
    return bool(_PRIVATE.search(text.replace("’", "'")))


def absorb_waves(layers: Sequence[MemoryLayer]) -> list[list[MemoryLayer]]:
    """The layers in waves: each wave after every layer its members name in ``absorb_after`` (names of
    layers not registered are ignored; registration order breaks a cycle)."""
    names = {layer.name for layer in layers}
    waiting = list(layers)
    done: set[str] = set()
    waves: list[list[MemoryLayer]] = []
    while waiting:
        ready = [x for x in waiting if set(x.absorb_after) & names <= done] or waiting[:1]
        waves.append(ready)
        done |= {x.name for x in ready}
        waiting = [x for x in waiting if x not in ready]
    return waves


@dataclass
class Absorber:
    conversations: ConversationStore
    layers: Sequence[MemoryLayer]
    router: ArchetypeRouter
    archetypes: ArchetypeStore
    embedder: Embedder
    clock: Clock
    failures: Counter[str] = field(default_factory=Counter)  # layer -> failed absorptions

    async def absorb(self, message_id: int, hints: AbsorbHints | None = None) -> bool:
        """Absorb one person message into every layer; False when it is gone, a bot's, or already absorbed.

        A layer that fails leaves the message unabsorbed (it is retried at the
        next start); the other layers still absorb it.
        """
        async with self.conversations.absorbing(message_id) as mine:
            if not mine:  # another process (a shard, an import) is absorbing it right now
                log.debug("message %s is being absorbed by another process", message_id)
                return False
            return await self._absorb_claimed(message_id, hints or AbsorbHints())

    async def _absorb_claimed(self, message_id: int, hints: AbsorbHints) -> bool:
        # Checked under the claim: a process that held it before us has marked the message absorbed.
        message = await self.conversations.by_id(message_id)
        if message is None or message.is_bot or await self.conversations.is_absorbed(message_id):
            return False
        if kept_private(message.content) and message.visible_in is None and not message.scope.startswith("dm:"):
            # Asked not to be passed on ("my passport number is ..., don't tell anyone", P7: given to anyone who
            # asked): kept in the log (forgetting, export) but never made a memory, and shown to no one again. Said
            # in a restricted channel or a DM, the audience it was said to is already the one it may reach ("keep
            # it secret" in #staff, P8, was then unknown in #staff too): remembered there, as usual.
            log.info("message %s asks to be kept private: not made a memory", message_id)
            await self.conversations.keep_private(message_id, self.clock.now())
            return True
        reply = await self.conversations.reply_to(message_id)
        if hints.vector is not None and hints.text == message.content:
            vector = hints.vector
        else:  # edited since, or a restart: the text as it is now
            vector = await self.embedder.embed(message.content)
        plan = self.router.classify(vector, message.scope)
        now = self.clock.now()
        fresh = hints.text == message.content  # the novelty was measured for this text
        turn = AbsorbedTurn(
            message,
            reply,
            vector,
            plan,
            now,
            hints.surprise,
            hints.used,
            hints.entropy,
            hints.novelty if fresh else None,
            hints.batch_novelty if fresh else None,
        )
        ok = True

        async def one(layer: MemoryLayer) -> None:
            nonlocal ok
            try:
                await layer.absorb(turn)
            except Exception:
                ok = False
                self.failures[layer.name] += 1
                log.exception("memory layer %s could not absorb message %s", layer.name, message_id)

        # Layers are independent, so they absorb at once (their model and database work overlaps on the
        # cores); a layer that reads what another wrote for this message names it in ``absorb_after``.
        for wave in absorb_waves(self.layers):
            await asyncio.gather(*(one(layer) for layer in wave))
        await self.archetypes.record_matches([MatchRecord(message.scope, message.id, plan, message.created_at, vector)])
        if ok:
            await self.conversations.mark_absorbed(message_id, now)
        return ok

    async def prepare(self, texts: Sequence[str]) -> None:
        """Let the layers batch work for messages about to be absorbed (their optional ``prepare_absorb``:
        one spaCy batch instead of a parse per message). Only a speed-up: a failure is logged."""
        results = await asyncio.gather(*(layer.prepare_absorb(texts) for layer in self.layers), return_exceptions=True)
        for layer, result in zip(self.layers, results):
            if isinstance(result, Exception):
                log.warning("preparing absorption failed in %s: %s", layer.name, result)

    async def backlog(self, *, limit: int = 10_000, progress: Callable[[int, int], None] | None = None) -> int:
        """Absorb person messages never absorbed (a crash, a kill), oldest first; at most ``limit`` tried.
        Returns how many this process absorbed: a message another process (a shard starting beside this one)
        claimed first is its to absorb, and is skipped here."""
        total = min(await self.conversations.count_unabsorbed(), limit)
        done = absorbed = 0
        attempted: set[int] = set()
        while done < total:
            ids = [
                i
                for i in await self.conversations.unabsorbed(min(256, total - done) + len(attempted))
                if i not in attempted
            ][: total - done]
            if not ids:
                break
            for message_id in ids:
                attempted.add(message_id)
                absorbed += await self.absorb(message_id)
                done += 1
                if progress is not None:
                    progress(done, total)
        return absorbed

    async def edited(self, message_id: int) -> bool:
        """The text of an absorbed message changed: every layer follows. False when not absorbed yet
        (the pending absorption will read the new text) or gone."""
        # after any absorption of it in flight (in this process or another) has finished: then it is either
        # absorbed, and followed here, or not yet, and its absorption reads the new text
        async with self.conversations.absorbing(message_id, wait=True):
            return await self._follow_edit(message_id)

    async def _follow_edit(self, message_id: int) -> bool:
        message = await self.conversations.by_id(message_id)
        if message is None or message.is_bot or not await self.conversations.is_absorbed(message_id):
            return False
        async with self.conversations.transaction() as conn:
            for layer in self.layers:
                await layer.edited(message, conn)
            vector = await self.embedder.embed(message.content)
            plan = self.router.classify(vector, message.scope)
            await conn.execute("DELETE FROM archetype_matches WHERE message_id = $1", message.id)
            await self.archetypes.record_matches(
                [MatchRecord(message.scope, message.id, plan, message.created_at, vector)], conn
            )
        now = self.clock.now()
        for layer in self.layers:
            try:
                await layer.after_edit(message, now)
            except Exception:
                self.failures[layer.name] += 1
                log.exception("memory layer %s could not follow the edit of message %s", layer.name, message_id)
        return True
