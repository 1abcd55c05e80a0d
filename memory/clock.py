"""Time for the memory stack: the wall clock, or a simulated one that tests and evaluations move forward."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class SimulatedClock:
    """Starts at ``start`` and moves only when told: ``advance(days=30)`` is a month of silence."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("a simulated clock needs an aware datetime")
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        self._now += timedelta(**delta)
        return self._now
