"""The persona evidence scorer's words, phrases and regex cues, as data (issue 31): one text file per list.

Each ``<name>.txt`` here holds one entry a line; lines starting with ``#`` (its header: what the list is for and
where its words came from) and blank lines are not entries. Files named ``cues_*`` hold regular expressions,
matched case-insensitively. ``bench/persona_overlap.py`` checks every entry against the evaluation splits.
"""

from __future__ import annotations

import re
from pathlib import Path

LEXICON_DIR = Path(__file__).parent


def entries(name: str) -> tuple[str, ...]:
    """The entries of ``name``.txt, in file order."""
    lines = (LEXICON_DIR / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))


def words(name: str) -> frozenset[str]:
    """The entries of ``name``.txt as a set (for membership tests)."""
    return frozenset(entries(name))


def pairs(name: str) -> frozenset[tuple[str, ...]]:
    """The entries of ``name``.txt, each split into its words ("covered by" -> ("covered", "by"))."""
    return frozenset(tuple(e.split()) for e in entries(name))


def patterns(*names: str) -> tuple[str, ...]:
    """The regex cues of the named ``cues_*.txt`` files, in order."""
    return tuple(p for name in names for p in entries(name))


def cues(*names: str) -> re.Pattern[str]:
    """One case-insensitive pattern matching any cue of the named files."""
    return re.compile("|".join(f"(?:{p})" for p in patterns(*names)), re.I)
