"""What may be stored: identifiers, text and times checked once, with messages a person can act on.

PostgreSQL refuses NUL characters and invalid UTF-8 (a lone surrogate), a
B-tree index refuses very long keys, and Python's datetime overflows near
the ends of its range: each of those would otherwise surface as a
traceback from deep inside the store. Identifiers (scopes, channel, author
and message ids) are refused when malformed; message text is repaired
(NUL removed, a lone surrogate replaced) because losing a person's words
over one bad character would be worse.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

MAX_ID_CHARS = 200  # sql/006_trust.sql's CHECK on messages
EARLIEST_YEAR, LATEST_YEAR = 1970, 2200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


_TERMINAL_CONTROL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]")  # not tab, newline, return
# A terminal escape sequence (ECMA-48): a control sequence (ESC [ or CSI, parameters, one final byte), an
# operating-system command (ESC ] up to BEL or ESC and a backslash) or a short escape (ESC, intermediates, one
# final byte). It formats text and says nothing, so it is removed whole; with only its ESC replaced,
# "\x1b[31mmy colour" was stored as "\ufffd[31mmy colour" and a topic word "mmy" was made of it (P7).
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[ -/]*[0-~]"
)
# Bidirectional embeddings, overrides (U+202A-U+202E) and isolates (U+2066-U+2069) reorder the text that follows
# them ("Trojan Source", CVE-2021-42574): shown by the bot they could make its words, a name or a link read
# differently from what they are. The marks (U+200E, U+200F, U+061C) stay: they reorder no letters, only the
# neutral characters beside them, and right-to-left writers need them to place punctuation.
_BIDI_CONTROL = re.compile("[\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str) -> str:
    """Text as it can be stored: NUL characters dropped, lone surrogates replaced, and control characters other
    than tab and line breaks (escape sequences, bells, which would recolour or clear a terminal that prints the
    text back) replaced by U+FFFD; a whole escape sequence ("\x1b[31m") is removed."""
    text = _TERMINAL_CONTROL.sub("\ufffd", _ESCAPE_SEQUENCE.sub("", text.replace("\x00", "")))
    return text.encode("utf-8", "replace").decode("utf-8")


def display_text(text: str) -> str:
    """Text as the bot may write it (a reply, a name, a proposal, a digest), on Discord or a terminal:
    ``clean_text``'s repairs, and the bidirectional embeddings, overrides and isolates removed. Applied to each
    piece of a stream alike, since it changes single characters only. What is stored keeps the original."""
    return _BIDI_CONTROL.sub("", clean_text(text))


def check_text(text: str | None, what: str, max_chars: int, *, example: str = "") -> str:
    """A text someone asks with (a recall query, a topic), cleaned and stripped; InvalidInput when it is empty
    or longer than ``max_chars``."""
    from memory.errors import InvalidInput

    cleaned = clean_text(text or "").strip()
    if not cleaned:
        raise InvalidInput(f"{what} is empty" + (f"; {example}" if example else ""))
    if len(cleaned) > max_chars:
        raise InvalidInput(f"{what} is {len(cleaned):,} characters long; the limit is {max_chars:,}")
    return cleaned


def clean_name(name: str) -> str:
    """A display name as it can be stored: control characters become spaces, bidirectional embeddings, overrides
    and isolates go (a name is looked up as typed: "cara\u202e" was never found as "cara", P13), cut to the id
    limit."""
    return " ".join(_CONTROL.sub(" ", _BIDI_CONTROL.sub("", clean_text(name))).split())[:MAX_ID_CHARS]


def id_problem(value: str, what: str = "an id", *, max_chars: int = MAX_ID_CHARS) -> str | None:
    """Why ``value`` cannot be an identifier, or None when it can.

    ``max_chars`` is lower where the value is stored with a prefix (the
    console's ``console:NAME``), so the stored id still fits.
    """
    if not value.strip():
        return f"{what} is empty"
    if len(value) > max_chars:
        return f"{what} is {len(value):,} characters long; the limit is {max_chars}"
    if _CONTROL.search(value):
        return f"{what} contains a control character (such as NUL or a line break)"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"{what} is not valid text (a lone surrogate)"
    return None


def check_id(value: str, what: str = "an id") -> str:
    """``value`` as an identifier, or ValueError saying why it cannot be one."""
    if problem := id_problem(value, what):
        raise ValueError(problem)
    return value


def check_time(value: datetime, what: str = "a timestamp") -> datetime:
    """A timezone-aware time in UTC within the years a conversation can have happened."""
    aware = value if value.tzinfo else value.replace(tzinfo=UTC)
    _check_year(aware.year, what)  # first: converting 9999-12-31 at -05:00 to UTC overflows
    utc = aware.astimezone(UTC)
    _check_year(utc.year, what)  # 2200-12-31 at -05:00 is already 2201 in UTC
    return utc


def _check_year(year: int, what: str) -> None:
    if not EARLIEST_YEAR <= year <= LATEST_YEAR:
        raise ValueError(f"{what} in the year {year} is outside {EARLIEST_YEAR}-{LATEST_YEAR}")
