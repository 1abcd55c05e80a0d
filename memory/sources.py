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
    channel_name: str | None = None  # what its channel is called, where the transport or the import said

    def label(self) -> str:
        """The message as a person finds it: channel/id for Discord and imported messages (ids are unique per
        channel; the channel by its #name where one is known), the store's #id for the console's own (its ids are
        generated)."""
        if self.source == "console":
            return f"#{self.id}"
        return f"{'#' + self.channel_name if self.channel_name else self.channel_id}/{self.external_id}"

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "external_id": self.external_id,
            "channel_id": self.channel_id,
            "channel_name": self.channel_name,
            "source": self.source,
        }


async def sources_of(db: asyncpg.Connection | asyncpg.Pool, message_ids: Sequence[int]) -> dict[int, SourceRef]:
    """The user-facing ids of stored messages, by row id."""
    if not message_ids:
        return {}
    rows = await db.fetch(
        "SELECT id, external_id, channel_id, source, author_id, channel_name FROM messages WHERE id = ANY($1::bigint[])",
        list(message_ids),
    )
    return {
        r["id"]: SourceRef(r["id"], r["external_id"], r["channel_id"], r["source"], r["author_id"], r["channel_name"])
        for r in rows
    }
