"""The memory layer seam: what every kind of memory provides, and what it is given.

A layer owns its tables, its SQL and its rules. The composition root
registers layers in a list; Recall, the absorber, edits and forgetting
iterate that list and never name a layer. A layer implements what it needs
of ``MemoryLayer`` (``BaseLayer`` supplies the no-op defaults):

- ``recall(query) -> Section | None``: its contribution to one message's
  context, filtered on the query's audience;
- ``absorb(turn)``: what it learns from a finished turn (idempotent: after a
  crash the same message may be absorbed again);
- ``edited(message, conn)``: the message's text changed after it was absorbed
  (inside the edit's transaction), and ``after_edit(message, now)`` after it
  (slow work such as parsing, outside the transaction);
- ``forgetting(conn, message_ids) -> counts``: called inside the forgetting
  transaction before the messages are deleted, to remove copies the database
  cascades cannot reach (caches, text inside other rows) and to count, by kind,
  what goes;
- ``dream_steps()``, ``proposal_kinds()`` and ``proposal_rejections()``: what it
  contributes to the dream cycle and to governance (what approving, and
  rejecting, a proposal of its kinds does);
- ``prepare(texts)`` and ``prepare_absorb(texts)``: optional batch work ahead of
  many recalls or absorptions (a speed-up, never needed for correctness);
  ``absorb_after``: the layers whose absorb of a message must finish first;
- ``signal(signal)``: what a person did to a stored message, from a transport
  (a reaction added or taken back, a direct reply to it);
- ``close()``: stop background work before the pool closes (at shutdown);
- ``install(conn)``: create the tables of a layer that ships outside ``sql/``
  (its own SQL file, idempotent), at start-up under the migration lock; the
  shipped layers' tables are numbered migrations in ``sql/`` and install nothing.

A layer is registered by a ``LayerFactory``: given the ``LayerContext`` (the
pool, the embedder, the proposer and the clock), it returns the layer. The
shipped layers are built in ``bot.app.App.open``; another is one more factory
in ``App.open(layers=[...])``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import asyncpg
import numpy as np

from memory.archetypes import ContextPlan
from memory.conversation import StoredMessage
from memory.sources import SourceRef, sources_of  # noqa: F401  (re-exported: part of the seam)

# Where a section goes in the prompt.
PREAMBLE, MEMORY, TRANSCRIPT = "preamble", "memory", "transcript"


@dataclass(frozen=True)
class Audience:
    """Who will read the reply: a scope, and inside it the channel whose visibility applies.

    ``visible_channel`` is the channel for visibility purposes (a thread's
    parent). None is a public audience: it sees only what everyone in the
    scope may see.
    """

    scope: str
    channel_id: str | None = None  # the conversation (for recent turns)
    visible_channel: str | None = None


@dataclass(frozen=True)
class MemoryItem:
    """One piece of recalled context."""

    kind: str  # the layer's word for it: 'turn', 'episode', 'fact', ...
    score: float | None
    text: str  # as shown to people (CLI, /memory recall)
    prompt_line: str  # as written into the prompt
    message_ids: tuple[int, ...]
    created_at: datetime | None = None
    ref: int | None = None  # the layer's own id, reported back in AbsorbedTurn.used when it reached the prompt
    sources: tuple[SourceRef, ...] = ()
    payload: Any = field(default=None, compare=False, repr=False)  # the layer's own object (not shown)

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "score": None if self.score is None else round(self.score, 4),
            "text": self.text,
            "message_ids": list(self.message_ids),
            "sources": [s.as_dict() for s in self.sources],
            "created_at": self.created_at.isoformat() if self.created_at else None,
        }


@dataclass(frozen=True)
class Section:
    """What one layer contributes: items in its own order (best first), and optional token boosts."""

    layer: str
    title: str  # heading in the prompt ("" for none)
    items: tuple[MemoryItem, ...] = ()
    placement: str = MEMORY  # PREAMBLE | MEMORY | TRANSCRIPT
    priority: int = 50  # lower fills the prompt first
    boosts: Mapping[int, float] = field(default_factory=dict)  # engine token id -> logit boost
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RecallQuery:
    audience: Audience
    text: str
    vector: np.ndarray
    plan: ContextPlan
    now: datetime
    author_id: str | None = None
    before_message_id: int | None = None  # the message being answered (excluded from its own context)
    extra_turns: tuple[StoredMessage, ...] = ()  # replies whose write is still queued
    reply_to: StoredMessage | None = None  # the message this one replies to: in the transcript even when older

    @property
    def scope(self) -> str:
        return self.audience.scope


@dataclass(frozen=True)
class AbsorbedTurn:
    """A finished turn, re-read from the store: a later edit or delete wins over what was generated."""

    message: StoredMessage
    reply: StoredMessage | None
    vector: np.ndarray  # of message.content as it is now
    plan: ContextPlan
    now: datetime
    surprise: float | None = None  # the reply's mean surprise (None after a restart)
    used: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # layer -> item refs that reached the prompt
    entropy: float | None = None  # the reply's mean token entropy in nats (None after a restart)
    novelty: float | None = None  # the message's novelty at recall, 1 - max cosine to the scope's episodes
    # An imported message: its novelty among the messages imported with it, 1 - max cosine to another of them
    # (memory.salience.batch_novelty; None when not known, e.g. absorbed by a later start's backlog).
    batch_novelty: float | None = None


@dataclass(frozen=True)
class Signal:
    """What a person did to a stored message, as a transport saw it: a reaction added or taken back
    (``kind`` 'reaction'), or a direct reply to it ('reply'). Every layer is told (``MemoryLayer.signal``)
    and takes what it learns from: resonance a reply's quality, places a resolved conversation, macros
    whether the procedures a reply suggested worked."""

    kind: str  # 'reaction' | 'reply'
    scope: str  # where it happened: a layer never acts on another scope's message
    source: str  # the transport: 'discord' | 'console'
    channel_id: str
    external_id: str  # the message reacted or replied to, by the transport's id
    actor_id: str
    now: datetime
    message: StoredMessage | None = None  # that message when the transport looked it up and it is this scope's
    emoji: str = ""
    added: bool = True  # False: the reaction was taken back
    verdict: bool | None = None  # the transport's "this worked / is solved" mark (True) or "did not work" (False)


@dataclass
class StepResult:
    """What a layer's dream step did: counts for the report, notes, and a headline in plain words for the
    digest people read ("3 facts consolidated from repeated mentions"; empty when it did nothing worth
    telling)."""

    counts: dict[str, int | float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    headline: str = ""


def told(*parts: tuple[int | float, str]) -> str:
    """A digest headline from ``(count, words)`` pairs, leaving out the zeros; ``{s}`` in the words is "s"
    unless the count is 1: told((3, "fact{s} consolidated"), (0, "pruned")) is "3 facts consolidated"."""
    return "; ".join(f"{n:g} " + words.replace("{s}", "" if n == 1 else "s") for n, words in parts if n)


# A layer's dream step: (now, scope or None for every scope) -> StepResult. The dream
# cycle wraps it (memory never imports dream).
LayerStep = Callable[[datetime, "str | None"], Awaitable[StepResult]]
# A proposal kind's handler: (connection in the deciding transaction, the proposal, approvers) -> applied id.
KindHandler = Callable[[asyncpg.Connection, Any, str], Awaitable[Any]]


@dataclass(frozen=True)
class LayerContext:
    """What the composition root gives a layer's factory: the shared services a layer may keep."""

    pool: asyncpg.Pool
    embedder: Any  # memory.embed.Embedder
    proposer: Any  # memory.proposer.Proposer (governance)
    clock: Any  # memory.clock.Clock


@runtime_checkable
class MemoryLayer(Protocol):
    name: str
    absorb_after: tuple[str, ...]

    async def prepare(self, texts: Sequence[str]) -> None: ...

    async def prepare_absorb(self, texts: Sequence[str]) -> None: ...

    async def signal(self, signal: Signal) -> None: ...

    async def close(self) -> None: ...

    async def recall(self, query: RecallQuery) -> Section | None: ...

    async def absorb(self, turn: AbsorbedTurn) -> None: ...

    async def edited(self, message: StoredMessage, conn: asyncpg.Connection) -> None: ...

    async def after_edit(self, message: StoredMessage, now: datetime) -> None: ...

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]: ...

    def dream_steps(self) -> Sequence[tuple[str, LayerStep]]: ...

    def proposal_kinds(self) -> Mapping[str, KindHandler]: ...

    def proposal_rejections(self) -> Mapping[str, KindHandler]: ...

    async def stats(self, scope: str) -> Mapping[str, object]: ...

    async def install(self, conn: asyncpg.Connection) -> None: ...

    def people_in(self, text: str) -> Sequence[str]: ...

    async def superseded(self, scope: str, message_ids: Sequence[int]) -> Mapping[int, frozenset[int]]: ...

    async def denied(
        self, scope: str, message_ids: Sequence[int], people: Sequence[str]
    ) -> Mapping[int, frozenset[str]]: ...

    async def told_by(
        self, scope: str, author_id: str, now: datetime, *, visible_channel: str | None
    ) -> Sequence[int]: ...

    async def held_from(
        self, scope: str, author_id: str, now: datetime, *, visible_channel: str | None
    ) -> Section | None: ...

    async def pin(self, scope: str, message_id: int, now: datetime) -> int: ...


# Registering a layer: a factory the composition root calls once with the shared services.
LayerFactory = Callable[[LayerContext], MemoryLayer]


class BaseLayer:
    """No-op defaults for every hook; a layer overrides what it needs."""

    name = "base"
    absorb_after: tuple[str, ...] = ()  # layers whose absorb of a message must finish before this one's starts

    async def recall(self, query: RecallQuery) -> Section | None:
        return None

    async def absorb(self, turn: AbsorbedTurn) -> None:
        return None

    async def prepare(self, texts: Sequence[str]) -> None:
        """Optional: batch work ahead of many recalls of these texts (``recall --queries``), e.g. one parse of
        them all; each ``recall`` then finds it done. Never needed for correctness."""
        return None

    async def prepare_absorb(self, texts: Sequence[str]) -> None:
        """Optional: batch work ahead of absorbing many messages of these texts (an import, the backlog)."""
        return None

    async def signal(self, signal: Signal) -> None:
        """Learn from a reaction to, or a reply to, a stored message (``Signal``); most layers take none."""
        return None

    async def close(self) -> None:
        """Stop the layer's background work (a recount, a model being learned) before the pool closes."""
        return None

    async def edited(self, message: StoredMessage, conn: asyncpg.Connection) -> None:
        return None

    async def after_edit(self, message: StoredMessage, now: datetime) -> None:
        return None

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        return {}

    def dream_steps(self) -> Sequence[tuple[str, LayerStep]]:
        return ()

    def proposal_kinds(self) -> Mapping[str, KindHandler]:
        return {}

    def proposal_rejections(self) -> Mapping[str, KindHandler]:
        """What rejecting (or expiring) a proposal of the layer's kinds does, e.g. deleting a candidate."""
        return {}

    async def stats(self, scope: str) -> Mapping[str, object]:
        """What ``/memory stats`` and ``hippobot places --stats`` show of this layer in a scope (label -> value)."""
        return {}

    async def install(self, conn: asyncpg.Connection) -> None:
        """Create what the layer keeps outside the shipped migrations (a layer from another package: its own
        ``CREATE TABLE IF NOT EXISTS ...`` SQL), in a transaction under the migration lock; idempotent."""
        return None

    def people_in(self, text: str) -> Sequence[str]:
        """The names ``text`` uses for people, as this layer's parse finds them ("Where does Aoife live?" ->
        Aoife); the reply guard refuses a question about a person no memory mentions. Most layers parse none."""
        return ()

    async def superseded(self, scope: str, message_ids: Sequence[int]) -> Mapping[int, frozenset[int]]:
        """Of the messages in a prompt's memory, those this layer knows were corrected by others of them (every
        fact one states lost to a newer claim: "I live in Lisbon" beside "I moved to Porto"), each with the
        messages that corrected it; recall leaves such a memory out. Most layers know of none."""
        return {}

    async def denied(
        self, scope: str, message_ids: Sequence[int], people: Sequence[str]
    ) -> Mapping[int, frozenset[str]]:
        """What each of ``message_ids`` says ``people`` ('user:<id>' for a speaker, a name for someone spoken of)
        are not, or no longer ("I moved from Lisbon to Porto": lisbon), in this layer's words for things; a
        reply's "yes" to "do I live in Lisbon?" that the newest such memory denies is a "No." Most layers know
        of none."""
        return {}

    async def told_by(self, scope: str, author_id: str, now: datetime, *, visible_channel: str | None) -> Sequence[int]:
        """The messages of ``author_id``'s that what this layer holds about them as current comes from, those the
        audience may see (``visible_channel`` None: public ones only); "what do you know about me?" quotes them.
        Most layers hold nothing of a person's own."""
        return ()

    async def held_from(
        self, scope: str, author_id: str, now: datetime, *, visible_channel: str | None
    ) -> Section | None:
        """What this layer holds from ``author_id``'s messages, shown to them (``/whatdoyouknow``): a titled list,
        each item with the messages it came from, those the audience may see only. None: nothing of theirs."""
        return None

    async def pin(self, scope: str, message_id: int, now: datetime) -> int:
        """Keep what this layer holds from a message from fading (``/memory pin``); how many of its memories."""
        return 0
