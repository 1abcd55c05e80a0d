"""Time in questions: relative phrases count back from when it is asked."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.timeparse import dated, resolved, time_range

NOW = datetime(2026, 6, 17, 15, 0, tzinfo=UTC)  # a Wednesday


def d(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
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
    ],
)
def test_phrases_give_their_range(text: str, start: datetime, end: datetime) -> None:
    r = time_range(text, NOW)
    assert r is not None and (r.start, r.end) == (start, end), r


@pytest.mark.parametrize("text", ["may I ask what your dog is called?", "what is Maya's job?", "", "I marched on"])
def test_no_time_no_range(text: str) -> None:
    assert time_range(text, NOW) is None


@pytest.mark.parametrize(
    "text",
    [
        "what happened 3000 years ago?",
        "what did we do in december 9999",
        "what about may 0000",
        "99999999999999999999 days ago",
        "what was 200 years ago",
        "in january 1900",
    ],
)
def test_a_time_outside_the_calendar_is_no_time(text: str) -> None:
    """Issue 32.20: before 1970 or after 2200 (no message can be from then), or beyond Python's calendar
    (which raised OverflowError or "year 10000 is out of range"): no range, no error."""
    assert time_range(text, NOW) is None


def test_a_time_at_the_ends_of_the_calendar_is_still_a_time() -> None:
    assert time_range("what happened in december 2200", NOW) is not None
    r = time_range("what did I say yesterday", d(1970, 1, 2))
    assert r is not None and (r.start, r.end) == (d(1970, 1, 1), d(1970, 1, 2))


SAID = datetime(2024, 4, 6, 15, 0, tzinfo=UTC)  # a Saturday


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("we got Pepper last Sunday!", "we got Pepper last Sunday (31 March 2024)!"),
        ("I ran it yesterday", "I ran it yesterday (5 April 2024)"),
        ("two weeks ago we moved", "two weeks ago (around 23 March 2024) we moved"),
        ("see you next Tuesday", "see you next Tuesday (9 April 2024)"),
        ("last weekend was mad", "last weekend (the weekend of 30 March 2024) was mad"),
        ("I quit last month", "I quit last month (March 2024)"),
        ("the op is tomorrow", "the op is tomorrow (7 April 2024)"),
        ("the day before yesterday", "the day before yesterday (4 April 2024)"),
        ("3 days ago", "3 days ago (3 April 2024)"),
        ("a few days ago", "a few days ago (around 3 April 2024)"),
        ("last year", "last year (2023)"),
        ("In two weeks I have my driving test.", "In two weeks (around 20 April 2024) I have my driving test."),
        ("the move is in 3 days", "the move is in 3 days (9 April 2024)"),
        ("I got an offer and I start in two weeks", "I got an offer and I start in two weeks (around 20 April 2024)"),
    ],
)
def test_a_remembered_relative_phrase_shows_the_day_it_names_from_the_day_it_was_said(text: str, shown: str) -> None:
    assert dated(text, SAID) == shown


@pytest.mark.parametrize(
    "text",
    [
        "I moved recently",
        "today was long",
        "my last weekend job",
        "next to the station",
        "I always run on Saturday",
        "we meet on saturdays",
        "I finished the whole series in two weeks",
    ],
)
def test_a_phrase_that_names_no_one_day_is_left_as_it_was_said(text: str) -> None:
    assert dated(text, SAID) == text


def test_without_a_day_said_or_out_of_the_calendar_nothing_is_added() -> None:
    assert dated("yesterday", None) == "yesterday"
    assert dated("9999 years ago", SAID) == "9999 years ago"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("see you on Tuesday", "see you on Tuesday (9 April 2024)"),
        ("this Friday works", "this Friday (12 April 2024) works"),
        ("On Saturday I am going hiking with Sam.", "On Saturday (13 April 2024) I am going hiking with Sam."),
        ("We went hiking on Saturday, it rained.", "We went hiking on Saturday (30 March 2024), it rained."),
        (
            "Call me on Monday. I was out on Sunday.",
            "Call me on Monday (8 April 2024). I was out on Sunday (31 March 2024).",
        ),
        # the day's own clause decides ("signed" is past, the first day to come)
        (
            "so, signed the contract, first day is on Monday",
            "so, signed the contract, first day is on Monday (8 April 2024)",
        ),
        ("I started on Monday, it was great", "I started on Monday (1 April 2024), it was great"),
    ],
)
def test_a_bare_weekday_is_the_next_one_or_by_a_past_verb_the_last_one(text: str, shown: str) -> None:
    """P5: "On Saturday I am going hiking with Sam." said on a Wednesday was answered "the Saturday before ...": a
    weekday named with a present or future verb is the next one, with a past verb the one before, and the day it
    was said (a Saturday, here) is neither."""
    assert dated(text, SAID) == shown


def test_a_weekday_stays_a_word_of_its_memory_when_resolved() -> None:
    """ "the party is on Saturday" still holds "Saturday" for matching (a reply "Saturday at 8pm." draws on it)."""
    assert resolved("the party is on Saturday at 8pm", SAID) == "the party is on Saturday 13 April 2024 at 8pm"
    # P9: "Next Friday." drew on no memory beside "my dentist appointment is next Friday at 3pm"
    assert resolved("my appointment is next Friday at 3pm", SAID) == "my appointment is Friday 12 April 2024 at 3pm"
    assert resolved("see you next Friday", None) == "see you Friday"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # P11: "Update: the picnic moved to Sunday" left the day undated, and "when is the picnic?" got "Sunday."
        ("the picnic moved to Sunday because of rain", "the picnic moved to Sunday (7 April 2024) because of rain"),
        ("can we push it back to Tuesday?", "can we push it back to Tuesday (9 April 2024)?"),
        ("we are rescheduling to Friday", "we are rescheduling to Friday (12 April 2024)"),
        # a present passive is no past: "is cancelled" names the Friday to come, "was cancelled" the one gone by
        # and the day done instead is one to come too
        (
            "Dinner on Friday is cancelled, let's do Saturday instead.",
            "Dinner on Friday (12 April 2024) is cancelled, let's do Saturday (13 April 2024) instead.",
        ),
        ("The match was cancelled on Friday", "The match was cancelled on Friday (5 April 2024)"),
        # "to" before a weekday names no day when nothing was moved
        ("I went to Sunday school", "I went to Sunday school"),
        ("we're off to Sunday lunch at Gran's", "we're off to Sunday lunch at Gran's"),
    ],
)
def test_a_weekday_something_is_moved_to_is_one_to_come(text: str, shown: str) -> None:
    """What is moved to a weekday happens on the next one, whatever the tense of the moving; "is cancelled" is a
    present, not a past, and leaves its weekday the next one."""
    assert dated(text, SAID) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # P12: "pushed to Friday the 20th" said on Friday 12 November was dated Friday 13 November
        ("the gig is pushed to Friday the 12th.", "the gig is pushed to Friday the 12th (12 April 2024)."),
        ("Let's do Sunday the 14th instead.", "Let's do Sunday the 14th (14 April 2024) instead."),
        ("my exam is on the 3rd", "my exam is on the 3rd (3 May 2024)"),
        ("we met on the 3rd", "we met on the 3rd (3 April 2024)"),
        # a month named says the day itself; a weekday that no nearby such day falls on names none
        ("Tom is getting married on the 12th of June", "Tom is getting married on the 12th of June"),
        ("see you Monday the 31st", "see you Monday the 31st"),
    ],
)
def test_a_day_of_the_month_is_dated_by_its_number(text: str, shown: str) -> None:
    """ "Weekday the Nth" and "on the Nth" name that day of this month, or the next one when it is gone by (of the
    month before, in the past), on the weekday named."""
    assert dated(text, SAID) == shown


def test_a_weekday_with_its_date_said_is_not_dated_again_and_getting_married_is_to_come() -> None:
    """A new user's try (the review): "My sister Ines is getting married on Saturday the 12th of December." said on
    Saturday 28 November 2026 was dated "Saturday (21 November 2026)": "married" read as a past verb, and the
    Saturday dated though its date was said beside it."""
    from datetime import UTC, datetime

    said = datetime(2026, 11, 28, 12, tzinfo=UTC)
    text = "My sister Ines is getting married on Saturday the 12th of December."
    assert dated(text, said) == text
    assert dated("she is getting married on Saturday", said) == "she is getting married on Saturday (5 December 2026)"
    assert dated("we got married on Saturday", said) == "we got married on Saturday (21 November 2026)"


def test_the_day_of_a_thing_planned_for_is_ahead_whatever_the_verb() -> None:
    """P13, P14: "we picked Luca's restaurant for the dinner on the 18th", said on 26 November, was dated 18
    November, by "picked"; the dinner is the 18th to come."""
    said = d(2026, 11, 26)
    assert "the 18th (18 December 2026)" in dated("we picked Luca's restaurant for the dinner on the 18th.", said)
    assert "the 18th (18 November 2026)" in dated("We had dinner on the 18th.", said)
    # a past verb after it still says the day is gone by
    assert "(18 September 2026)" in dated("the meeting for the project on Friday the 18th was great", said)
