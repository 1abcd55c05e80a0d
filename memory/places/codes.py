"""Place-like codes and the words of a conversation: pure helpers, no database.

A place's topic code is the mean of its messages' MiniLM vectors (only
messages with enough content words shape it). The deterministic reading of a
conversation lives here too: whether a message asks something, whether it
says a problem was solved ("thanks, that worked", ✅) or was not ("still the
same error"), and which sentences of a helper's message are steps (short
imperative lines) worth keeping in a procedure.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

SUBSTANTIVE_WORDS = 3  # fewer content words than this: the message does not shape a topic code
MAX_STEP_CHARS = 200
MAX_STEPS = 6

SUCCESS, FAILURE = "success", "failure"

# A word with its contraction: "didn't" stays one word (a stopword); "I'll", "we're", "ana's" are their first word
# (``words``), never a word "ll" (P7: a place labelled "ll, favourite, food").
_WORD = re.compile(r"(?:[a-z][a-z0-9+#.\-]*[a-z0-9+#]|[a-z])(?:'(?:t|ll|re|ve|d|s|m)\b)?")
_CONTRACTION = re.compile(r"'(?:ll|re|ve|d|s|m)$")
STOPWORDS = frozenset(
    """
a about above after again all also am an and any are as at be because been before being below between both but by
can could did do does doing don done down during each else even ever every few for from further get gets got had has
have having he her here hers him his how i if in into is it its itself just like me more most my myself no nor not
now of off ok okay on once only or other our ours out over own please same she should so some such than that the
their them then there these they this those through to too under until up us very was we were what when where which
while who whom why will with would you your yours yes yeah hi hey hello thanks thank anyone someone something
really one two know think want need use using used make makes made still any way much many lot lots also maybe
im i'm it's that's there's can't don't doesn't didn't isn't won't
""".split()
)

_SUCCESS = re.compile(
    r"(\bthat (?:worked|did it|fixed it|solved it)\b|\bit works\b|\bworks now\b|\bworking now\b|\bsolved\b|"
    r"\bfixed it\b|\bthat fixed\b|\bproblem solved\b|✅|\bthanks?,? (?:that|it) worked\b|\bworked,? thanks?\b|"
    r"\bworked like a charm\b|\bthat was it\b|\bperfect,? thanks?\b)",
    re.IGNORECASE,
)
_FAILURE = re.compile(
    r"(\bstill (?:get|getting|fails|failing|broken|the same|doesn'?t|does not|not)\b|\bdidn'?t (?:work|help|fix)\b|"
    r"\bdoesn'?t (?:work|help|fix)\b|\bsame (?:error|problem|issue)\b|\bno luck\b|\bnot working\b|"
    r"\bdid not (?:work|help)\b|❌)",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(how|why|what|where|which|who|when|can|could|does|do|is|are|should|anyone|any idea|help)\b", re.IGNORECASE
)
# A sentence ends at . ! or ? right after a word: not at a lone "." ("pip install -e . in the root") or "..".
_SENTENCE = re.compile(r"(?<=[^\s.][.!?])\s+|\n+")
_LEAD = re.compile(
    r"^(?:ok(?:ay)?|so|well|hmm|yeah|yes|no|also|then|and|first|next|finally|now|ah|oh)[,:]?\s+", re.IGNORECASE
)
_SOFT = re.compile(
    r"^(?:(?:you )?(?:should|could|might want to|need to|have to|must)|just|maybe|"
    r"please|i'?d|i would|try to|you can|make sure to|remember to)\s+",
    re.IGNORECASE,
)
# First words that make a sentence an instruction (lower case).
IMPERATIVE = frozenset(
    """
add adjust allow apply bump call change check chmod clean clear close configure copy create delete disable download
drop edit enable export fix flush format give increase install kill launch lower mount move open pass pin point
prune pull put raise re-run rebase rebuild recreate reduce refresh reinstall reload remove rename replace reset
restart restore revert rotate run save scale set source start stop swap switch tighten toggle try turn unplug
update upgrade use wrap write activate append blanch bake boil brush chill cook cover cut deglaze drain feed fold
heat knead let lift mix oil preheat proof rest salt season stir store tune wait warm wash whisk lock unlock map
mark merge mute pair plug re-pair reseat reflash register rerun retune sign squash stash tag uncheck undo unset
verify vacuum analyze reindex dump shoot meter focus shoot stretch deload eat sleep drink breathe hold lean
""".split()
)


# Asking for directions ("where do I ask about X?", "which channel is for X?", "is there a channel for X?"):
# such a message names a topic that is discussed somewhere else.
_DIRECTIONS = re.compile(
    r"\b(?:where (?:do|can|could|should|would|shall) (?:i|we|you|one|people) (?:ask|go|post|get help|find help|"
    r"talk|discuss|put)|which (?:channel|room)|what channel|(?:is|are) there (?:a|any) (?:channel|room)s?|"
    r"right (?:channel|room|place) (?:for|to))\b",
    re.IGNORECASE,
)


def asks_for_directions(text: str) -> bool:
    """Whether ``text`` asks where a topic is discussed (it is not the topic's discussion itself)."""
    return bool(_DIRECTIONS.search(text))


# The words of asking where to go ("where do I ask about", "which channel is for", "who can help with"): a
# "where" question's topic is what is left (the frame itself matches lobby chatter, not the topic's place).
FRAME_WORDS = frozenset(
    """
where which what who whom channel channels room rooms ask asking asked question questions help helping get can
could do does did i i'm me my should here there best someone anyone somebody people talk talking discuss go post
place server is are am the a an to for about with on regarding have has know knows well good right hi hey hello
please any idea ideas one
""".split()
)


def topic_of(text: str) -> str:
    """The topic of a "where do I ask about X?" question: X (the text itself when nothing else is left)."""
    kept = [w for w in re.findall(r"[\w'#+.-]+", text) if w.lower().strip("?.,!") not in FRAME_WORDS]
    topic = " ".join(w.strip("?.,!") for w in kept).strip()
    return topic or " ".join(text.split())


def words(text: str) -> list[str]:
    return [_CONTRACTION.sub("", w) for w in _WORD.findall(text.lower().replace("’", "'"))]


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 1]


def is_substantive(text: str) -> bool:
    """Enough content words to say what a conversation is about."""
    return len(content_words(text)) >= SUBSTANTIVE_WORDS


def is_question(text: str) -> bool:
    t = text.strip()
    return bool(t) and ("?" in t or bool(_QUESTION_START.match(t)))


def outcome(text: str) -> str | None:
    """SUCCESS when the message says a problem was solved, FAILURE when it says an attempt did not work, else
    None. A failure wins ("thanks, but still the same error")."""
    if _FAILURE.search(text):
        return FAILURE
    if _SUCCESS.search(text):
        return SUCCESS
    return None


# Words every help channel says ("that worked", "same problem", "good idea"): never what a place is about.
_LABEL_FILLER = frozenset(
    """
work works worked working fix fixes fixed fixing solve solves solved problem problems issue issues question
questions idea ideas try tries tried trying sure good great nice cool awesome lol thing things stuff help helped
""".split()
)


def label(texts: Iterable[str], n: int = 4) -> str:
    """A place's label: its ``n`` most frequent content words (ties by first appearance), filler left out."""
    counts: Counter[str] = Counter()
    for t in texts:
        # once per message: one chatty message does not win
        counts.update(dict.fromkeys((w for w in content_words(t) if w not in _LABEL_FILLER), 1))
    return ", ".join(w for w, _ in counts.most_common(n))


def steps(text: str) -> list[str]:
    """The instructions in a helper's message, as short imperative lines ("Run `pip install -U x`.").

    A sentence counts when, after a soft lead ("you should", "just", "try to") is dropped, it starts with
    an instruction verb, or it is a line of code in backticks. At most ``MAX_STEPS``.
    """
    out: list[str] = []
    for raw in _SENTENCE.split(text):
        s = raw.strip(" -*•\t")
        if not s or s.endswith("?"):
            continue
        s = _LEAD.sub("", s)
        s = _SOFT.sub("", s)
        first = s.split(maxsplit=1)[0].lower().strip(",.:;`") if s.split() else ""
        code = s.startswith("`") and s.rstrip(".").endswith("`")
        if first in IMPERATIVE or code:
            line = s[0].upper() + s[1:]
            if len(line) > MAX_STEP_CHARS:
                line = line[: MAX_STEP_CHARS - 1].rstrip() + "…"
            if not line.endswith((".", "!", "`", "…")):
                line += "."
            if line not in out:
                out.append(line)
        if len(out) >= MAX_STEPS:
            break
    return out


def advice_step(text: str) -> str:
    """A helper's message kept as one step when no sentence of it reads as an instruction: its statements (not
    its questions) from the start, a soft lead dropped, within ``MAX_STEP_CHARS``."""
    kept = [s for raw in _SENTENCE.split(text) if (s := raw.strip(" -*•\t")) and not s.endswith("?")]
    line = " ".join(kept) or " ".join(text.split())
    line = _SOFT.sub("", _LEAD.sub("", line)) or line
    line = line[0].upper() + line[1:]
    if len(line) > MAX_STEP_CHARS:
        line = line[: MAX_STEP_CHARS - 1].rstrip() + "…"
    return line


def channel_label(channel_id: str) -> str:
    """How a channel is named to people: a Discord mention for a numeric id, else ``#name`` (the console's
    ``console:NAME`` channels by their name)."""
    if channel_id.isdigit():
        return f"<#{channel_id}>"
    return "#" + channel_id.removeprefix("console:").lstrip("#")


_GENERIC_NAME_WORDS = frozenset(
    "help helps helpdesk support chat chats talk talks discuss discussion discussions question questions qa q a "
    "channel general random misc offtopic off topic lounge corner hangout the and of".split()
)


def name_text(name: str | None) -> str | None:
    """A channel's name as the words that say what it is for ("🐍・python-help" -> "python"); None when it has
    none or only words any channel could have ("#general", "#help-chat")."""
    kept = [w for w in re.sub(r"[\W_]+", " ", name or "").split() if w.lower() not in _GENERIC_NAME_WORDS]
    return " ".join(kept) or None
