"""Time in questions: relative phrases count back from when it is asked."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.timeparse import time_range

NOW = datetime(2026, 6, 17, 15, 0, tzinfo=UTC)  # a Wednesday


def d(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(("text", "start", "end"), [
    ("what did Maya do yesterday?", d(2026, 6, 16), d(2026, 6, 17)),
    ("what happened last week?", d(2026, 6, 8), d(2026, 6, 15)),
    ("anything this week?", d(2026, 6, 15), d(2026, 6, 22)),
    ("where did Leo go last month", d(2026, 5, 1), d(2026, 6, 1)),
    ("what did we talk about in May?", d(2026, 5, 1), d(2026, 6, 1)),
    ("plans from November?", d(2025, 11, 1), d(2025, 12, 1)),
    ("what about march 2024", d(2024, 3, 1), d(2024, 4, 1)),
    ("what did Ana cook last Friday?", d(2026, 6, 12), d(2026, 6, 13)),
    ("how was last weekend", d(2026, 6, 13), d(2026, 6, 15)),
    ("what did she say two weeks ago", d(2026, 5, 31), d(2026, 6, 7)),
    ("trips in 2025", d(2025, 1, 1), d(2026, 1, 1)),
])
def test_phrases_give_their_range(text: str, start: datetime, end: datetime) -> None:
    r = time_range(text, NOW)
    assert r is not None and (r.start, r.end) == (start, end), r


@pytest.mark.parametrize("text", ["may I ask what your dog is called?", "what is Maya's job?", "", "I marched on"])
def test_no_time_no_range(text: str) -> None:
    assert time_range(text, NOW) is None


@pytest.mark.parametrize("text", ["what happened 3000 years ago?", "what did we do in december 9999",
                                  "what about may 0000", "99999999999999999999 days ago", "what was 200 years ago",
                                  "in january 1900"])
def test_a_time_outside_the_calendar_is_no_time(text: str) -> None:
    """Issue 32.20: before 1970 or after 2200 (no message can be from then), or beyond Python's calendar
    (which raised OverflowError or "year 10000 is out of range"): no range, no error."""
    assert time_range(text, NOW) is None


def test_a_time_at_the_ends_of_the_calendar_is_still_a_time() -> None:
    assert time_range("what happened in december 2200", NOW) is not None
    r = time_range("what did I say yesterday", d(1970, 1, 2))
    assert r is not None and (r.start, r.end) == (d(1970, 1, 1), d(1970, 1, 2))
