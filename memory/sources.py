"""Where a memory came from: the store's row id and the id its user knows (a Discord or import id)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

IMPORTED = "import"  # messages.source of what `hippobot import` stored


@dataclass(frozen=True)
class SourceRef:
    """A message something came from, by the store's id and by the id its user knows."""

    id: int
    external_id: str
    channel_id: str
    source: str  # 'discord' | 'console' | 'import'
    author_id: str | None = None  # who said it (the transport's id), where the layer knows: "my ..." is theirs

    def as_dict(self) -> dict[str, object]:
        return {"id": self.id, "external_id": self.external_id, "channel_id": self.channel_id, "source": self.source}


async def sources_of(db: asyncpg.Connection | asyncpg.Pool, message_ids: Sequence[int]) -> dict[int, SourceRef]:
    """The user-facing ids of stored messages, by row id."""
    if not message_ids:
        return {}
    rows = await db.fetch(
        "SELECT id, external_id, channel_id, source, author_id FROM messages WHERE id = ANY($1::bigint[])",
        list(message_ids),
    )
    return {r["id"]: SourceRef(r["id"], r["external_id"], r["channel_id"], r["source"], r["author_id"]) for r in rows}
