"""Time in a question: the stretch of dates it asks about ("last week", "in May", "3 days ago").

``time_range(text, now)`` returns the half-open range [start, end) in UTC a
question refers to, or None. Relative phrases count back from ``now`` (the
time the question is asked); a month without a year is the latest such month
not after ``now``. A phrase whose stretch lies outside the years a message
can be from (memory.fields: 1970-2200; "3000 years ago", "december 9999")
names no time: None, as for a question without one. Recall uses the range to
search the messages of that stretch as one more ranked list
(memory/layers/episodes.py).

``dated(text, said)`` is the other direction: a remembered message's relative
phrases ("yesterday", "last Sunday", "two weeks ago", "next month") with the
day they name from the day it was said, written after them ("yesterday (26
March 2024)"), so a reader asked "when?" weeks later finds the date in the
words instead of counting days (a 270M model cannot).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memory.fields import EARLIEST_YEAR, LATEST_YEAR

MONTHS = {
    name: i
    for i, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}
MONTHS.update({name[:3]: i for name, i in list(MONTHS.items())})
MONTHS.pop("may", None)
MONTHS["may"] = 5
WEEKDAYS = {
    name: i for i, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "couple of": 2,
    "few": 3,
}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

_AGO = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few)\s+"
    r"(day|week|month|year)s?\s+ago\b"
)
_LAST = re.compile(r"\b(last|previous|this|past)\s+(week|month|year|weekend|" + "|".join(WEEKDAYS) + r")\b")
_MONTH = re.compile(
    r"\b(?:in|during|since|by|of|around|early|late|mid)?\s*("
    + "|".join(sorted(MONTHS, key=len, reverse=True))
    + r")\b\.?(?:\s+(\d{4}))?"
)
_YEAR = re.compile(r"\b(?:in|during|of)\s+((?:19|20)\d{2})\b")


@dataclass(frozen=True)
class TimeRange:
    start: datetime
    end: datetime
    phrase: str  # what in the question gave it
    yearless: bool = False  # a month named without a year: the caller may move it to an earlier year

    def years_back(self, n: int) -> TimeRange:
        return TimeRange(
            self.start.replace(year=self.start.year - n),
            self.end.replace(year=self.end.year - n),
            self.phrase,
            self.yearless,
        )


def time_range(text: str, now: datetime) -> TimeRange | None:
    """The stretch of time ``text`` asks about, or None when it names none or one outside the calendar."""
    try:
        when = _time_range(text, now)
    except (OverflowError, ValueError):  # before year 1 or after 9999 ("may 0000"): not a time at all
        return None
    if when is None or not (EARLIEST_YEAR <= when.start.year and when.end.year <= LATEST_YEAR + 1):
        return None  # no message can be from then (memory.fields.check_time)
    return when


def _time_range(text: str, now: datetime) -> TimeRange | None:
    now = now.astimezone(UTC)
    t = text.lower()
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    if m := re.search(r"\byesterday\b", t):
        return TimeRange(today - timedelta(days=1), today, m.group(0))
    if m := re.search(r"\btoday\b|\bthis morning\b|\btonight\b", t):
        return TimeRange(today, today + timedelta(days=1), m.group(0))
    if m := _AGO.search(t):
        n = int(m.group(1)) if m.group(1).isdigit() else _NUMBERS[m.group(1)]
        days = n * _UNIT_DAYS[m.group(2)]
        slack = max(1, days // 4)  # "three weeks ago" is not to the day
        centre = today - timedelta(days=days)
        return TimeRange(centre - timedelta(days=slack), centre + timedelta(days=slack + 1), m.group(0))
    if m := _LAST.search(t):
        which, unit = m.group(1), m.group(2)
        if unit in WEEKDAYS:
            back = (today.weekday() - WEEKDAYS[unit]) % 7 or 7
            day = today - timedelta(days=back)
            return TimeRange(day, day + timedelta(days=1), m.group(0))
        if unit == "weekend":
            saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
            return TimeRange(saturday, saturday + timedelta(days=2), m.group(0))
        monday = today - timedelta(days=today.weekday())
        if unit == "week":
            start = monday if which == "this" else monday - timedelta(days=7)
            return TimeRange(start, start + timedelta(days=7), m.group(0))
        if unit == "month":
            first = today.replace(day=1)
            start = first if which == "this" else (first - timedelta(days=1)).replace(day=1)
            return TimeRange(start, _next_month(start), m.group(0))
        start = datetime(now.year if which == "this" else now.year - 1, 1, 1, tzinfo=UTC)
        return TimeRange(start, start.replace(year=start.year + 1), m.group(0))
    for m in _MONTH.finditer(t):
        name = m.group(1)
        if name == "may" and not _may_is_a_month(t, m):
            continue
        month = MONTHS[name]
        year = int(m.group(2)) if m.group(2) else (now.year if month <= now.month else now.year - 1)
        start = datetime(year, month, 1, tzinfo=UTC)
        return TimeRange(start, _next_month(start), m.group(0).strip(), yearless=not m.group(2))
    if m := _YEAR.search(t):
        start = datetime(int(m.group(1)), 1, 1, tzinfo=UTC)
        return TimeRange(start, start.replace(year=start.year + 1), m.group(0))
    return None


def _next_month(first: datetime) -> datetime:
    return first.replace(year=first.year + 1, month=1) if first.month == 12 else first.replace(month=first.month + 1)


def _may_is_a_month(text: str, m: re.Match[str]) -> bool:
    """'may' the month ("in May", "May 2024"), not the verb ("may I ask")."""
    before = text[: m.start(1)].rstrip().split()[-1:] or [""]
    return bool(m.group(2)) or before[0] in (
        "in",
        "during",
        "since",
        "by",
        "of",
        "around",
        "early",
        "late",
        "mid",
        "last",
        "next",
        "this",
    )


_NUM = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few)"
# A weekday something is moved to ("the picnic moved to Sunday", "can we push it to Friday?") is one to come,
# whatever the tense of the moving: the "to" is read as "on" is, after one of these (a lookbehind for each form).
_MOVE_VERBS = ("move", "push", "postpone", "reschedule", "shift", "bump", "delay", "switch", "change")
_MOVED_OBJECTS = ("", " it", " that", " this", " them", " back", " it back", " forward", " it forward")
_MOVED_TO = (
    "to(?:"
    + "|".join(
        f"(?<={form}{thing} to)"
        for verb in _MOVE_VERBS
        for form in {verb, verb + "d" if verb.endswith("e") else verb + "ed", verb.removesuffix("e") + "ing"}
        for thing in _MOVED_OBJECTS
    )
    + ")"
)
_NO_MONTH = r"(?!\s+(?:of\s+)?(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b)"
_DATED = re.compile(
    r"\b(?:(?P<dby>the day before yesterday)|(?P<dat>the day after tomorrow)|(?P<yday>yesterday|last night)"
    r"|(?P<tmrw>tomorrow)"
    r"|(?P<n>" + _NUM[1:-1] + r")\s+(?P<unit>day|week|month|year)s?\s+(?P<dir>ago|from now|later)"
    r"|(?P<in>in)\s+(?P<inn>" + _NUM[1:-1] + r")\s+(?P<inunit>day|week|month|year)s?(?!\s+(?:ago|from now|later))"
    r"|(?P<rel>last|next)\s+(?P<what>week|weekend|month|year|" + "|".join(WEEKDAYS) + r")"
    # a day of the month: "Friday the 20th", "pushed to Friday the 20th", "on the 3rd" (not "the 3rd of May")
    r"|(?:(?P<nthon>on|this|" + _MOVED_TO + r")\s+)?(?P<nthwd>" + "|".join(WEEKDAYS) + r")\s+the\s+(?P<nth>\d{1,2})"
    r"(?:st|nd|rd|th)" + _NO_MONTH + r"|(?P<onthe>on)\s+the\s+(?P<nth2>\d{1,2})(?:st|nd|rd|th)" + _NO_MONTH + r""
    r"|(?P<on>on|this|" + _MOVED_TO + r")\s+(?P<wd>" + "|".join(WEEKDAYS) + r")(?!\s+the\s+\d)"
    r"|(?P<instead>" + "|".join(WEEKDAYS) + r")(?=\s+instead\b))\b",
    re.I,
)

# What makes a bare weekday ("on Saturday") a day gone by or a habit rather than the next one: the verbs of its
# sentence. English marks the past on the verb (regular -ed, the common irregular forms, was/did/had); a habit by
# a frequency word. Neither: a weekday named with a present or future verb is the next one ("I have a match on
# Saturday", "we're going on Saturday").
_PAST = re.compile(
    r"\b(?:was|were|did|didn't|had|went|got|came|saw|ran|made|took|said|told|met|left|bought|found|gave|felt|"
    r"thought|brought|sent|spent|won|lost|ate|drove|flew|rode|wrote|began|paid|sat|slept|swam|wore|kept|heard|"
    r"[a-z]{2,}ed)\b",
    re.I,
)
_HABIT = re.compile(r"\b(?:always|usually|normally|often|sometimes|never|every|each|most)\b", re.I)
# A past participle after a present "be" is no past ("dinner on Friday is cancelled": a Friday to come)
_PRESENT_PASSIVE = re.compile(
    r"\b(?:is|are|am|be|being|get|gets|getting)\s+(?:\w+ly\s+)?[a-z]{2,}ed\b|'(?:s|re)\s+[a-z]{2,}ed\b", re.I
)
_PRESENT = re.compile(r"\b(?:is|are|am|will|shall|going|gonna|starts?|begins?)\b|'(?:s|re|m|ll)\b", re.I)
# "for the dinner " right before a day: the day belongs to what something was done for, not to the verb's time
_FOR_THE_THING = re.compile(r"\bfor\s+(?:the|a|an|our|my|his|her|their|your)\s+[\w'’-]+(?:\s+[\w'’-]+)?\s+$", re.I)
_SUBCLAUSE = re.compile(r"[,:;\u2013\u2014]")  # a comma, a colon, a dash: where a clause with its own verb starts
_CLAUSE = re.compile(r"[.!?;\n]")
_JOINED = re.compile(r"[.!?;,:\n\u2013\u2014]|\b(?:and|but|so)\b", re.I)  # where a clause of its own starts


_OWNED = re.compile(r"\b(?:my|your|his|her|its|our|their|the|a|that|this|every)\s+$", re.I)


def _day(d: datetime) -> str:
    return f"{d.day} {d:%B %Y}"


def _months(d: datetime, n: int) -> datetime:
    index = d.year * 12 + d.month - 1 + n
    return d.replace(year=index // 12, month=index % 12 + 1, day=1)


def _named(m: re.Match[str], said: datetime) -> str | None:
    day = datetime(said.year, said.month, said.day, tzinfo=UTC)
    g = m.groupdict()
    if g["dby"]:
        return _day(day - timedelta(days=2))
    if g["dat"]:
        return _day(day + timedelta(days=2))
    if g["yday"]:
        return _day(day - timedelta(days=1))
    if g["tmrw"]:
        return _day(day + timedelta(days=1))
    if g["n"]:
        return _forward(g["n"].lower(), g["unit"].lower(), day, -1 if g["dir"].lower() == "ago" else 1)
    if g["on"]:
        return None  # a bare weekday: its direction is the sentence's (``_bare_weekday``)
    back = g["rel"].lower() == "last"
    what = g["what"].lower()
    if what in WEEKDAYS:
        if back:
            return _day(day - timedelta(days=(day.weekday() - WEEKDAYS[what]) % 7 or 7))
        return _day(day + timedelta(days=(WEEKDAYS[what] - day.weekday()) % 7 or 7))
    if what == "week":
        return ("the week before " if back else "the week after ") + _day(day)
    if what == "weekend":
        saturday = (
            day - timedelta(days=(day.weekday() - 5) % 7 or 7)
            if back
            else day + timedelta(days=(5 - day.weekday()) % 7 or 7)
        )
        return "the weekend of " + _day(saturday)
    if what == "month":
        return f"{_months(day, -1 if back else 1):%B %Y}"
    return str(day.year - 1 if back else day.year + 1)


def dated(text: str, said: datetime | None) -> str:
    """``text`` with the day each relative phrase names written after it, in brackets, counted from ``said``
    (the day it was said): "we got him last Sunday" said on 6 April 2024 -> "we got him last Sunday (31 March
    2024)"; a bare weekday ("on Saturday") by its sentence's tense (``_bare_weekday``). Phrases that name no one
    day or stretch ("recently", "on Saturdays", "I always run on Saturday") are left as they are; so is everything without a date to count from, or counting out of the calendar, and a capitalised
    word inside a sentence, which is a title or a name ("reading Tomorrow, and Tomorrow, and Tomorrow")."""
    if said is None:
        return text
    return _DATED.sub(lambda m: f"{m.group(0)} ({day})" if (day := _day_of(text, m, said)) else m.group(0), text)


def resolved(text: str, said: datetime | None) -> str:
    """``text`` with each relative phrase ``dated`` would date replaced by its day ("back from Porto yesterday"
    said on 12 March 2026 -> "back from Porto 11 March 2026"), and with no date to count from, left out: what
    the words say, wherever they are read from (a reply's "yesterday" is another day). A weekday's name says the
    same wherever it is read, and is kept ("next Friday" -> "Friday 27 November 2026", or "Friday")."""

    def day(m: re.Match[str]) -> str:
        if m.group("on") or m.group("instead") or m.group("nthwd"):  # a weekday's name says the same: kept
            named = _day_of(text, m, said) if said is not None else None
            return f"{m.group(0)} {named}" if named else m.group(0)
        weekday = m.group("what") if m.group("rel") and m.group("what").lower() in WEEKDAYS else ""
        if said is None:
            return weekday if _names_a_day(text, m) else m.group(0)
        named = _day_of(text, m, said)
        if named and weekday:  # "next Friday": a Friday, 27 November 2026
            return f"{weekday} {named}"
        return named or m.group(0)

    return _DATED.sub(day, text)


def _names_a_day(text: str, m: re.Match[str]) -> bool:
    """Whether the phrase ``m`` of ``text`` counts days from when it was said: not "my last weekend job" nor "the
    next month or so" (last and next as in final, following), nor a capitalised word inside a sentence."""
    if m.group("rel") and _OWNED.search(text, 0, m.start()):
        return False
    if m.group("instead") or m.group("nthwd"):
        return True  # a weekday's own capital, not a title's
    if m.group(0)[:1].isupper():
        i = m.start() - 1
        while i >= 0 and text[i] in " \t\"'“‘(":
            i -= 1
        return i < 0 or text[i] in ".!?:;\n"
    return True


def _day_of(text: str, m: re.Match[str], said: datetime) -> str | None:
    """The day (or stretch) the phrase ``m`` names, counted from ``said``; None where it names none."""
    if not _names_a_day(text, m):
        return None
    try:
        if m.group("on"):
            return _bare_weekday(text, m, said)
        if m.group("nth") or m.group("nth2"):
            return _day_of_month(text, m, said)
        if m.group("instead"):  # "let's do Saturday instead": another day to come
            day = datetime(said.year, said.month, said.day, tzinfo=UTC)
            return _day(day + timedelta(days=(WEEKDAYS[m.group("instead").lower()] - day.weekday()) % 7 or 7))
        if m.group("in"):
            return _within(text, m, said)
        return _named(m, said)
    except (OverflowError, ValueError):
        return None


def _within(text: str, m: re.Match[str], said: datetime) -> str | None:
    """The day "in two weeks" names, counted forward from ``said``, as "two weeks from now" is; none in a sentence in
    the past, where it is how long something took ("I read it in two weeks")."""
    # its own clause: "I got an offer from Spotify and I start in two weeks" starts in two weeks (P10)
    start = max((c.end() for c in _JOINED.finditer(text, 0, m.start())), default=0)
    end = next((c.start() for c in _JOINED.finditer(text, m.end())), len(text))
    if _PAST.search(text[start:end]) or _HABIT.search(text[start:end]):
        return None
    word = m.group("inn").lower()
    return _forward(word, m.group("inunit").lower(), datetime(said.year, said.month, said.day, tzinfo=UTC))


def _forward(word: str, unit: str, day: datetime, sign: int = 1) -> str | None:
    """The day ``word`` ``unit``s (two weeks) before or after ``day``."""
    n = int(word) if word.isdigit() else _NUMBERS[word]
    if unit == "day":
        return ("around " if word == "few" else "") + _day(day + timedelta(days=sign * n))
    if unit == "week":
        return "around " + _day(day + timedelta(days=sign * 7 * n))
    if unit == "month":
        return f"{_months(day, sign * n):%B %Y}"
    year = day.year + sign * n
    return str(year) if EARLIEST_YEAR <= year <= LATEST_YEAR else None


def _bare_weekday(text: str, m: re.Match[str], said: datetime) -> str | None:
    """The day "on Saturday" or "this Saturday" names, read from its sentence's verbs: the one before the day it was
    said in a sentence in the past ("we went hiking on Saturday"), the next one otherwise ("I'm going hiking on
    Saturday", said on Wednesday 25 November 2026: 28 November); none in a sentence about a habit ("I always run
    on Saturday"). The day it was said is neither: "on Saturday" said on a Saturday names a week away or back."""
    past = _in_past(text, m, moved=m.group("on").lower() == "to")
    if past is None:
        return None
    day = datetime(said.year, said.month, said.day, tzinfo=UTC)
    weekday = WEEKDAYS[m.group("wd").lower()]
    if past:
        return _day(day - timedelta(days=(day.weekday() - weekday) % 7 or 7))
    return _day(day + timedelta(days=(weekday - day.weekday()) % 7 or 7))


def _in_past(text: str, m: re.Match[str], *, moved: bool = False) -> bool | None:
    """Whether the day the phrase ``m`` names is gone by, by its sentence's verbs; None in a sentence about a habit
    ("I always run on Saturday"). The verb of the day's own clause first: "signed the contract, first day is on
    Monday" is a Monday to come; "is cancelled" is a present; a day something is ``moved`` to is to come."""
    start = max((c.end() for c in _CLAUSE.finditer(text, 0, m.start())), default=0)
    end = next((c.start() for c in _CLAUSE.finditer(text, m.end())), len(text))
    sentence = text[start:end]
    if _HABIT.search(sentence):
        return None
    clause = text[max((c.end() for c in _SUBCLAUSE.finditer(text, start, m.start())), default=start) : end]
    if _FOR_THE_THING.search(text, start, m.start()) and not _PAST.search(text, m.end(), end):
        return False  # the day of a thing chosen or bought for ("we picked Luca's for the dinner on the 18th"): ahead
    clause, sentence = _PRESENT_PASSIVE.sub(" is ", clause), _PRESENT_PASSIVE.sub(" is ", sentence)
    past = bool(_PAST.search(clause)) or (not _PRESENT.search(clause) and bool(_PAST.search(sentence)))
    return past and not moved


def _day_of_month(text: str, m: re.Match[str], said: datetime) -> str | None:
    """The day "Friday the 20th" or "on the 3rd" names: that day of the month it was said in, or of the next month
    when that day is gone by (of the month before, in a sentence in the past); with a weekday, the nearest such day
    that falls on it, within a few months (P12: "pushed to Friday the 20th", said on 12 November 2026, was dated the
    next Friday, 13 November)."""
    moved = (m.group("nthon") or "").lower() == "to"
    past = _in_past(text, m, moved=moved)
    if past is None:
        return None
    n = int(m.group("nth") or m.group("nth2"))
    weekday = WEEKDAYS.get((m.group("nthwd") or "").lower())
    day = datetime(said.year, said.month, said.day, tzinfo=UTC)
    for k in range(6):
        month = _months(day, -k if past else k)
        try:
            when = month.replace(day=n)
        except ValueError:
            continue  # no 31st this month
        if (when >= day if past else when <= day) and k == 0 and when != day:
            continue  # on the wrong side of the day it was said
        if weekday is None or when.weekday() == weekday:
            return _day(when)
    return None
