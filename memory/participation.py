"""How the bot takes part in a server's channels, and who opted out of being remembered (sql/024).

A channel's row says its mode (``mention``, ``chat``, ``quiet``) and whether the bot remembers the
conversation it does not answer, each with who set it and when. A thread follows its parent's row.
Opt-outs are kept as digests of (scope, person), so the table names nobody. ``lookup`` answers both
questions for one message in one query.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import asyncpg

from memory.digests import optout_digest

Mode = Literal["mention", "chat", "quiet"]
MODES: tuple[Mode, ...] = ("mention", "chat", "quiet")


@dataclass(frozen=True)
class ChannelSetting:
    """One channel's stored choices; ``mode`` None: never set (the default applies)."""

    channel_id: str
    mode: Mode | None = None
    mode_set_by: str | None = None
    mode_set_at: datetime | None = None
    remember: bool = False
    memory_set_by: str | None = None
    memory_set_at: datetime | None = None


@dataclass(frozen=True)
class Listening:
    """What one message's channel and author allow: the channel's setting and the author's opt-out."""

    setting: ChannelSetting
    opted_out: bool


class ParticipationStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def lookup(self, scope: str, channel_id: str, author_id: str) -> Listening:
        """The channel's setting (a thread: pass its parent) and whether the author opted out, in one query."""
        row = await self._pool.fetchrow(
            """SELECT c.mode, c.mode_set_by, c.mode_set_at, c.remember, c.memory_set_by, c.memory_set_at,
                      EXISTS (SELECT 1 FROM memory_optouts o WHERE o.scope = $1 AND o.digest = $3) AS opted_out
               FROM (SELECT 1) one
               LEFT JOIN channel_settings c ON c.scope = $1 AND c.channel_id = $2""",
            scope,
            channel_id,
            optout_digest(scope, author_id),
        )
        return Listening(_setting(channel_id, row), bool(row["opted_out"]))

    async def setting(self, scope: str, channel_id: str) -> ChannelSetting:
        row = await self._pool.fetchrow(
            """SELECT mode, mode_set_by, mode_set_at, remember, memory_set_by, memory_set_at
               FROM channel_settings WHERE scope = $1 AND channel_id = $2""",
            scope,
            channel_id,
        )
        return _setting(channel_id, row)

    async def settings(self, scope: str) -> dict[str, ChannelSetting]:
        """Every channel of the scope that has a row, by channel id."""
        rows = await self._pool.fetch(
            """SELECT channel_id, mode, mode_set_by, mode_set_at, remember, memory_set_by, memory_set_at
               FROM channel_settings WHERE scope = $1""",
            scope,
        )
        return {r["channel_id"]: _setting(r["channel_id"], r) for r in rows}

    async def set_mode(self, scope: str, channel_id: str, mode: Mode, by: str, now: datetime) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        await self._pool.execute(
            """INSERT INTO channel_settings (scope, channel_id, mode, mode_set_by, mode_set_at)
               VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT (scope, channel_id) DO UPDATE
               SET mode = EXCLUDED.mode, mode_set_by = EXCLUDED.mode_set_by, mode_set_at = EXCLUDED.mode_set_at""",
            scope,
            channel_id,
            mode,
            by,
            now,
        )

    async def set_memory(self, scope: str, channel_id: str, remember: bool, by: str, now: datetime) -> None:
        await self._pool.execute(
            """INSERT INTO channel_settings (scope, channel_id, remember, memory_set_by, memory_set_at)
               VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT (scope, channel_id) DO UPDATE
               SET remember = EXCLUDED.remember, memory_set_by = EXCLUDED.memory_set_by,
                   memory_set_at = EXCLUDED.memory_set_at""",
            scope,
            channel_id,
            remember,
            by,
            now,
        )

    async def drop_channel(self, scope: str, channel_id: str) -> bool:
        """A deleted channel's row goes with it (True when there was one)."""
        status = await self._pool.execute(
            "DELETE FROM channel_settings WHERE scope = $1 AND channel_id = $2", scope, channel_id
        )
        return status.split()[-1] != "0"

    async def opt_out(self, scope: str, author_id: str, now: datetime) -> bool:
        """True when the person was not opted out before."""
        status = await self._pool.execute(
            """INSERT INTO memory_optouts (scope, digest, opted_out_at) VALUES ($1, $2, $3)
               ON CONFLICT DO NOTHING""",
            scope,
            optout_digest(scope, author_id),
            now,
        )
        return status.split()[-1] != "0"

    async def opt_in(self, scope: str, author_id: str) -> bool:
        """True when the person was opted out before."""
        status = await self._pool.execute(
            "DELETE FROM memory_optouts WHERE scope = $1 AND digest = $2", scope, optout_digest(scope, author_id)
        )
        return status.split()[-1] != "0"

    async def opted_out(self, scope: str, author_id: str) -> bool:
        return bool(
            await self._pool.fetchval(
                "SELECT EXISTS (SELECT 1 FROM memory_optouts WHERE scope = $1 AND digest = $2)",
                scope,
                optout_digest(scope, author_id),
            )
        )

    async def optout_count(self, scope: str) -> int:
        return int(await self._pool.fetchval("SELECT count(*) FROM memory_optouts WHERE scope = $1", scope))


def _setting(channel_id: str, row: asyncpg.Record | None) -> ChannelSetting:
    if row is None or row["remember"] is None:  # the LEFT JOIN found no row
        return ChannelSetting(channel_id)
    return ChannelSetting(
        channel_id,
        row["mode"],
        row["mode_set_by"],
        row["mode_set_at"],
        row["remember"],
        row["memory_set_by"],
        row["memory_set_at"],
    )
