"""What the bot holds about and from one person, in one scope (issue 29.4: `/memory mine`, `/memory export`).

Plain values in, plain values out: the transports (the Discord cog, the CLI)
format and deliver; every query here is in this module.

What is gathered, for a person in a scope, and only in that scope:

- their **messages** as stored (the bot's replies are not theirs and are left out),
- their **episodes** (an episode's text is the person's own words since sql/018), most recent first,
- **facts** that their messages support, and facts *about* them (an edge touching their node or one of their
  things, ``user:<id>``) that other people's messages support.

Who may see what: the list goes to the person alone (an ephemeral reply, a DM). What they said themselves is
shown wherever they said it, a restricted channel included: it is their own words, shown back to them only.
What *other* people said (a fact about them someone else stated, and that fact's sources) is shown only when
the audience the person asks from may see it, by the rule recall applies (public, or said in the channel
asked from; a thread follows its parent): so asking from a public channel never reveals what was said about
them in a staff channel. A fact's listed sources follow the same rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import asyncpg

from memory.conversation import require_scope
from memory.errors import InvalidInput
from memory.semantic import Fact
from memory.sources import SourceRef

EXPORT_FORMAT = "hippobot-memory-export"
EXPORT_VERSION = 1
ATTACHMENT_LIMIT = 8 * 1024 * 1024  # Discord's upload limit for a bot in a server without boosts
_ENVELOPE_MARGIN = 4096  # room for a part's header fields around its items

FACT, EPISODE, MESSAGE = "fact", "episode", "message"


@dataclass(frozen=True)
class Source:
    """A message an item came from: its ids, when it was said, and whether the person said it."""

    ref: SourceRef
    created_at: datetime
    own: bool

    def as_dict(self, link: str | None) -> dict[str, object]:
        out: dict[str, object] = {
            "message_id": self.ref.external_id,
            "channel_id": self.ref.channel_id,
            "channel_name": self.ref.channel_name,
            "source": self.ref.source,
            "stored_id": self.ref.id,
            "created_at": self.created_at.isoformat(),
            "said_by_you": self.own,
        }
        if link is not None:
            out["link"] = link
        return out


@dataclass(frozen=True)
class HeldItem:
    """One thing the bot holds: a fact, an episode or a stored message, with where it came from."""

    kind: str  # FACT | EPISODE | MESSAGE
    text: str
    created_at: datetime
    sources: tuple[Source, ...]
    restricted: bool = False  # everything it came from was said in a channel only its audience sees
    item_id: int = 0  # the store's id (an edge, an episode or a message)

    def as_dict(self, link: Callable[[SourceRef], str | None]) -> dict[str, object]:
        return {
            "kind": self.kind,
            "id": self.item_id,
            "text": self.text,
            "created_at": self.created_at.isoformat(),
            "restricted": self.restricted,
            "sources": [s.as_dict(link(s.ref)) for s in self.sources],
        }


@dataclass(frozen=True)
class Holdings:
    """Everything held about and from one person in one scope, as one audience may be shown it."""

    scope: str
    person_id: str
    facts: tuple[HeldItem, ...] = ()
    episodes: tuple[HeldItem, ...] = ()
    messages: tuple[HeldItem, ...] = ()
    opted_out: bool | None = None  # None: opting out does not apply here (DMs) or was not asked
    _episode_messages: frozenset[int] = field(default=frozenset(), repr=False)

    @property
    def empty(self) -> bool:
        return not (self.facts or self.episodes or self.messages)

    def listing(self) -> list[HeldItem]:
        """What `/memory mine` pages through: facts, then episodes, then the messages no episode already shows
        (an episode is that message's words), each group most recent first."""
        rest = [m for m in self.messages if m.item_id not in self._episode_messages]
        return [*self.facts, *self.episodes, *rest]

    def items(self) -> list[HeldItem]:
        """Everything, for an export: every fact, episode and message."""
        return [*self.facts, *self.episodes, *self.messages]


def _header(h: Holdings, generated_at: datetime) -> dict[str, object]:
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "scope": h.scope,
        "person_id": h.person_id,
        "generated_at": generated_at.isoformat(),
        "opted_out": h.opted_out,
        "counts": {FACT: len(h.facts), EPISODE: len(h.episodes), MESSAGE: len(h.messages)},
    }


def export_documents(
    h: Holdings,
    generated_at: datetime,
    *,
    link: Callable[[SourceRef], str | None] = lambda _: None,
    limit_bytes: int = ATTACHMENT_LIMIT,
) -> list[bytes]:
    """The export as JSON documents of at most ``limit_bytes`` each (UTF-8).

    One document when it fits; else parts, each a complete document with ``part`` and ``parts``, the items
    split between them in order. An item too large for any part on its own is an InvalidInput (a single
    stored message is far below the limit; this guards a limit set too small).
    """
    header = _header(h, generated_at)
    items = [json.dumps(i.as_dict(link), ensure_ascii=False) for i in h.items()]
    whole = _document(header, items, None)
    if len(whole) <= limit_bytes:
        return [whole]
    budget = limit_bytes - len(_document(header, [], (999_999, 999_999))) - _ENVELOPE_MARGIN
    chunks: list[list[str]] = [[]]
    size = 0
    for text in items:
        n = len(text.encode()) + 2  # ",\n"
        if n > budget:
            raise InvalidInput(f"one {json.loads(text)['kind']} is {n:,} bytes; an export part holds {budget:,}")
        if size + n > budget and chunks[-1]:
            chunks.append([])
            size = 0
        chunks[-1].append(text)
        size += n
    return [_document(header, chunk, (i, len(chunks))) for i, chunk in enumerate(chunks, 1)]


def _document(header: dict[str, object], items: Sequence[str], part: tuple[int, int] | None) -> bytes:
    head = dict(header)
    if part is not None:
        head["part"], head["parts"] = part
    opening = json.dumps(head, ensure_ascii=False, indent=1)[:-2]  # without its closing "\n}"
    body = ",\n  ".join(items)
    return (
        f'{opening},\n "items": [\n  {body}\n ]\n}}\n'.encode() if items else f'{opening},\n "items": []\n}}\n'.encode()
    )


class MemoryOfPerson:
    """Gathers what the bot holds about and from one person (see the module docstring for who sees what)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def gather(
        self, scope: str, person_id: str, *, visible_channel: str | None, opted_out: bool | None = None
    ) -> Holdings:
        """Everything about and from ``person_id`` in ``scope``; what others said only as far as the audience
        of ``visible_channel`` (None: public only) may see it."""
        require_scope(scope)
        if not str(person_id).strip():
            raise InvalidInput("a person id is required")
        person = str(person_id)
        async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            messages = await self._messages(conn, scope, person)
            episodes, covered = await self._episodes(conn, scope, person)
            facts = await self._facts(conn, scope, person, visible_channel)
        return Holdings(scope, person, tuple(facts), tuple(episodes), tuple(messages), opted_out, frozenset(covered))

    @staticmethod
    async def _messages(conn: asyncpg.Connection, scope: str, person: str) -> list[HeldItem]:
        rows = await conn.fetch(
            """SELECT id, external_id, channel_id, source, content, created_at, visible_in, channel_name FROM messages
               WHERE scope = $1 AND author_id = $2 AND NOT is_bot ORDER BY created_at DESC, id DESC""",
            scope,
            person,
        )
        return [
            HeldItem(
                MESSAGE, r["content"], r["created_at"], (_source(r, own=True),), r["visible_in"] is not None, r["id"]
            )
            for r in rows
        ]

    @staticmethod
    async def _episodes(conn: asyncpg.Connection, scope: str, person: str) -> tuple[list[HeldItem], set[int]]:
        rows = await conn.fetch(
            """SELECT e.id AS episode_id, e.content, e.created_at AS episode_at, e.visible_in,
                      m.id, m.external_id, m.channel_id, m.source, m.created_at, m.channel_name
               FROM episodes e JOIN messages m ON m.id = e.message_id
               WHERE e.scope = $1 AND e.author_id = $2 AND m.author_id = $2
               ORDER BY e.created_at DESC, e.id DESC""",
            scope,
            person,
        )
        items = [
            HeldItem(
                EPISODE,
                r["content"],
                r["episode_at"],
                (_source(r, own=True),),
                r["visible_in"] is not None,
                r["episode_id"],
            )
            for r in rows
        ]
        return items, {r["id"] for r in rows}

    @staticmethod
    async def _facts(conn: asyncpg.Connection, scope: str, person: str, visible_channel: str | None) -> list[HeldItem]:
        node = f"user:{person}"
        # An edge is theirs when one of its sources is their message (wherever said), or it touches their node
        # or one of their things and a source the audience may see supports it.
        edges = await conn.fetch(
            """SELECT e.id, e.relation, e.first_seen,
                      s.display AS s_display, s.name AS s_name, s.owner AS s_owner, so.display AS s_owner_name,
                      t.display AS t_display, t.name AS t_name, t.owner AS t_owner, tod.display AS t_owner_name
               FROM kg_edges e JOIN kg_nodes s ON s.id = e.source_id JOIN kg_nodes t ON t.id = e.target_id
               LEFT JOIN kg_nodes so ON so.scope = s.scope AND so.owner = '' AND so.name = s.owner
               LEFT JOIN kg_nodes tod ON tod.scope = t.scope AND tod.owner = '' AND tod.name = t.owner
               WHERE e.scope = $1 AND EXISTS (
                   SELECT 1 FROM kg_edge_sources src WHERE src.edge_id = e.id
                   AND (src.speaker_id = $2
                        OR ((src.visible_in IS NULL OR src.visible_in = $3::text)
                            AND $4 IN (s.name, s.owner, t.name, t.owner))))""",
            scope,
            person,
            visible_channel,
            node,
        )
        if not edges:
            return []
        # Each fact's sources: theirs, and others' only where the audience may see them.
        rows = await conn.fetch(
            """SELECT src.edge_id, src.speaker_id = $2 AS own, src.visible_in,
                      m.id, m.external_id, m.channel_id, m.source, m.created_at, m.channel_name
               FROM kg_edge_sources src JOIN messages m ON m.id = src.message_id AND m.scope = $4
               WHERE src.edge_id = ANY($1::bigint[])
                 AND (src.speaker_id = $2 OR src.visible_in IS NULL OR src.visible_in = $3::text)
               ORDER BY m.created_at, m.id""",
            [e["id"] for e in edges],
            person,
            visible_channel,
            scope,
        )
        sources: dict[int, list[tuple[Source, bool]]] = {}
        for r in rows:
            sources.setdefault(r["edge_id"], []).append((_source(r, own=r["own"]), r["visible_in"] is not None))
        items = []
        for e in edges:
            shown = sources.get(e["id"], [])
            if not shown:
                continue
            when = min(s.created_at for s, _ in shown)
            items.append(
                HeldItem(
                    FACT,
                    _sentence(e),
                    when,
                    tuple(s for s, _ in shown),
                    all(restricted for _, restricted in shown),
                    e["id"],
                )
            )
        items.sort(key=lambda i: (i.created_at, i.item_id), reverse=True)
        return items


def _source(r: asyncpg.Record, *, own: bool) -> Source:
    return Source(
        SourceRef(r["id"], r["external_id"], r["channel_id"], r["source"], channel_name=r["channel_name"]),
        r["created_at"],
        own,
    )


def _sentence(e: asyncpg.Record) -> str:
    """The edge in words, as shown to people (``Fact.sentence``)."""
    return Fact(
        edge_id=e["id"],
        subject=e["s_display"],
        subject_name=e["s_name"],
        relation=e["relation"],
        object=e["t_display"],
        object_name=e["t_name"],
        sentiment=0.0,
        confidence=1.0,
        evidence=1,
        retrievability=1.0,
        message_ids=(),
        speakers=(),
        subject_owner=e["s_owner"],
        object_owner=e["t_owner"],
        subject_owner_name=e["s_owner_name"] or "",
        object_owner_name=e["t_owner_name"] or "",
    ).sentence(readable=True)
