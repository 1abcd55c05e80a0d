"""Where a scope's proposals and digests go: each server's own dream channel, or the bot's owner (sql/025).

A server's admins choose its dream channel (``/dream channel set``); the row keeps who chose it and
when. ``HIPPOBOT_DREAM_CHANNEL_ID`` is the owner's channel: proposals and digests about no one server
(global proposals, the DM and console scopes, the nightly digest over every server) go there, and the
server that holds it uses it as its own dream channel until it sets another, so a one-server setup works
as before. With no owner's channel, the owner's posts go to the owner by DM. A server with no channel of
its own (and not holding the owner's) gets nothing posted: its proposals wait in the outbox until it
sets one, never shown in another server, whose approvers could not vote on them anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypeGuard

import asyncpg


@dataclass(frozen=True)
class DreamChannelSetting:
    scope: str
    channel_id: int
    set_by: str
    set_at: datetime


@dataclass(frozen=True)
class Destination:
    """Where one scope's posts go: a channel, or (``channel_id`` None) the owner's DMs."""

    channel_id: int | None
    why: str  # "own", "fallback" (the owner's channel, in its own server) or "owner"

    @property
    def to_owner_dm(self) -> bool:
        return self.channel_id is None


def is_server_scope(scope: str | None) -> TypeGuard[str]:
    """A Discord server's scope is its guild id; everything else (None, ``dm:…``, the console's) is the owner's."""
    return scope is not None and scope.isdigit()


def destination(
    scope: str | None, *, own: int | None, owner_channel: int | None, owner_channel_guild: int | None
) -> Destination | None:
    """Where ``scope``'s proposals and digests go; None: nowhere yet (they wait in the outbox).

    ``own``: the server's stored dream channel; ``owner_channel``: ``HIPPOBOT_DREAM_CHANNEL_ID`` and
    ``owner_channel_guild`` the server it is in (None when the bot cannot see it)."""
    if is_server_scope(scope):
        if own is not None:
            return Destination(own, "own")
        if owner_channel is not None and owner_channel_guild is not None and str(owner_channel_guild) == scope:
            return Destination(owner_channel, "fallback")
        return None
    return Destination(owner_channel, "owner") if owner_channel is not None else Destination(None, "owner")


class DreamChannelStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def get(self, scope: str) -> DreamChannelSetting | None:
        row = await self._pool.fetchrow("SELECT * FROM dream_channels WHERE scope = $1", scope)
        return None if row is None else _setting(row)

    async def channel_id(self, scope: str) -> int | None:
        """The server's own dream channel (one indexed lookup: the chat asks it for every message)."""
        value = await self._pool.fetchval("SELECT channel_id FROM dream_channels WHERE scope = $1", scope)
        return None if value is None else int(value)

    async def all(self) -> dict[str, DreamChannelSetting]:
        return {r["scope"]: _setting(r) for r in await self._pool.fetch("SELECT * FROM dream_channels")}

    async def set(self, scope: str, channel_id: int, by: str, now: datetime) -> None:
        await self._pool.execute(
            """INSERT INTO dream_channels (scope, channel_id, set_by, set_at) VALUES ($1, $2, $3, $4)
               ON CONFLICT (scope) DO UPDATE
               SET channel_id = EXCLUDED.channel_id, set_by = EXCLUDED.set_by, set_at = EXCLUDED.set_at""",
            scope,
            str(channel_id),
            by,
            now,
        )

    async def clear(self, scope: str) -> bool:
        """True when the server had a dream channel of its own."""
        status = await self._pool.execute("DELETE FROM dream_channels WHERE scope = $1", scope)
        return status.split()[-1] != "0"

    async def drop_channel(self, scope: str, channel_id: int) -> bool:
        """A deleted channel stops being its server's dream channel (True when it was)."""
        status = await self._pool.execute(
            "DELETE FROM dream_channels WHERE scope = $1 AND channel_id = $2", scope, str(channel_id)
        )
        return status.split()[-1] != "0"


def _setting(row: asyncpg.Record) -> DreamChannelSetting:
    return DreamChannelSetting(row["scope"], int(row["channel_id"]), row["set_by"], row["set_at"])
