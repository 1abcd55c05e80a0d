"""Streaming a reply into Discord: edit as text arrives, at most about once a second.

The first message is posted when the first text arrives; later text is
edited in no more often than ``interval`` seconds; text beyond Discord's
2,000 characters continues in a new message, cut where a reader would
(``rules.split_message``: paragraphs, lines, sentences; a code block cut in
two is closed and reopened). The final state is always written, whatever the
interval; ``stop`` ends the stream with what is shown. What is posted goes through
``memory.fields.display_text`` (no bidirectional overrides).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

from bot.discord.rules import DISCORD_LIMIT, split_message
from memory.fields import display_text


class Postable(Protocol):
    async def edit(self, *, content: str) -> Any: ...


P = TypeVar("P", bound=Postable)  # what ``send`` returns (a discord.Message in the bot), kept in ``messages``


class StreamingReply(Generic[P]):
    def __init__(
        self,
        send: Callable[[str], Awaitable[P]],
        *,
        interval: float = 1.0,
        limit: int = DISCORD_LIMIT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send = send
        self._interval = interval
        self._limit = limit
        self._clock = clock
        self.messages: list[P] = []
        self._shown: list[str] = []
        self._last_edit = -float("inf")
        self.edits = 0
        self.text = ""
        self.stopped = False
        self._consuming: asyncio.Task[None] | None = None

    def stop(self) -> None:
        """Take no more text (``/stop``): ``run`` returns at once, with what arrived so far written as final."""
        self.stopped = True
        if self._consuming is not None:
            self._consuming.cancel()  # even while waiting for the next token

    async def run(self, deltas: AsyncIterator[str], on_first: Callable[[P], None] | None = None) -> str:
        self._consuming = asyncio.ensure_future(self._consume(deltas, on_first))
        try:
            await self._consuming
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not self.stopped or (current is not None and current.cancelling()):
                raise  # cancelled from outside, not stopped
        finally:
            self._consuming = None
            close = getattr(deltas, "aclose", None)
            if self.stopped and close is not None:
                await close()  # a stopped reply's generator finishes now (its turn is still recorded)
        await self._sync(final=True)
        return self.text

    async def _consume(self, deltas: AsyncIterator[str], on_first: Callable[[P], None] | None) -> None:
        async for delta in deltas:
            self.text += delta
            if not self.messages and self.text.strip():
                await self._sync()
                if on_first is not None and self.messages:
                    on_first(self.messages[0])
            elif self._clock() - self._last_edit >= self._interval:
                await self._sync()

    async def _sync(self, final: bool = False) -> None:
        shown = display_text(self.text).strip()  # what is generated is kept as it is; what is posted is safe
        pieces = split_message(shown or ("…" if final and not self.messages else ""), self._limit)
        pieces = [p for p in pieces if p]
        for i, piece in enumerate(pieces):
            if i < len(self.messages):
                if self._shown[i] != piece:
                    await self.messages[i].edit(content=piece)
                    self._shown[i] = piece
                    self.edits += 1
            else:
                self.messages.append(await self._send(piece))
                self._shown.append(piece)
        self._last_edit = self._clock()

    @property
    def last_shown(self) -> str:
        """What the last posted message says now (its object still holds what was first sent)."""
        return self._shown[-1] if self._shown else ""
