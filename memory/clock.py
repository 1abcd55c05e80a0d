"""Time for the memory stack: the wall clock, or a simulated one that tests and evaluations move forward."""

from __future__ import annotations

import re

import time
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


class ShiftedClock:
    """The wall clock moved to start at ``start``: time runs at its normal pace from there (``--now ISO`` on
    the command line, so a researcher can live a day of next month, or a month in a few commands)."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("a shifted clock needs an aware datetime")
        self._start = start
        self._t0 = time.monotonic()

    def now(self) -> datetime:
        return self._start + timedelta(seconds=time.monotonic() - self._t0)


def parse_instant(text: str) -> datetime:
    """An ISO 8601 instant ('2026-12-24T18:00:00+01:00', '2026-12-24' is midnight UTC); naive means UTC."""
    value = datetime.fromisoformat(re.sub(r"[zZ]$", "+00:00", text.strip()))  # RFC 3339 allows "z" too
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
