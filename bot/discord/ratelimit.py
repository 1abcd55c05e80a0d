"""A per-person limit on answered messages: at most ``limit`` in any ``window`` seconds.

A sliding window of the times each person was answered. When the limit is hit the person is told once
per window (the notice must not become the spam it stops); the message is then treated as one the bot
does not answer. ``limit`` 0 turns the limit off.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

_TIDY_AT = 4096  # people tracked before those idle for a window are dropped


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    notify: bool = False  # the first refusal of this window: say so, politely
    retry_after: float = 0.0  # seconds until the oldest answer leaves the window


class RateLimiter:
    def __init__(self, limit: int, window: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._answered: dict[int, deque[float]] = {}
        self._told: dict[int, float] = {}  # when each person was last told they hit the limit

    def check(self, person: int) -> Verdict:
        """Count an answer to ``person`` if the limit allows it; else say whether to tell them."""
        if self.limit <= 0:
            return Verdict(True)
        if len(self._answered) > _TIDY_AT:
            self.forget_idle()
        now = self._clock()
        times = self._answered.setdefault(person, deque())
        while times and now - times[0] >= self.window:
            times.popleft()
        if len(times) < self.limit:
            times.append(now)
            self._told.pop(person, None)
            return Verdict(True)
        retry = self.window - (now - times[0])
        told = self._told.get(person)
        if told is not None and now - told < self.window:
            return Verdict(False, False, retry)
        self._told[person] = now
        return Verdict(False, True, retry)

    def forget_idle(self) -> None:
        """Drop people with no answer inside the window (keeps the maps small on a busy server)."""
        now = self._clock()
        for person in [p for p, t in self._answered.items() if not t or now - t[-1] >= self.window]:
            self._answered.pop(person, None)
            self._told.pop(person, None)


def limit_notice(retry_after: float) -> str:
    seconds = max(1, round(retry_after))
    return (
        f"You're sending me messages faster than I can answer them well — I'll be ready for you again in "
        f"about {seconds} second{'s' if seconds != 1 else ''}."
    )
