"""Which recalled memories a reply drew on, and the sources line a person sees under it (issue 28).

A reply "draws on" a memory when it carries that memory's answer-bearing words: the reply's content words
that the question did not already contain (stop words, the bot's name and the asker's words aside). A memory
that holds at least half of them (and at least one) is a source; the best three, by how many they hold and
then by recall's order, are shown. A reply whose words all come from the question ("I don't know what
your dog is called") or from nowhere in memory shows nothing: having memories in the prompt is not the test.

Only memories that reached the prompt are candidates, and only their sources that the audience may see
(recall already filtered them on the audience). What the bot itself said is never a source: the episodes
layer gives a person's message as an episode's only source, and bots' messages are never recalled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from memory.layers.base import MemoryItem
from memory.sources import SourceRef

MAX_SOURCES = 3
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


# scikit-learn's English stop words (imported here, at start-up: imported lazily from the event loop while a
# dream step imported scikit-learn in a worker thread, Python's import lock reported a deadlock), and the words
# of not knowing, which carry no answer.
_STOP = frozenset(ENGLISH_STOP_WORDS) | {"don't", "i'm", "it's", "that's", "yes", "yeah", "ok", "okay", "sure",
                                         "remember", "know", "think", "said", "told", "mentioned", "s"}


def content_words(text: str) -> set[str]:
    """Lower-case words of ``text`` that carry content (no stop words; a possessive 's dropped)."""
    out = set()
    for w in _WORD.findall(text.lower().replace("’", "'")):
        w = w.removesuffix("'s")
        if w and w not in _STOP:
            out.add(w)
    return out


def answer_words(reply: str, question: str, *, ignore: Iterable[str] = ()) -> set[str]:
    """The reply's words that could carry an answer: content words the question did not already hold."""
    skip = content_words(question) | {w.lower() for w in ignore}
    return {w for w in content_words(reply) if w not in skip}


@dataclass(frozen=True)
class Grounding:
    items: tuple[MemoryItem, ...]  # the memories the reply drew on, best first
    words: frozenset[str]  # the answer-bearing words that matched

    @property
    def sources(self) -> tuple[SourceRef, ...]:
        seen: dict[int, SourceRef] = {}
        for item in self.items:
            for s in item.sources:
                seen.setdefault(s.id, s)
        return tuple(seen.values())


def ground(reply: str, question: str, items: Sequence[MemoryItem], *, ignore: Iterable[str] = ()) -> Grounding:
    """The memories among ``items`` (in recall's order) that ``reply`` drew on, by the rule above."""
    wanted = answer_words(reply, question, ignore=ignore)
    if not wanted:
        return Grounding((), frozenset())
    need = max(1, (len(wanted) + 1) // 2)
    scored = []
    for rank, item in enumerate(items):
        if not item.sources:
            continue
        shared = wanted & content_words(item.text)
        if len(shared) >= need:
            scored.append((-len(shared), rank, item, shared))
    scored.sort(key=lambda t: (t[0], t[1]))
    chosen = scored[:MAX_SOURCES]
    return Grounding(tuple(t[2] for t in chosen), frozenset(w for t in chosen for w in t[3]))


@dataclass(frozen=True)
class SourceLine:
    """One source as a person sees it: who said it, when, and the ids to find it by."""

    author: str
    when: datetime | None
    ref: SourceRef

    def as_dict(self) -> dict[str, object]:
        return {"author": self.author, "when": self.when.isoformat() if self.when else None,
                **self.ref.as_dict()}


def render_sources(lines: Sequence[SourceLine], *, link: object = None) -> str:
    """'from: ana, 2026-03-01 (#12); bo, 2026-03-04 (#15)': ``link(ref)`` gives a jump link or an id to show."""
    parts = []
    for s in lines:
        when = f", {s.when:%Y-%m-%d}" if s.when else ""
        where = link(s.ref) if callable(link) else f"#{s.ref.external_id}"
        parts.append(f"{s.author}{when} ({where})" if where else f"{s.author}{when}")
    return "from: " + "; ".join(parts) if parts else ""
