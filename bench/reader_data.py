"""Training examples for the reader adapter (issue 28), cast into the prompt the bot itself builds.

Every example is a prompt made by ``bot.prompt.PromptBuilder`` from a ``ContextBundle`` shaped like what
recall returns (an episodes section of dated chat lines, the recent turns; no facts section yet) and
the reply the model should write after ``hippobot:``. Four kinds:

- ``answer``: the memory holds the answer; the reply is the answer, briefly (a span of the memory).
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from bot.prompt import PromptBuilder
from memory.archetypes import ContextPlan
from memory.layers.base import MEMORY, TRANSCRIPT, MemoryItem, Section
from memory.recall import ContextBundle

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "reader"
BOT = "hippobot"
# Training names, chosen apart from every name in bench/data/memory_eval and memory_eval_natural.
NAMES = (
    "Bea", "Tariq", "Mei", "Jonah", "Elif", "Arjun", "Greta", "Dmitri", "Noor", "Pablo", "Saanvi", "Wren", "Kwame",
    "Ilse", "Mateo", "Zara", "Theo", "Aiko", "Bruno", "Leila", "Finn", "Olga", "Ravi", "Sunny", "Tomasz", "Ugo",
    "Vera", "Yusuf", "Abebe", "Carmen", "Dana", "Emeka", "Freya", "Gus", "Hiro", "Iris", "Jasper", "Keira",
    "Luca", "Mina", "Nico", "Odette", "Pavel", "Quinn", "Rhea", "Soren", "Talia", "Viktor", "Willa", "Ximena",
    "pixelfox", "mossy_pete", "juniper", "the_real_dev", "kat", "bolt", "sam_w", "ranger42",
)
ABSTAIN = ("I don't know. I don't remember anyone mentioning that.", "I don't remember anyone telling me that.",
           "I don't know, nobody has told me that.")
FILLERS = ("oh nice", "haha", "really?", "that's cool", "no way", "wow", "nice one", "oh wow", "makes sense",
           "interesting", "lol", "ok", "fair enough", "same here", "huh", "love that", "sounds great", "yeah")
# Half of SQuAD's unanswerable questions are left out: with all of them, two examples in five would teach
# abstention, more than a bot whose recall usually finds something should lean towards.
SQUAD_UNANSWERABLE_SKIP = 0.5
EPISODES_TITLE = "What {bot} remembers from earlier conversations"
PERSONA = ("hippobot is a friendly, curious assistant with a long memory. "
           "It answers briefly and remembers what people tell it.")


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
    _p(r"^my favou?rite (?P<k>[a-z ]{2,30}?) (?:is|are) (?P<x>[^.!,]{2,40})[.!]?$",
       ("What is {s}'s favorite {k}?", "what's {s}'s favourite {k}", "do you know {s}'s favorite {k}?",
        "Which {k} does {s} like best?"),
       ("what's my favorite {k}?", "do you remember my favourite {k}?", "What is my favorite {k}?")),
    _p(r"^i work (?:as|at|for|in) (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
       ("Where does {s} work?", "what does {s} do for work?", "What is {s}'s job?", "do you know where {s} works"),
       ("where do I work?", "what's my job again?", "Do you remember what I do for work?")),
    _p(r"^i live (?:in|on|near) (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
       ("Where does {s} live?", "where is {s} based these days?", "Do you know where {s} lives?"),
       ("where do I live?", "Do you remember where I live?")),
    _p(r"^i drive an? (?P<x>[^.!,]{2,40})[.!]?$",
       ("What car does {s} drive?", "what does {s} drive?", "Which car is {s}'s?"),
       ("what car do I drive?", "do you remember what I drive?")),
    _p(r"^i play (?:the )?(?P<x>[^.!,]{2,40})[.!]?$",
       ("What does {s} play?", "what does {s} play in their free time?"),
       ("what do I play?",)),
    _p(r"^i have (?P<x>\w+) (?P<k>kids|children|dogs|cats|sisters|brothers|siblings|sons|daughters|"
       r"grandchildren|horses)\b[^.!]*[.!]?$",
       ("How many {k} does {s} have?", "how many {k} has {s} got?"),
       ("how many {k} do I have?",)),
    _p(r"^i have an? (?P<k>dog|cat|puppy|kitten|parrot|rabbit|hamster|turtle|snake|horse) (?:named|called) "
       r"(?P<x>[A-Z][\w']+)[^.!]*[.!]?$",
       ("What is the name of {s}'s {k}?", "what's {s}'s {k} called?", "What did {s} name their {k}?"),
       ("what's my {k} called?", "what's the name of my {k}?")),
    _p(r"^i grew up (?:in|on) (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
       ("Where did {s} grow up?", "where was {s} raised?"),
       ("where did I grow up?",)),
    _p(r"^i (?:am|'m) from (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
       ("Where is {s} from?", "where does {s} come from?"),
       ("where am I from?",)),
    _p(r"^i was born in (?P<x>[^.!,]{2,40})[.!]?$",
       ("When or where was {s} born?", "where was {s} born?"),
       ("where was I born?",)),
    _p(r"^i (?:am|'m) (?P<x>\d{1,3}) years old[.!]?$",
       ("How old is {s}?", "what age is {s}?"),
       ("how old am I?",)),
    _p(r"^i volunteer (?:at|with|for) (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
       ("Where does {s} volunteer?", "who does {s} volunteer for?"),
       ("where do I volunteer?",)),
    _p(r"^i speak (?P<x>[^.!]{2,40})[.!]?$",
       ("What languages does {s} speak?", "which language does {s} speak?"),
       ("what languages do I speak?",)),
    _p(r"^i graduated (?:from|with) (?:an? |the )?(?P<x>[^.!,]{2,40})[.!]?$",
       ("What did {s} graduate from?", "where did {s} study?"),
       ("where did I graduate from?",)),
    _p(r"^my (?P<k>father|mother|dad|mom|mum|wife|husband|sister|brother|son|daughter|boyfriend|girlfriend) "
       r"(?:is|was) an? (?P<x>[^.!,]{2,40})[.!]?$",
       ("What does {s}'s {k} do?", "what is {s}'s {k}'s job?"),
       ("what does my {k} do?",)),
    _p(r"^i (?:love|enjoy|like) (?P<x>[^.!,]{3,40})[.!]?$",
       ("What does {s} enjoy?", "what is {s} into?", "What does {s} love doing?"),
       ("what do I enjoy?", "what am I into, do you remember?")),
    _p(r"^i hate (?P<x>[^.!,]{3,40})[.!]?$",
       ("What does {s} hate?", "what can't {s} stand?"),
       ("what do I hate?",)),
    _p(r"^i(?: recently)? (?:bought|got) an? (?:new )?(?P<x>[^.!,]{2,40})[.!]?$",
       ("What did {s} buy?", "what did {s} get recently?"),
       ("what did I buy recently?",)),
)


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
    """Every SQuAD 2.0 dev question with its paragraph: {title, context, question, answer or None}."""
    raw = json.loads((data / "squad-v2.0-dev.json").read_text("utf-8"))["data"]
    out = []
    for article in raw:
        for p in article["paragraphs"]:
            for q in p["qas"]:
                answer = None if q.get("is_impossible") or not q["answers"] else q["answers"][0]
                out.append({"title": article["title"], "context": p["context"], "question": q["question"].strip(),
                            "answer": answer})
    return out


# --- casting into the bot's prompt ---------------------------------------------------------------------------

def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", " ".join(text.split()))
    return [p.strip() for p in parts if len(p.strip()) > 3]


class Caster:
    """Builds prompts with the real PromptBuilder; ``count`` is the engine's token counter."""

    def __init__(self, count: Callable[[str], int], rng: random.Random, *, budget: int = 1000) -> None:
        self.count = count
        self.rng = rng
        self.builder = PromptBuilder(bot_name=BOT, persona=PERSONA, budget_tokens=budget, count_tokens=count)
        self.plan = ContextPlan(archetype="default", turns=8, vectors=5, similarity_threshold=0.9, triple_depth=1,
                                similarity=0.0)

    def day(self) -> date:
        return date(2019, 1, 1) + timedelta(days=self.rng.randrange(0, 365 * 8))

    def episode_line(self, speaker: str, text: str, others: list[str], when: date) -> str:
        """A recalled moment as the episodes layer writes it: '[date] A: ... / B: ...' (the hit with a
        neighbouring turn either side, sometimes)."""
        r = self.rng
        lines = [f"{speaker}: {text}"]
        if others and r.random() < 0.5:
            lines.insert(0, f"{r.choice(others)}: {r.choice(FILLERS)}")
        if others and r.random() < 0.5:
            lines.append(f"{r.choice(others)}: {r.choice(FILLERS)}")
        return f"[{when:%Y-%m-%d}] " + " / ".join(lines)

    def build(self, memory_lines: list[str], turns: list[tuple[str, str]], asker: str, text: str) -> str:
        items = tuple(MemoryItem("episode", None, line, line, ()) for line in memory_lines)
        sections = [Section("episodes", EPISODES_TITLE, items, placement=MEMORY, priority=20)]
        if turns:
            t = tuple(MemoryItem("turn", None, f"{a}: {b}", f"{a}: {b}", ()) for a, b in turns)
            sections.append(Section("turns", "Conversation", t, placement=TRANSCRIPT, priority=0))
        bundle = ContextBundle(scope="train", plan=self.plan, sections=tuple(sections))
        return self.builder.build(bundle, asker, text).text


def _casual(question: str, rng: random.Random) -> str:
    q = question
    if rng.random() < 0.3:
        q = q[0].lower() + q[1:]
    if rng.random() < 0.2:
        q = q.rstrip("?")
    if rng.random() < 0.15:
        q = rng.choice(("hey, ", "quick one: ", "hmm ", "remind me, ")) + q[0].lower() + q[1:]
    return q


def _brief(answer: str) -> str:
    a = answer.strip().rstrip(".")
    return (a[0].upper() + a[1:] if a and not a[0].isupper() else a) + "."


def squad_examples(caster: Caster, rows: list[dict], persona_lines: list[tuple[str, str]]) -> Iterator[Example]:
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
            if r.random() < SQUAD_UNANSWERABLE_SKIP:
                continue
            evidence = []
            rest = [s for s in sents if len(s.split()) <= 60]
        same_article = [s for other in by_title[row["title"]] if other["context"] != row["context"]
                        for s in sentences(other["context"])[:2]]
        pool = r.sample(rest, min(len(rest), r.randint(1, 3))) + r.sample(same_article, min(len(same_article),
                                                                                             r.randint(0, 2)))
        pool = [s for s in pool if len(s.split()) <= 60 and (answer is None or answer["text"] not in s)]
        if answer is None and not pool:
            continue
        lines = [(r.choice(speakers), s) for s in evidence + pool]
        lines += r.sample(persona_lines, r.randint(0, 3))
        r.shuffle(lines)
        mem = [caster.episode_line(sp, tx, speakers, caster.day()) for sp, tx in lines]
        prompt = caster.build(mem, [], asker, _casual(row["question"], r))
        if answer is not None:
            yield Example("answer", "squad", prompt, _brief(answer["text"]))
        else:
            yield Example("abstain", "squad", prompt, r.choice(ABSTAIN))


def persona_examples(caster: Caster, chats: list, persona_lines: list[tuple[str, str]]) -> Iterator[Example]:
    """One question per conversation row: about a fact of user 1 or 2 (or the asker's own); half the time the
    fact (and every fact of the same kind of that person) is left out of the memory: abstain."""
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
        own = r.random() < 0.3  # the asker asks about their own fact
        asker = who[0] if own else names[2]
        abstain = r.random() < 0.45
        lines: list[tuple[str, str]] = []
        for n, facts in enumerate(people):
            for f in facts:
                if abstain and n == target_person and f.pattern == fact.pattern:
                    continue
                if not abstain and n == target_person and f.pattern == fact.pattern and f is not fact:
                    continue  # one answer only
                lines.append((who[n], f.text))
        lines += r.sample(persona_lines, r.randint(0, 3))
        r.shuffle(lines)
        lines = lines[: r.randint(4, 9)] if len(lines) > 4 else lines
        if not abstain and (who[0], fact.text) not in lines:
            lines[r.randrange(len(lines))] = (who[0], fact.text)
        others = [names[1], names[3], asker]
        mem = [caster.episode_line(sp, tx, [o for o in others if o != sp], caster.day()) for sp, tx in lines]
        _, third, mine, _ = PATTERNS[fact.pattern]
        template = r.choice(mine if own else third)
        question = _casual(template.format(s=who[0], k=fact.key or "thing"), r)
        if abstain:
            yield Example("abstain", "persona", caster.build(mem, [], asker, question), r.choice(ABSTAIN))
        else:
            yield Example("answer", "persona", caster.build(mem, [], asker, question), _brief(fact.answer))


def chat_examples(caster: Caster, chats: list, persona_lines: list[tuple[str, str]]) -> Iterator[Example]:
    """A turn of a Persona-Chat conversation: user 1 is a person, user 2 is the bot; the bot's next line."""
    r = caster.rng
    for p1, _, turns in chats:
        spots = [i for i, (sp, tx) in enumerate(turns) if sp == 2 and i >= 1 and turns[i - 1][0] == 1
                 and 2 <= len(tx.split()) <= 30]
        if not spots:
            continue
        i = r.choice(spots)
        person = r.choice(NAMES)
        history = [(person if sp == 1 else BOT, tx) for sp, tx in turns[max(0, i - 1 - r.randint(0, 6)): i - 1]]
        lines = r.sample(persona_lines, r.randint(0, 4))
        if p1 and r.random() < 0.4:
            lines.append((person, r.choice(p1).text))
        r.shuffle(lines)
        others = r.sample(NAMES, 2)
        mem = [caster.episode_line(sp, tx, others, caster.day()) for sp, tx in lines]
        yield Example("chat", "chat", caster.build(mem, history, person, turns[i - 1][1]), turns[i][1])


def build(count: Callable[[str], int], *, seed: int = 0, data: Path = DATA) -> list[Example]:
    """Every example, shuffled: SQuAD questions, persona questions, chat turns."""
    rng = random.Random(seed)
    caster = Caster(count, rng)
    chats = load_persona_chat(data)
    persona_lines = [(rng.choice(NAMES), f.text) for p1, p2, _ in chats for f in p1 + p2]
    examples = list(squad_examples(caster, load_squad(data), persona_lines))
    examples += list(persona_examples(caster, chats, persona_lines))
    examples += list(persona_examples(caster, chats, persona_lines))  # another question per row
    examples += list(chat_examples(caster, chats, persona_lines))
    rng.shuffle(examples)
    return examples
