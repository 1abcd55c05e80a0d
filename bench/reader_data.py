"""Training examples for the reader adapter (issue 28), cast into the prompt the bot itself builds.

Every example is a prompt made by ``bot.prompt.PromptBuilder`` from a ``ContextBundle`` shaped like what
recall returns: the persona's preamble lines (self-description, views, what people here think), an episodes
section of dated chat windows (the hit with real chat turns around it), often a facts section of short
triples (the answer's own fact among them, or only unrelated and garbled ones, as the extractor writes
them), sometimes a places section; the recent turns; and the reply the model should write after
``hippobot:``. Three kinds:

- ``answer``: the memory holds the answer; the reply is the answer, briefly (a span of the memory; two
  spans joined for a question about two remembered things; for "when", the day the memory's date and its
  words ("last week") point to).
- ``abstain``: the memory holds related lines but not the answer; the reply says the bot does not know.
- ``chat``: an ordinary turn of a conversation, with unrelated memories in the prompt; the reply is the
  other person's next line, short.

Sources (openly licensed, read offline from ``../shared/data/reader/``; recorded in NOTICE):

- SQuAD 2.0 dev (Rajpurkar, Jia and Liang, 2018; CC BY-SA 4.0): a question over a Wikipedia paragraph
  whose sentences become things people said in a chat; unanswerable questions teach abstention.
- Synthetic-Persona-Chat valid and test (Jandaghi et al., 2023; CC BY 4.0): persona facts ("My favorite
  color is blue.") become what a person said; a question about that person is made from the fact by
  one of the patterns below (the fact removed makes an unanswerable one); the conversations give the
  chat turns.

Names come from ``NAMES`` (none is a name of the memory evaluation's conversations), dates are random,
and nothing here reads bench/data/memory_eval* or any evaluation split.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from bot import kinds
from bot.prompt import PromptBuilder
from dream.themes import gerund
from memory.archetypes import ContextPlan
from memory.layers.base import MEMORY, PREAMBLE, TRANSCRIPT, MemoryItem, Section
from memory.recall import ContextBundle
from memory.timeparse import dated

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "reader"
BOT = "hippobot"
# Training names, chosen apart from every name in bench/data/memory_eval and memory_eval_natural.
NAMES = (
    "Bea",
    "Tariq",
    "Mei",
    "Jonah",
    "Elif",
    "Arjun",
    "Greta",
    "Dmitri",
    "Noor",
    "Pablo",
    "Saanvi",
    "Wren",
    "Kwame",
    "Ilse",
    "Mateo",
    "Zara",
    "Theo",
    "Aiko",
    "Bruno",
    "Leila",
    "Finn",
    "Olga",
    "Ravi",
    "Sunny",
    "Tomasz",
    "Ugo",
    "Vera",
    "Yusuf",
    "Abebe",
    "Carmen",
    "Dana",
    "Emeka",
    "Freya",
    "Gus",
    "Hiro",
    "Iris",
    "Jasper",
    "Keira",
    "Luca",
    "Mina",
    "Nico",
    "Odette",
    "Pavel",
    "Quinn",
    "Rhea",
    "Soren",
    "Talia",
    "Viktor",
    "Willa",
    "Ximena",
    "pixelfox",
    "mossy_pete",
    "juniper",
    "the_real_dev",
    "kat",
    "bolt",
    "sam_w",
    "ranger42",
)
# What a person says around the remembered line, and how a chat line opens.
OPENERS = ("", "", "", "", "ok so ", "lol ", "guess what, ", "ngl ", "honestly ", "so ", "random but ", "btw ")
ABSTAIN = (
    "I don't know. I don't remember anyone mentioning that.",
    "I don't remember anyone telling me that.",
    "I don't know, nobody has told me that.",
)
FILLERS = (
    "oh nice",
    "haha",
    "really?",
    "that's cool",
    "no way",
    "wow",
    "nice one",
    "oh wow",
    "makes sense",
    "interesting",
    "lol",
    "ok",
    "fair enough",
    "same here",
    "huh",
    "love that",
    "sounds great",
    "yeah",
)


@dataclass(frozen=True)
class Mix:
    """How the examples are drawn. ``v2`` is what the shipped v2 adapter was trained on: most of SQuAD's
    unanswerable questions left out, and persona questions losing their fact one time in five (with more, the
    first adapter, three abstentions in ten examples, said "I don't know" to most questions whose answer was in
    its prompt); about one example in seven teaches abstention.

    ``v4`` teaches the difference instead of the rate. A SQuAD 2.0 unanswerable question was written by a
    person looking at its paragraph, and SQuAD records the span that *looks* like its answer; keeping that
    sentence in the memory makes the abstention a near miss (the memory talks about the thing asked about, but
    does not hold what was asked), which is what a question about a detail nobody gave looks like to the bot.
    And every prompt carries as many remembered moments as recall really puts there (six to twelve, not one to
    five), so the answer has to be found among as many distractors as in the bot's prompts.

    ``v5`` makes the memory, not the question, decide between answering and abstaining. v4 answered a fifth
    fewer answerable questions than v2: its persona abstentions were other questions than its answers, so a
    question's wording could predict the reply. In v5 a persona question that abstains is always asked a
    second time with its fact in an otherwise identical prompt (``paired``), and a fact is often remembered as
    the reply to someone's question ("what's your dog called?" / "Pico haha", ``exchange``), which is how
    people give answers in a chat and where a reader has to take the answer from the turn after the words
    that match the question.

    ``v6`` is v4 with questions that name the *kind* of thing the answer is, in other words than the memory's
    ("what does Bea do for fun?" over "I love to play chess"; "what line of work is Bea in?" over "I work as a
    nurse"), which is how people ask about what someone told them and where v4 and v5 said "I don't know" with
    the answer in their prompt. Each is paired like v5's: asked once more without its fact (the person's other
    facts stay), so the memory decides. ``kind_questions`` such questions a conversation row, besides v4's.

    ``v7`` is v6 with remembered lines as recall has shown them since 2026-11-27: a relative day followed by
    the day it names ("I bought a car last Sunday (22 November 2026)", ``memory.timeparse.dated``), and a
    "when" question about it answered with that day, copied, not counted."""

    squad_unanswerable_keep: float = 0.2
    persona_abstain: float = 0.2
    near_miss: bool = False  # an unanswerable SQuAD question keeps the sentence holding its plausible answer
    extra_lines: tuple[int, int] = (0, 3)  # unrelated remembered moments added to a question's memory
    persona_lines: tuple[int, int] = (4, 9)  # how many of a persona question's lines reach the memory
    paired: bool = False  # a persona question that abstains is also asked with its fact in the memory
    exchange: float = 0.0  # how often a remembered fact is the reply to someone's question, often a bare answer
    kind_questions: int = 0  # extra persona questions a row that name the answer's kind, not the fact's words
    dated: bool = False  # remembered lines show the day their relative words name, as recall writes them


MIXES = {
    "v2": Mix(),
    "v4": Mix(squad_unanswerable_keep=0.5, near_miss=True, extra_lines=(3, 8), persona_lines=(6, 12)),
    "v4-lean": Mix(near_miss=True, extra_lines=(3, 8), persona_lines=(6, 12)),  # v4 at v2's share of abstentions
    "v4-abstain": Mix(
        squad_unanswerable_keep=0.9, persona_abstain=0.3, near_miss=True, extra_lines=(3, 8), persona_lines=(6, 12)
    ),
    "v5": Mix(
        squad_unanswerable_keep=0.5,
        persona_abstain=0.3,
        near_miss=True,
        extra_lines=(3, 8),
        persona_lines=(6, 12),
        paired=True,
        exchange=0.35,
    ),
    "v5-lean": Mix(
        squad_unanswerable_keep=0.3,
        persona_abstain=0.3,
        near_miss=True,
        extra_lines=(3, 8),
        persona_lines=(6, 12),
        paired=True,
        exchange=0.35,
    ),
    "v6": Mix(squad_unanswerable_keep=0.5, near_miss=True, extra_lines=(3, 8), persona_lines=(6, 12), kind_questions=1),
    "v7": Mix(
        squad_unanswerable_keep=0.5,
        near_miss=True,
        extra_lines=(3, 8),
        persona_lines=(6, 12),
        kind_questions=1,
        dated=True,
    ),
    "v6-more": Mix(
        squad_unanswerable_keep=0.5,
        near_miss=True,
        extra_lines=(3, 8),
        persona_lines=(6, 12),
        kind_questions=2,
        exchange=0.25,
    ),
}
EPISODES_TITLE = "What {bot} remembers from earlier conversations"
PERSONA = (
    "hippobot is a friendly, curious assistant with a long memory. "
    "It answers briefly and remembers what people tell it."
)


@dataclass(frozen=True)
class Example:
    kind: str  # answer | abstain | chat
    source: str  # squad | persona | chat
    prompt: str
    reply: str


# --- persona facts -> questions ---------------------------------------------------------------------------------

# (pattern over the fact, question templates about a third person {s}, about the asker, answer group)
Pattern = tuple[re.Pattern[str], tuple[str, ...], tuple[str, ...], str]


def _p(rx: str, third: tuple[str, ...], mine: tuple[str, ...], group: str = "x") -> Pattern:
    return re.compile(rx, re.I), third, mine, group


PATTERNS: tuple[Pattern, ...] = (
    _p(
        r"^my favou?rite (?P<k>[a-z ]{2,30}?) (?:is|are) (?P<x>[^.!,]{2,40})[.!]?$",
        (
            "What is {s}'s favorite {k}?",
            "what's {s}'s favourite {k}",
            "do you know {s}'s favorite {k}?",
            "Which {k} does {s} like best?",
        ),
        ("what's my favorite {k}?", "do you remember my favourite {k}?", "What is my favorite {k}?"),
    ),
    _p(
        r"^i work (?:as|at|for|in) (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
        ("Where does {s} work?", "what does {s} do for work?", "What is {s}'s job?", "do you know where {s} works"),
        ("where do I work?", "what's my job again?", "Do you remember what I do for work?"),
    ),
    _p(
        r"^i live (?:in|on|near) (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
        ("Where does {s} live?", "where is {s} based these days?", "Do you know where {s} lives?"),
        ("where do I live?", "Do you remember where I live?"),
    ),
    _p(
        r"^i drive an? (?P<x>[^.!,]{2,40})[.!]?$",
        ("What car does {s} drive?", "what does {s} drive?", "Which car is {s}'s?"),
        ("what car do I drive?", "do you remember what I drive?"),
    ),
    _p(
        r"^i play (?:the )?(?P<x>[^.!,]{2,40})[.!]?$",
        ("What does {s} play?", "what does {s} play in their free time?"),
        ("what do I play?",),
    ),
    _p(
        r"^i have (?P<x>\w+) (?P<k>kids|children|dogs|cats|sisters|brothers|siblings|sons|daughters|"
        r"grandchildren|horses)\b[^.!]*[.!]?$",
        ("How many {k} does {s} have?", "how many {k} has {s} got?"),
        ("how many {k} do I have?",),
    ),
    _p(
        r"^i have an? (?P<k>dog|cat|puppy|kitten|parrot|rabbit|hamster|turtle|snake|horse) (?:named|called) "
        r"(?P<x>[A-Z][\w']+)[^.!]*[.!]?$",
        ("What is the name of {s}'s {k}?", "what's {s}'s {k} called?", "What did {s} name their {k}?"),
        ("what's my {k} called?", "what's the name of my {k}?"),
    ),
    _p(
        r"^i grew up (?:in|on) (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
        ("Where did {s} grow up?", "where was {s} raised?"),
        ("where did I grow up?",),
    ),
    _p(
        r"^i (?:am|'m) from (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
        ("Where is {s} from?", "where does {s} come from?"),
        ("where am I from?",),
    ),
    _p(
        r"^i was born in (?P<x>[^.!,]{2,40})[.!]?$",
        ("When or where was {s} born?", "where was {s} born?"),
        ("where was I born?",),
    ),
    _p(r"^i (?:am|'m) (?P<x>\d{1,3}) years old[.!]?$", ("How old is {s}?", "what age is {s}?"), ("how old am I?",)),
    _p(
        r"^i volunteer (?:at|with|for) (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
        ("Where does {s} volunteer?", "who does {s} volunteer for?"),
        ("where do I volunteer?",),
    ),
    _p(
        r"^i speak (?P<x>[^.!]{2,40})[.!]?$",
        ("What languages does {s} speak?", "which language does {s} speak?"),
        ("what languages do I speak?",),
    ),
    _p(
        r"^i graduated (?:from|with) (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
        ("What did {s} graduate from?", "where did {s} study?"),
        ("where did I graduate from?",),
    ),
    _p(
        r"^my (?P<k>father|mother|dad|mom|mum|wife|husband|sister|brother|son|daughter|boyfriend|girlfriend) "
        r"(?:is|was) an? (?P<x>[^.!,]{2,40})[.!]?$",
        ("What does {s}'s {k} do?", "what is {s}'s {k}'s job?"),
        ("what does my {k} do?",),
    ),
    _p(
        r"^i (?:love|enjoy|like) (?P<x>[^.!,]{3,40})[.!]?$",
        ("What does {s} enjoy?", "what is {s} into?", "What does {s} love doing?"),
        ("what do I enjoy?", "what am I into, do you remember?"),
    ),
    _p(r"^i hate (?P<x>[^.!,]{3,40})[.!]?$", ("What does {s} hate?", "what can't {s} stand?"), ("what do I hate?",)),
    _p(
        r"^i(?: recently)? (?:bought|got) an? (?:new )?(?P<x>[^.!,]{2,40})[.!]?$",
        ("What did {s} buy?", "what did {s} get recently?"),
        ("what did I buy recently?",),
    ),
)


# --- questions that name the answer's kind (v6) --------------------------------------------------------------
# People ask about what someone told them by the kind of thing it was ("what does Bea do for fun?"), not in the
# words it was said in ("I love to play chess"). Written for this file from general English; none is taken from
# an evaluation question. {s} is the person, {k} the pattern's slot.
KIND_QUESTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "activity": (
        (
            "What does {s} do for fun?",
            "what's {s}'s hobby?",
            "How does {s} like to spend their free time?",
            "any idea what {s} does to unwind?",
            "What is {s} into in their spare time?",
            "what keeps {s} busy outside work?",
        ),
        ("what do I do for fun, remember?", "what's my hobby again?", "How do I like to spend my free time?"),
    ),
    "sport": (
        ("What sport is {s} into?", "which sport does {s} follow?", "what's {s}'s sport?"),
        ("what sport am I into?", "Which sport do I follow?"),
    ),
    "instrument": (("Which instrument can {s} play?", "what's {s}'s instrument?"), ("which instrument do I play?",)),
    "music": (
        ("What kind of music is {s} into?", "what does {s} listen to?", "Which band or genre does {s} like?"),
        ("what music am I into?",),
    ),
    "food": (
        ("What food does {s} like?", "what's a favourite thing of {s}'s to eat?", "which dish is {s} a fan of?"),
        ("what food do I like?", "Which dish am I a fan of?"),
    ),
    "animal": (("Which animals is {s} fond of?", "what animal does {s} love?"), ("which animals am I fond of?",)),
    "show": (
        ("What does {s} like to watch or read?", "what kind of films or books is {s} into?"),
        ("what do I like to watch or read?",),
    ),
    "game": (("What game is {s} into?", "which games does {s} go for?"), ("what game am I into?",)),
    "job": (
        (
            "What does {s} do for a living?",
            "what line of work is {s} in?",
            "What's {s}'s occupation?",
            "how does {s} earn a living?",
        ),
        ("what do I do for a living?", "what's my occupation?"),
    ),
    "workplace": (("Where does {s} spend the working day?", "who employs {s}?"), ("who employs me, remember?",)),
    "home": (
        ("Which town is {s} based in?", "where's home for {s}?", "What place does {s} call home?"),
        ("where's home for me, remember?",),
    ),
    "vehicle": (
        ("What vehicle does {s} have?", "what's {s}'s ride?", "what does {s} get around in?"),
        ("what vehicle do I have?",),
    ),
    "pet": (
        ("What's the name of {s}'s pet?", "does {s} have a pet? what's it called?", "what did {s} call their animal?"),
        ("what's my pet's name?",),
    ),
    "childhood": (
        ("Where did {s} spend their childhood?", "where's {s}'s hometown?"),
        ("where did I spend my childhood?",),
    ),
    "origin": (("Where's {s} originally?", "what's {s}'s home country or city?"), ("where am I originally?",)),
    "charity": (("What charity work does {s} do?", "where does {s} help out for free?"), ("where do I help out?",)),
    "languages": (("What languages does {s} know?", "which tongues can {s} manage?"), ("which languages do I know?",)),
    "school": (("Which school did {s} finish?", "where did {s} get their degree?"), ("where did I get my degree?",)),
    "family_job": (
        ("How does {s}'s {k} earn a living?", "what's {s}'s {k}'s line of work?"),
        ("what's my {k}'s line of work?",),
    ),
    "dislike": (
        ("What is {s} not a fan of?", "what does {s} dislike?", "name something {s} can't bear"),
        ("what am I not a fan of?",),
    ),
    "purchase": (("What was {s}'s latest purchase?", "what has {s} bought lately?"), ("what did I buy lately?",)),
}
# The kind a pattern's answer always is (by the pattern's index in PATTERNS); "play" and "love/enjoy/like" answers
# are sorted by ``answer_kinds``; the rest have no kind question.
PATTERN_KINDS = {
    1: "job",
    2: "home",
    3: "vehicle",
    6: "pet",
    7: "childhood",
    8: "origin",
    11: "charity",
    12: "languages",
    13: "school",
    14: "family_job",
    16: "dislike",
    17: "purchase",
}
SORTED_PATTERNS = (4, 15)
# What an answer of a sorted pattern is: MiniLM's cosine to the descriptions of the kinds (bot.kinds, which the
# replies' grounding sorts the memory's words with too).
KIND_DESCRIPTIONS = kinds.KIND_DESCRIPTIONS


def answer_kinds(answers: Sequence[str], *, least: float = 0.3, margin: float = 0.05) -> dict[str, str]:
    """Each answer (lower case) of a sorted pattern -> its kind in KIND_DESCRIPTIONS, where MiniLM's best
    description is at least ``least`` and ``margin`` ahead of the next; unclear answers are left out."""
    import asyncio

    from memory.embed import MiniLMEmbedder

    texts = sorted({a.lower() for a in answers})
    if not texts:
        return {}
    embedder = MiniLMEmbedder()

    async def vectors():
        return await embedder.embed_many(texts), await embedder.embed_many(list(KIND_DESCRIPTIONS.values()))

    a, k = asyncio.run(vectors())
    sims = a @ k.T
    names = list(KIND_DESCRIPTIONS)
    out = {}
    for text, row in zip(texts, sims):
        order = row.argsort()[::-1]
        if row[order[0]] >= least and row[order[0]] - row[order[1]] >= margin:
            out[text] = names[order[0]]
    return out


def _activity(answer: str) -> bool:
    first = answer.lower().split()[0] if answer.split() else ""
    return first == "to" or (first.endswith("ing") and len(first) > 4)


def kind_of(fact: PersonaFact, kinds: Mapping[str, str], rng: random.Random) -> str | None:
    """The kind a question about ``fact`` may name: the pattern's, else (for play / love / enjoy / like) the
    answer's sorted kind or, for something done, "activity" (one of the two at random when both apply)."""
    if fact.pattern in PATTERN_KINDS:
        kind = PATTERN_KINDS[fact.pattern]
        return "workplace" if kind == "job" and not re.search(r"\bwork as\b", fact.text, re.I) else kind
    if fact.pattern not in SORTED_PATTERNS:
        return None
    choices = [k for k in (kinds.get(fact.answer.lower()), "activity" if _activity(fact.answer) else None) if k]
    return rng.choice(choices) if choices else None


def kind_answer(answer: str, own: bool) -> str:
    """The answer as a reply names it: 'to paint in my spare time' -> 'painting in their spare time' ('your'
    when the asker said it)."""
    words = answer.strip().rstrip(".!").split()
    if len(words) > 1 and words[0].lower() == "to":
        words = [gerund(words[1].lower()), *words[2:]]
    return re.sub(r"\bmy\b", "your" if own else "their", " ".join(words), flags=re.I)


@dataclass(frozen=True)
class PersonaFact:
    text: str
    pattern: int  # index into PATTERNS, or -1
    answer: str
    key: str  # the {k} slot, when the pattern has one


def classify_fact(text: str) -> PersonaFact:
    clean = " ".join(text.split()).strip()
    for n, (rx, _, _, group) in enumerate(PATTERNS):
        m = rx.match(clean)
        if m:
            answer = m.group(group).strip()
            key = (m.groupdict().get("k") or "").strip().lower()
            if answer and len(answer.split()) <= 6:
                return PersonaFact(clean, n, answer, key)
    return PersonaFact(clean, -1, "", "")


def load_persona_chat(data: Path = DATA) -> list[tuple[list[PersonaFact], list[PersonaFact], list[tuple[int, str]]]]:
    """(user 1's facts, user 2's facts, the conversation as (speaker 1|2, text)) per row of both files."""
    out = []
    for name in ("synthetic-persona-chat-valid.csv", "synthetic-persona-chat-test.csv"):
        with open(data / name, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                p1 = [classify_fact(t) for t in row["user 1 personas"].split("\n") if t.strip()]
                p2 = [classify_fact(t) for t in row["user 2 personas"].split("\n") if t.strip()]
                turns = []
                for line in row["Best Generated Conversation"].split("\n"):
                    m = re.match(r"^\s*User ([12]):\s*(.+)$", line)
                    if m:
                        turns.append((int(m.group(1)), m.group(2).strip()))
                out.append((p1, p2, turns))
    return out


def load_squad(data: Path = DATA) -> list[dict]:
    """Every SQuAD 2.0 dev question with its paragraph: {title, context, question, answer or None, plausible}
    (``plausible``: for an unanswerable question, the span its writer made look like an answer)."""
    raw = json.loads((data / "squad-v2.0-dev.json").read_text("utf-8"))["data"]
    out = []
    for article in raw:
        for p in article["paragraphs"]:
            for q in p["qas"]:
                answer = None if q.get("is_impossible") or not q["answers"] else q["answers"][0]
                plausible = (q.get("plausible_answers") or [{}])[0].get("text") if answer is None else None
                out.append(
                    {
                        "title": article["title"],
                        "context": p["context"],
                        "question": q["question"].strip(),
                        "answer": answer,
                        "plausible": plausible,
                    }
                )
    return out


# --- casting into the bot's prompt ---------------------------------------------------------------------------


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", " ".join(text.split()))
    return [p.strip() for p in parts if len(p.strip()) > 3]


class Caster:
    """Builds prompts with the real PromptBuilder; ``count`` is the engine's token counter. ``turns`` are chat
    lines (Persona-Chat's) that stand around a remembered line the way neighbouring turns do in recall;
    ``facts`` are (name, persona sentence) pairs that fill the facts section and the preamble with things that
    have nothing to do with the question."""

    def __init__(
        self,
        count: Callable[[str], int],
        rng: random.Random,
        *,
        budget: int = 1000,
        turns: list[str] | None = None,
        facts: list[tuple[str, str]] | None = None,
        dated: bool = False,
    ) -> None:
        self.count = count
        self.dated = dated
        self.rng = rng
        self.builder = PromptBuilder(bot_name=BOT, persona=PERSONA, budget_tokens=budget, count_tokens=count)
        self.plan = ContextPlan(
            archetype="default", turns=8, vectors=5, similarity_threshold=0.9, triple_depth=1, similarity=0.0
        )
        self.turns = turns or list(FILLERS)
        self.facts = facts or []

    def day(self) -> date:
        return date(2019, 1, 1) + timedelta(days=self.rng.randrange(0, 365 * 8))

    def chatty(self, text: str) -> str:
        """A sentence as someone types it in a chat: an opener, sometimes lower case, sometimes no full stop."""
        r = self.rng
        t = text.strip()
        opener = r.choice(OPENERS)
        if opener or r.random() < 0.3:
            t = t[0].lower() + t[1:] if t[:2] != "I " and t[:2] != "I'" else t
        if r.random() < 0.4:
            t = t.rstrip(".")
        return opener + t

    def neighbour(self) -> str:
        r = self.rng
        return r.choice(FILLERS) if r.random() < 0.4 else r.choice(self.turns)

    def episode_line(self, speaker: str, text: str, others: list[str], when: date) -> str:
        """A recalled moment as the episodes layer writes it: '[date] A: ... / B: ... / C: ...' (the hit with a
        neighbouring turn either side, usually)."""
        r = self.rng
        lines = [f"{speaker}: {self.chatty(text)}"]
        if others and r.random() < 0.8:
            lines.insert(0, f"{r.choice(others)}: {self.neighbour()}")
        if others and r.random() < 0.8:
            lines.append(f"{r.choice(others)}: {self.neighbour()}")
        line = " / ".join(lines)
        return f"[{when:%Y-%m-%d}] " + (dated(line, _said_on(when)) if self.dated else line)

    def exchange_line(self, asker: str, question: str, speaker: str, reply: str, others: list[str], when: date) -> str:
        """A remembered exchange: someone asks, the person answers (often in a word or two), sometimes a turn
        after it, as recall shows a hit with its neighbours."""
        r = self.rng
        lines = [f"{asker}: {_casual(question, r)}", f"{speaker}: {reply}"]
        if others and r.random() < 0.5:
            lines.append(f"{r.choice(others)}: {self.neighbour()}")
        return f"[{when:%Y-%m-%d}] " + " / ".join(lines)

    def preamble(self) -> list[MemoryItem]:
        """The persona layer's lines, as a server's bot carries them (most of the time)."""
        r = self.rng
        if r.random() < 0.3:
            return []
        topics = [w for _, t in r.sample(self.facts, min(len(self.facts), 6)) for w in _content_words(t)][:6]
        lines = ["Self-description: " + r.choice(SELF_DESCRIPTIONS)]
        if topics and r.random() < 0.6:
            lines[0] += " People here talk with me most about " + ", ".join(topics[:5]) + "."
        for topic in topics[: r.randint(0, 2)]:
            lean = r.choice(("lean towards", "lean against", "like", "am wary of"))
            lines.append(
                f"View: I {lean} {topic} ({r.uniform(-0.6, 0.6):+.2f}, "
                f"{r.choice(('tentative', 'moderate', 'firm'))}, {r.randint(1, 6)} pieces of evidence)"
            )
        if topics and r.random() < 0.5:
            liked = "; ".join(f"{t} ({r.randint(2, 6)} like it)" for t in topics[-3:])
            lines.append(f"What people here think: {liked}")
        return [MemoryItem("persona", None, line, line, ()) for line in lines]

    def fact_lines(self, names: list[str], asker: str, keep: Sequence[tuple[str, str]] = ()) -> list[str]:
        """The facts section: ``keep`` (name, sentence) as triples, with unrelated and garbled ones."""
        r = self.rng
        chosen = list(keep)
        chosen += [(r.choice(names), t) for _, t in r.sample(self.facts, min(len(self.facts), r.randint(0, 3)))]
        lines = [_triple(name, text, asker, r) for name, text in chosen]
        if r.random() < 0.4:  # the extractor's noise: two words of a chat line and a name
            words = _content_words(r.choice(self.turns)) or ["evening"]
            lines.append(
                f"{r.choice(words)} named {r.choice(names)}"
                if r.random() < 0.5
                else f"{r.choice(names)} {' '.join(words[:3])}"
            )
        lines = [x for x in lines if x]
        r.shuffle(lines)
        return lines

    def build(
        self,
        memory_lines: list[str],
        turns: list[tuple[str, str]],
        asker: str,
        text: str,
        *,
        names: Sequence[str] = (),
        facts: Sequence[tuple[str, str]] = (),
    ) -> str:
        """The prompt. ``facts`` (name, sentence) go into the facts section too, always when given and with
        unrelated facts around them; without them the section holds unrelated ones, half the time."""
        r = self.rng
        items = tuple(MemoryItem("episode", None, line, line, ()) for line in memory_lines)
        sections = [Section("episodes", EPISODES_TITLE, items, placement=MEMORY, priority=20)]
        pre = self.preamble()
        if pre:
            sections.append(Section("persona", "", tuple(pre), placement=PREAMBLE, priority=1))
        names = list(names) or [asker]
        if facts or r.random() < 0.5:
            lines = self.fact_lines(names, asker, facts)
            if lines:
                sections.append(
                    Section(
                        "facts",
                        FACTS_TITLE,
                        tuple(MemoryItem("fact", None, x, x, ()) for x in lines),
                        placement=MEMORY,
                        priority=30,
                    )
                )
        if r.random() < 0.25:
            words = _content_words(r.choice(self.turns))[:4] or ["plans"]
            line = (
                f"Discussed in #{r.choice(CHANNELS)}: about {', '.join(words)} (fit {r.uniform(0.4, 0.9):.2f}); "
                f"{r.randint(0, 9)} of {r.randint(10, 60)} question(s) there resolved"
            )
            sections.append(
                Section(
                    "places", PLACES_TITLE, (MemoryItem("place", None, line, line, ()),), placement=MEMORY, priority=80
                )
            )
        if turns:
            t = tuple(MemoryItem("turn", None, f"{a}: {b}", f"{a}: {b}", ()) for a, b in turns)
            sections.append(Section("turns", "Conversation", t, placement=TRANSCRIPT, priority=0))
        bundle = ContextBundle(scope="train", plan=self.plan, sections=tuple(sections))
        return self.builder.build(bundle, asker, text).text


FACTS_TITLE = "What {bot} knows"
PLACES_TITLE = "Where this is discussed"
CHANNELS = ("general", "chat", "random", "help", "music", "games", "food", "pets", "books", "off-topic")
SELF_DESCRIPTIONS = (
    "I am still forming my views here. I weigh what people tell me on its evidence: figures with sources, "
    "expert findings and sound arguments move me; repetition, insistence and popularity do not.",
    "I am a curious assistant who remembers what people here tell me. I change my mind when the evidence "
    "is good, and I say so when I disagree.",
    "I like hearing about people's lives and I keep track of what they tell me.",
    "I try to be helpful and honest, and I say when I do not know something.",
)
_STOP = frozenset(
    """a an the i my me we our you your he she it they them his her their is am are was were be been
to of in on at for with and or but so that this those these do does did have has had not no just really very
too also like love get got go going can could would will im i'm i've don't it's there here what when where who
how about from out up all some any more most one""".split()
)


def _content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z][a-z']+", text.lower()) if w not in _STOP and len(w) > 2]


def _triple(name: str, sentence: str, asker: str, rng: random.Random) -> str:
    """A persona sentence as the facts layer writes a triple: 'Bea have dog named Pico', with 'you told me: '
    when the asker said it, sometimes 'others said: ' when someone else did."""
    t = " ".join(sentence.strip().rstrip(".!").split())
    t = re.sub(r"^(?:I am|I'm)\b", f"{name} be", t)
    t = re.sub(r"^I\b", name, t)
    t = re.sub(r"^[Mm]y\b", f"{name}'s", t)
    t = re.sub(r"\b(?:a|an|the|really|very)\s", "", t)
    t = re.sub(r"\bmy\b", f"{name}'s", t)
    if not t or len(t.split()) > 12:
        return ""
    if name == asker:
        return ("you told me: " if rng.random() < 0.7 else "") + t
    return ("others said: " if rng.random() < 0.5 else "") + t


def _casual(question: str, rng: random.Random) -> str:
    q = question
    if rng.random() < 0.3:
        q = q[0].lower() + q[1:]
    if rng.random() < 0.2:
        q = q.rstrip("?")
    if rng.random() < 0.15:
        q = rng.choice(("hey, ", "quick one: ", "hmm ", "remind me, ")) + q[0].lower() + q[1:]
    return q


_YOU = (
    (r"\bam I\b", "are you"),
    (r"\bwas I\b", "were you"),
    (r"\bI\b", "you"),
    (r"\bmy\b", "your"),
    (r"\bMy\b", "Your"),
)


def _to_you(question: str) -> str:
    """'what's my dog called?' -> 'what's your dog called?': a question about the asker, put to someone else."""
    for rx, you in _YOU:
        question = re.sub(rx, you, question)
    return question


def _bare_reply(answer: str, sentence: str, rng: random.Random) -> str:
    """How a person answers a question about themselves in a chat: the answer alone, or with a word around it,
    or the whole sentence."""
    a = answer.strip().rstrip(".")
    shapes = ("{a}", "{a}!", "{a} haha", "oh, {a}", "{a} actually", "{a} lol", "{a}, why?", "{s}", "{s}")
    shape = rng.choice(shapes)
    return shape.format(a=a, s=sentence.strip()) if "{s}" in shape else shape.format(a=a)


def _brief(answer: str) -> str:
    a = answer.strip().rstrip(".")
    return (a[0].upper() + a[1:] if a and not a[0].isupper() else a) + "."


def squad_examples(
    caster: Caster, rows: list[dict], persona_lines: list[tuple[str, str]], mix: Mix = Mix()
) -> Iterator[Example]:
    r = caster.rng
    by_title: dict[str, list[dict]] = {}
    for row in rows:
        by_title.setdefault(row["title"], []).append(row)
    for row in rows:
        names = r.sample(NAMES, 5)
        asker, speakers = names[0], names[1:]
        sents = sentences(row["context"])
        if not sents:
            continue
        answer = row["answer"]
        if answer is not None:
            start = answer["answer_start"]
            # the sentence holding the answer (by character offset in the joined text)
            offset, holder = 0, None
            joined = " ".join(row["context"].split())
            for s in sents:
                at = joined.find(s, offset)
                if at <= start < at + len(s) + 1 and answer["text"] in s:
                    holder = s
                    break
                offset = max(offset, at)
            if holder is None:
                holder = next((s for s in sents if answer["text"] in s), None)
            if holder is None or len(holder.split()) > 60:
                continue
            evidence = [holder]
            rest = [s for s in sents if s != holder and answer["text"] not in s]
        else:
            if r.random() < 1 - mix.squad_unanswerable_keep:  # (v2 drew it this way)
                continue
            evidence = []
            rest = [s for s in sents if len(s.split()) <= 60]
            if mix.near_miss and row.get("plausible"):  # the sentence that looks like it answers
                evidence = [s for s in rest if row["plausible"] in s][:1]
                rest = [s for s in rest if s not in evidence]
        same_article = [
            s
            for other in by_title[row["title"]]
            if other["context"] != row["context"]
            for s in sentences(other["context"])[:2]
        ]
        pool = r.sample(rest, min(len(rest), r.randint(1, 3))) + r.sample(
            same_article, min(len(same_article), r.randint(0, 2))
        )
        pool = [s for s in pool if len(s.split()) <= 60 and (answer is None or answer["text"] not in s)]
        if answer is None and not pool:
            continue
        lines = [(r.choice(speakers), s) for s in evidence + pool]
        lines += r.sample(persona_lines, r.randint(*mix.extra_lines))
        r.shuffle(lines)
        mem = [caster.episode_line(sp, tx, speakers, caster.day()) for sp, tx in lines]
        prompt = caster.build(mem, [], asker, _casual(row["question"], r), names=names)
        if answer is not None:
            yield Example("answer", "squad", prompt, _brief(answer["text"]))
        else:
            yield Example("abstain", "squad", prompt, r.choice(ABSTAIN))


def persona_examples(
    caster: Caster, chats: list, persona_lines: list[tuple[str, str]], mix: Mix = Mix()
) -> Iterator[Example]:
    """One question per conversation row: about a fact of user 1 or 2 (or the asker's own); one time in five
    the fact (and every fact of the same kind of that person) is left out of the memory: abstain. The fact
    goes into the facts section as well half the time, and one time in seven only there (its episode has
    decayed). When the person has two facts of the question's kind, both stay and the answer names both."""
    r = caster.rng
    for p1, p2, _ in chats:
        people = [p1, p2]
        r.shuffle(people)
        names = r.sample(NAMES, 4)
        who = {0: names[0], 1: names[1]}
        target_person = 0
        askable = [f for f in people[0] if f.pattern >= 0]
        if not askable:
            continue
        fact = r.choice(askable)
        twins = [f for f in people[0] if f.pattern == fact.pattern and f.key == fact.key]
        answers = twins[:2] if len(twins) >= 2 else [fact]
        own = r.random() < 0.3  # the asker asks about their own fact
        asker = who[0] if own else names[2]
        abstain = r.random() < mix.persona_abstain
        lines: list[tuple[str, str]] = []
        for n, facts in enumerate(people):
            for f in facts:
                if n == target_person and f.pattern == fact.pattern and (abstain or f not in answers):
                    continue
                lines.append((who[n], f.text))
        lines += r.sample(persona_lines, r.randint(*mix.extra_lines))
        r.shuffle(lines)
        low, high = mix.persona_lines
        lines = lines[: r.randint(low, high)] if len(lines) > low else lines
        evidence = [(who[0], f.text) for f in answers]
        if not abstain:
            for e in evidence:
                if e not in lines:
                    lines[r.randrange(len(lines))] = e
        only_fact = not abstain and len(answers) == 1 and r.random() < 1 / 7
        if only_fact:
            lines = [x for x in lines if x not in evidence] or [r.choice(persona_lines)]
        in_facts = [] if abstain else evidence if only_fact or r.random() < 0.5 else []
        others = [names[1], names[3], asker]
        mem = [caster.episode_line(sp, tx, [o for o in others if o != sp], caster.day()) for sp, tx in lines]
        _, third, mine, _ = PATTERNS[fact.pattern]
        template = r.choice(mine if own else third)
        question = _casual(template.format(s=who[0], k=fact.key or "thing"), r)
        prompt = caster.build(mem, [], asker, question, names=names, facts=in_facts)
        if abstain:
            yield Example("abstain", "persona", prompt, r.choice(ABSTAIN))
        else:
            yield Example("answer", "persona", prompt, _brief(" and ".join(f.answer for f in answers)))


def paired_persona_examples(
    caster: Caster, chats: list, persona_lines: list[tuple[str, str]], mix: Mix, kinds: Mapping[str, str] | None = None
) -> Iterator[Example]:
    """v5's persona questions: as ``persona_examples``, but the prompt without the asked fact is built first
    (the person's other facts stay: a near miss), and the answerable prompt is that same prompt with the fact
    in one of its remembered moments, built from the same random draws. A question that abstains (``mix
    .persona_abstain`` of them) is asked in both prompts, so only the memory tells the two replies apart. The
    fact is, ``mix.exchange`` of the time, remembered as the person's reply to someone's question.

    With ``kinds`` (v6; ``answer_kinds``) the question names the kind of thing asked for (KIND_QUESTIONS), and
    only facts with a kind are asked about."""
    r = caster.rng
    for p1, p2, _ in chats:
        people = [p1, p2]
        r.shuffle(people)
        names = r.sample(NAMES, 4)
        who = {0: names[0], 1: names[1]}
        kind_by_fact = {f.text: kind_of(f, kinds, r) for f in people[0]} if kinds is not None else {}
        askable = [f for f in people[0] if (kind_by_fact.get(f.text) if kinds is not None else f.pattern >= 0)]
        if not askable:
            continue
        fact = r.choice(askable)
        kind = kind_by_fact.get(fact.text)
        twins = [
            f for f in people[0] if f.pattern == fact.pattern and f.key == fact.key and kind_by_fact.get(f.text) == kind
        ]
        answers = twins[:2] if len(twins) >= 2 else [fact]
        own = r.random() < 0.3
        asker = who[0] if own else names[2]
        abstain = r.random() < mix.persona_abstain
        lines = [
            (who[n], f.text)
            for n, facts in enumerate(people)
            for f in facts
            if not (n == 0 and f.pattern == fact.pattern)
        ]
        lines += r.sample(persona_lines, r.randint(*mix.extra_lines))
        r.shuffle(lines)
        low, high = mix.persona_lines
        lines = lines[: r.randint(low, high)] if len(lines) > low else lines
        others = [names[1], names[3], asker]
        base = [caster.episode_line(sp, tx, [o for o in others if o != sp], caster.day()) for sp, tx in lines]
        _, third, mine, _ = PATTERNS[fact.pattern]
        evidence: list[str] = []
        exchanged = len(answers) == 1 and r.random() < mix.exchange
        if exchanged:
            ask = [q for q in mine if "remember" not in q] or list(mine)
            by = r.choice([o for o in others if o != who[0]])
            evidence.append(
                caster.exchange_line(
                    by,
                    _to_you(r.choice(ask).format(k=fact.key or "thing")),
                    who[0],
                    _bare_reply(fact.answer, caster.chatty(fact.text), r),
                    [o for o in others if o not in (by, who[0])],
                    caster.day(),
                )
            )
        else:
            evidence += [
                caster.episode_line(who[0], f.text, [o for o in others if o != who[0]], caster.day()) for f in answers
            ]
        only_fact = len(answers) == 1 and not exchanged and r.random() < 1 / 7
        with_fact = list(base)
        if not only_fact:
            for e in evidence:
                if with_fact:
                    with_fact[r.randrange(len(with_fact))] = e
                else:
                    with_fact.append(e)
        in_facts = [(who[0], f.text) for f in answers] if only_fact or r.random() < 0.5 else []
        if kind:
            third, mine = KIND_QUESTIONS[kind]
            gold = " and ".join(kind_answer(f.answer, own) for f in answers)
        else:
            gold = " and ".join(f.answer for f in answers)
        template = r.choice(mine if own else third)
        question = _casual(template.format(s=who[0], k=fact.key or "thing"), r)
        if kind and r.random() < 0.5:  # as typed at the start of a line: "What's my pet's name?" as often
            question = question[0].upper() + question[1:]
        state = r.getstate()
        prompt = caster.build(with_fact, [], asker, question, names=names, facts=in_facts)
        yield Example("answer", "kind" if kind else "persona", prompt, _brief(gold))
        if abstain and mix.paired:
            after = r.getstate()
            r.setstate(state)  # the same preamble and places draws: the fact and its triple are what differ
            prompt = caster.build(base, [], asker, question, names=names)
            r.setstate(after)
            yield Example("abstain", "kind" if kind else "persona", prompt, r.choice(ABSTAIN))


# "When" questions: a persona sentence about something done, the day it was said, and how it was put.
EVENT = re.compile(
    r"^i (?:recently |just )?(?P<v>bought|got|adopted|started|moved to|visited|went to|finished|"
    r"joined|quit|lost|won|met|ran|learned|sold|built|painted|wrote|broke|fixed) (?P<o>[^.!,]{3,40})"
    r"[.!]?$",
    re.I,
)
BASE_VERB = {
    "bought": "buy",
    "got": "get",
    "adopted": "adopt",
    "started": "start",
    "moved to": "move to",
    "visited": "visit",
    "went to": "go to",
    "finished": "finish",
    "joined": "join",
    "quit": "quit",
    "lost": "lose",
    "won": "win",
    "met": "meet",
    "ran": "run",
    "learned": "learn",
    "sold": "sell",
    "built": "build",
    "painted": "paint",
    "wrote": "write",
    "broke": "break",
    "fixed": "fix",
}
# (words a person adds, how the answer names the day from the message's date D)
WHEN = (
    ("yesterday", "{d1}"),
    ("last week", "the week before {D}"),
    ("two days ago", "{d2}"),
    ("last weekend", "the weekend before {D}"),
    ("last month", "the month before {D}"),
    ("today", "{D}"),
    ("", "{D}"),
    ("", "{D}"),
    ("last Saturday", "the Saturday before {D}"),
    ("last Sunday", "the Sunday before {D}"),
    ("a few days ago", "a few days before {D}"),
)


def _said_on(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, 12, tzinfo=UTC)


def _day_words(d: date) -> str:
    return f"{d.day} {d:%B %Y}"


def temporal_examples(caster: Caster, chats: list, persona_lines: list[tuple[str, str]]) -> Iterator[Example]:
    """'When did Bea buy a car?' over a dated memory of Bea saying she bought one (last week, yesterday ...);
    the reply names the day: '12 March 2024.', 'The week before 19 March 2024.'."""
    r = caster.rng
    for p1, p2, _ in chats:
        for f in p1 + p2:
            m = EVENT.match(f.text.strip())
            if not m or r.random() < 0.3:
                continue
            names = r.sample(NAMES, 4)
            person, asker = names[0], r.choice((names[0], names[1]))
            phrase, answer = r.choice(WHEN)
            said = f.text.strip().rstrip(".!")
            text = (
                f"{said} {phrase}".strip()
                if phrase and r.random() < 0.7
                else (f"{phrase} {said[0].lower()}{said[1:]}".strip() if phrase else said)
            )
            if phrase and phrase not in text:
                text = f"{said} {phrase}"
            day = caster.day()
            gold = answer.format(
                D=_day_words(day), d1=_day_words(day - timedelta(days=1)), d2=_day_words(day - timedelta(days=2))
            )
            if caster.dated and phrase:  # the memory shows the day the phrase names: the answer copies it
                shown = re.search(r"\((.+)\)$", dated(phrase, _said_on(day)))
                gold = shown.group(1) if shown else gold
            lines = [(person, text)] + r.sample(persona_lines, r.randint(2, 6))
            r.shuffle(lines)
            others = names[1:]
            mem = [
                caster.episode_line(sp, tx, [o for o in others if o != sp], day if tx == text else caster.day())
                for sp, tx in lines
            ]
            verb = BASE_VERB[m.group("v").lower()]
            obj = m.group("o").strip()
            if asker == person:
                q = r.choice((f"when did I {verb} {obj}?", f"When did I {verb} {obj} again?"))
                obj = re.sub(r"\bmy\b", "your", obj)
            else:
                obj3 = re.sub(r"\bmy\b", "their", obj)
                q = r.choice((f"When did {person} {verb} {obj3}?", f"when did {person} {verb} {obj3}"))
            yield Example("answer", "when", caster.build(mem, [], asker, _casual(q, r), names=names), _brief(gold))


PLACEHOLDER = re.compile(r"\[|\bUser [12]\b")  # "My name is [User 2's name]."


def chat_examples(caster: Caster, chats: list, persona_lines: list[tuple[str, str]]) -> Iterator[Example]:
    """A turn of a Persona-Chat conversation: user 1 is a person, user 2 is the bot; the bot's next line."""
    r = caster.rng
    for p1, _, turns in chats:
        spots = [
            i
            for i, (sp, tx) in enumerate(turns)
            if sp == 2 and i >= 1 and turns[i - 1][0] == 1 and 2 <= len(tx.split()) <= 30 and not PLACEHOLDER.search(tx)
        ]
        if not spots:
            continue
        i = r.choice(spots)
        person = r.choice(NAMES)
        history = [(person if sp == 1 else BOT, tx) for sp, tx in turns[max(0, i - 1 - r.randint(0, 6)) : i - 1]]
        lines = r.sample(persona_lines, r.randint(0, 4))
        if p1 and r.random() < 0.4:
            lines.append((person, r.choice(p1).text))
        r.shuffle(lines)
        others = r.sample(NAMES, 2)
        mem = [caster.episode_line(sp, tx, others, caster.day()) for sp, tx in lines]
        yield Example(
            "chat", "chat", caster.build(mem, history, person, turns[i - 1][1], names=[person, *others]), turns[i][1]
        )


def build(count: Callable[[str], int], *, seed: int = 0, data: Path = DATA, mix: Mix = Mix()) -> list[Example]:
    """Every example, shuffled: SQuAD questions, persona questions (two per row), "when" questions, chat
    turns (two per row), drawn as ``mix`` says."""
    rng = random.Random(seed)
    chats = load_persona_chat(data)
    persona_lines = [(rng.choice(NAMES), f.text) for p1, p2, _ in chats for f in p1 + p2]
    chat_turns = [tx for _, _, turns in chats for _, tx in turns if 2 <= len(tx.split()) <= 14]
    caster = Caster(count, rng, turns=chat_turns, facts=persona_lines, dated=mix.dated)
    examples = list(squad_examples(caster, load_squad(data), persona_lines, mix))
    persona = paired_persona_examples if mix.paired else persona_examples
    examples += list(persona(caster, chats, persona_lines, mix))
    examples += list(persona(caster, chats, persona_lines, mix))  # another question per row
    if mix.kind_questions:
        sorted_answers = [f.answer for p1, p2, _ in chats for f in p1 + p2 if f.pattern in SORTED_PATTERNS]
        kinds = answer_kinds(sorted_answers)
        for _ in range(mix.kind_questions):
            examples += list(paired_persona_examples(caster, chats, persona_lines, replace(mix, paired=True), kinds))
    examples += list(temporal_examples(caster, chats, persona_lines))
    examples += list(chat_examples(caster, chats, persona_lines))
    examples += list(chat_examples(caster, chats, persona_lines))
    rng.shuffle(examples)
    return examples
