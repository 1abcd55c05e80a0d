"""A server's months of history, generated from a seed, for the months-long dream evaluation (issue 30.1).

    python bench/months_data.py --seed 1 --out /tmp/months-1.jsonl    # look at one history

8-12 people in one server, three channels, 90+ days. Each person states a few facts about themselves
in one of four ways, each measured separately by bench/dream_months.py:

- ``repeated``: said on two or three different days;
- ``confirmed``: said once, and later confirmed in a reply to someone's question ("Yes, I still work at
  Tesco."): the confirmation restates the fact; a bare "yep" is not recognised as one and is not generated;
- ``once``: said once only;
- ``contradicted``: one value said (twice), then a newer one ("We moved, so I live in York now."), which
  should win.

Around them: everyday chatter (some of it with content, some greetings and "lol"), and the bot's own
replies, which ask questions about people ("Do you live in Paris, Mina?") and invent things about itself
and about them ("I live in Lisbon", "You work at Google, right?"): none of that may become a fact. Each
fact has a question asked after the last day ("Where does Mina live?") with its gold answer and the ids
of the messages that state it (the newest value's for a contradicted fact; the older value's are kept as
``stale``).

Seeds: DEV_SEEDS tune; HELDOUT_SEEDS are run once, at the end, and never tuned on.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

DEV_SEEDS = (1, 2)
HELDOUT_SEEDS = (101, 102)
START = datetime(2026, 3, 2, tzinfo=UTC)
CHANNELS = (("100", "general"), ("101", "random"), ("102", "hobbies"))
BOT = {"id": "900", "name": "hippobot"}

NAMES = [
    "Mina",
    "Tomasz",
    "Aoife",
    "Ravi",
    "Greta",
    "Kwame",
    "Lucia",
    "Hamid",
    "Sofia",
    "Dmitri",
    "Noor",
    "Felix",
    "Yara",
    "Oskar",
    "Priya",
    "Bruno",
]
CITIES = [
    "Leeds",
    "York",
    "Bristol",
    "Cardiff",
    "Dundee",
    "Norwich",
    "Exeter",
    "Lisbon",
    "Porto",
    "Krakow",
    "Gdansk",
    "Valencia",
    "Bilbao",
    "Utrecht",
    "Ghent",
    "Tampere",
]
COMPANIES = [
    "Tesco",
    "Unilever",
    "Siemens",
    "Arup",
    "Ocado",
    "Sainsbury",
    "Deloitte",
    "Rolls-Royce",
    "Dyson",
    "Monzo",
    "Arriva",
    "Balfour",
]
JOBS = [
    "nurse",
    "plumber",
    "teacher",
    "pharmacist",
    "architect",
    "electrician",
    "librarian",
    "surveyor",
    "paramedic",
    "baker",
    "translator",
    "geologist",
]
INSTRUMENTS = ["cello", "trumpet", "banjo", "clarinet", "harp", "accordion", "ukulele", "oboe", "saxophone", "violin"]
LANGUAGES = ["Polish", "Portuguese", "Welsh", "Swahili", "Tagalog", "Finnish", "Greek", "Turkish", "Dutch", "Hungarian"]

# relation -> (statement templates, confirmation, question, values)
KINDS: dict[str, tuple[tuple[str, ...], str, str, list[str]]] = {
    "live_in": (
        ("I live in {v}.", "I live in {v} and I love it.", "Honestly I love living here, I live in {v}."),
        "Yes, I still live in {v}.",
        "Where does {name} live?",
        CITIES,
    ),
    "work_at": (
        ("I work at {v}.", "I work at {v}, it keeps me busy.", "Long week, I work at {v} and it shows."),
        "Yes, I still work at {v}.",
        "Where does {name} work?",
        COMPANIES,
    ),
    "work_as": (
        ("I work as a {v}.", "I work as a {v}, the shifts are long.", "I work as a {v} these days."),
        "Yes, I still work as a {v}.",
        "What does {name} work as?",
        JOBS,
    ),
    "play": (
        ("I play the {v}.", "I play the {v} on weekends.", "I play the {v} in a small band."),
        "Yes, I still play the {v}.",
        "What instrument does {name} play?",
        INSTRUMENTS,
    ),
    "speak": (
        ("I speak {v}.", "I speak {v} at home.", "I speak {v} with my grandparents."),
        "Yes, I still speak {v}.",
        "What language does {name} speak?",
        LANGUAGES,
    ),
}
CONFIRM_ASKS = {
    "live_in": "{name}, are you still in {v}?",
    "work_at": "{name}, still at {v}?",
    "work_as": "{name}, are you still a {v}?",
    "play": "{name}, do you still play the {v}?",
    "speak": "{name}, do you still speak {v}?",
}
NEW_VALUE = {"live_in": "We moved, so I live in {v} now.", "work_at": "I changed jobs, I work at {v} now."}

CHATTER = [  # {x}: a word from FILLERS, so a person rarely says the same line twice
    "the traffic on {road} was awful this morning",
    "anyone watching the {sport} tonight?",
    "just made a huge pot of {food}",
    "the new {shop} near the station is decent",
    "it has rained for {n} days straight",
    "finished that {genre} series, the ending was strange",
    "my laptop battery died in the middle of a {event}",
    "the bins were not collected again, {n} weeks now",
    "found a great {shop} by the canal",
    "the gym was packed after the {event}",
    "trying to grow {food} on the balcony this year",
    "the {n} o'clock train was cancelled so I walked home",
    "does anyone know a good recipe for {food}?",
    "there was a fox on {road} at midnight",
    "bought new running shoes for the {sport} club",
    "the quiz at the pub was brutal, the {genre} round especially",
    "spent the whole afternoon assembling a {furniture}",
    "the heating broke and the landlord is ignoring me, day {n}",
    "saw a brilliant {genre} show on Friday",
    "the dog next door barks at every {vehicle}",
]
FILLERS = {
    "road": ["the ring road", "the bypass", "Station Road", "Mill Lane", "the high street", "Church Street"],
    "sport": ["football", "rugby", "snooker", "cricket", "darts", "tennis"],
    "food": ["lentil soup", "chilli", "flapjacks", "banana bread", "risotto", "dumplings", "tomatoes", "herbs"],
    "shop": ["coffee place", "bakery", "bookshop", "noodle bar", "record shop", "charity shop"],
    "n": ["two", "three", "four", "five", "six", "seven"],
    "genre": ["detective", "sci-fi", "comedy", "history", "nature", "music"],
    "event": ["call", "meeting", "film", "lecture", "game", "download"],
    "furniture": ["wardrobe", "bookcase", "desk", "bed frame", "shelf"],
    "vehicle": ["cyclist", "bus", "postman", "delivery van", "skateboarder"],
}
# Chatter varies its words (people never say the same line twice), so the dream's merge of repeated
# episodes does not do decay's work.
OPENERS = ["", "ugh, ", "so ", "honestly ", "update: ", "random thought, ", "fun fact, ", "well "]
TAILS = [
    "",
    " again",
    " this week",
    " :(",
    " haha",
    " on Tuesday",
    " near {place}",
    " before lunch",
    " by the {place} roundabout",
]
PLACES = ["the market", "the park", "the library", "the bus stop", "the old mill", "the bridge", "the school"]
SMALL_TALK = ["good morning", "lol", "haha nice", "thanks!", "night all", "same", "ok cool", "hey everyone"]
BOT_LINES = [
    "Do you live in {city}, {name}?",
    "You work at {company}, right {name}?",
    "I live in {city} and I play the {instrument}.",
    "I work as a {job} in my spare time.",
    "{name}, you speak {language}, don't you?",
    "That sounds lovely! I went to {city} last year.",
]


@dataclass
class MonthQuestion:
    qid: str
    question: str
    answer: str
    category: str  # repeated | confirmed | once | contradicted
    person: str
    relation: str
    evidence: list[str]  # ids of the messages that state the (newest) value
    stale: list[str] = field(default_factory=list)  # a contradicted fact's older value's messages


@dataclass
class History:
    seed: int
    days: int
    messages: list[dict]  # importer JSONL records, oldest first
    questions: list[MonthQuestion]
    bot_inventions: list[str]  # values only the bot ever said about itself or others

    def by_day(self) -> list[list[dict]]:
        out: list[list[dict]] = [[] for _ in range(self.days)]
        for m in self.messages:
            out[(datetime.fromisoformat(m["timestamp"]) - START).days].append(m)
        return out


def generate(seed: int, *, days: int = 92, people: int = 10, chatter_per_day: int = 9) -> History:
    """One server's history (deterministic for a seed)."""
    rng = random.Random(seed)
    names = rng.sample(NAMES, people)
    used: dict[str, set[str]] = {r: set() for r in KINDS}
    questions: list[MonthQuestion] = []
    pending: list[tuple[int, dict, MonthQuestion | None, str]] = []  # (day, message, question, role)

    def pick(relation: str) -> str:
        free = [v for v in KINDS[relation][3] if v not in used[relation]] or KINDS[relation][3]
        v = rng.choice(free)
        used[relation].add(v)
        return v

    for p, name in enumerate(names):
        author = {"id": str(200 + p), "name": name}
        relations = rng.sample(list(KINDS), 4)
        categories = ["repeated", "confirmed", "once", "repeated"]
        if p % 2 == 0:  # every other person later moves or changes jobs
            categories[3] = "contradicted"
            relations[3] = rng.choice([r for r in NEW_VALUE if r not in relations[:3]] or ["live_in"])
            if relations[3] in relations[:3]:
                relations[relations.index(relations[3])] = next(r for r in KINDS if r not in relations)
        for relation, category in zip(relations, categories):
            templates, confirm, ask, _ = KINDS[relation]
            value = pick(relation)
            q = MonthQuestion(f"s{seed}-{name}-{relation}", ask.format(name=name), value, category, name, relation, [])
            first = rng.randint(0, 45)
            if category == "repeated":
                said = sorted({first, *rng.sample(range(first + 5, min(first + 50, days - 20)), rng.randint(1, 2))})
                for d in said:
                    pending.append((d, {"author": author, "text": rng.choice(templates).format(v=value)}, q, "ev"))
            elif category == "confirmed":
                pending.append((first, {"author": author, "text": templates[0].format(v=value)}, q, "ev"))
                later = rng.randint(first + 5, min(first + 40, days - 20))
                asker = {"id": str(200 + (p + 1) % people), "name": names[(p + 1) % people]}
                pending.append(
                    (later, {"author": asker, "text": CONFIRM_ASKS[relation].format(name=name, v=value)}, None, "ask")
                )
                pending.append((later, {"author": author, "text": confirm.format(v=value), "reply": True}, q, "ev"))
            elif category == "once":
                pending.append((first, {"author": author, "text": rng.choice(templates).format(v=value)}, q, "ev"))
            else:  # contradicted: an older value twice, then the newer one (once or twice)
                old = value
                new = pick(relation)
                q.answer = new
                d1 = rng.randint(0, 20)
                d2 = rng.randint(d1 + 3, d1 + 15)
                d3 = rng.randint(d2 + 10, days - 25)
                for d in (d1, d2):
                    pending.append((d, {"author": author, "text": templates[0].format(v=old)}, q, "stale"))
                pending.append((d3, {"author": author, "text": NEW_VALUE[relation].format(v=new)}, q, "ev"))
                if rng.random() < 0.5:
                    pending.append(
                        (
                            rng.randint(d3 + 2, days - 15),
                            {"author": author, "text": templates[0].format(v=new)},
                            q,
                            "ev",
                        )
                    )
            questions.append(q)
    inventions: set[str] = set()
    for d in range(days):
        for _ in range(chatter_per_day):
            who = rng.randrange(people)
            author = {"id": str(200 + who), "name": names[who]}
            text = (
                rng.choice(SMALL_TALK)
                if rng.random() < 0.3
                else (
                    rng.choice(OPENERS)
                    + rng.choice(CHATTER).format(**{k: rng.choice(v) for k, v in FILLERS.items()})
                    + rng.choice(TAILS).format(place=rng.choice(PLACES))
                )
            )
            pending.append((d, {"author": author, "text": text}, None, "chat"))
        for _ in range(2):  # the bot's replies: questions and inventions
            values = {
                "city": rng.choice(CITIES[8:]),
                "company": rng.choice(COMPANIES),
                "job": rng.choice(JOBS),
                "instrument": rng.choice(INSTRUMENTS),
                "language": rng.choice(LANGUAGES),
                "name": rng.choice(names),
            }
            line = rng.choice(BOT_LINES)
            inventions |= {v for k, v in values.items() if "{" + k + "}" in line and k != "name"}
            pending.append((d, {"author": BOT, "text": line.format(**values), "bot": True}, None, "bot"))
    # Order within a day: random minutes, a confirmation right after its question.
    messages: list[dict] = []
    by_day: dict[int, list[tuple[dict, MonthQuestion | None, str]]] = {}
    for d, m, asked, role in pending:
        by_day.setdefault(d, []).append((m, asked, role))
    n = 0
    for d in sorted(by_day):
        items = by_day[d]
        rng.shuffle(items)
        # keep each "ask" immediately before the reply that follows it in the original order
        asks = [i for i in items if i[2] == "ask"]
        items = [i for i in items if i[2] != "ask"]
        for a in asks:
            reply = next(
                i
                for i in items
                if i[0].get("reply") and i[0]["text"] and i[1] is not None and a[0]["text"].startswith(i[1].person)
            )
            items.insert(items.index(reply), a)
        minute = 8 * 60
        previous: str | None = None
        for m, asked, role in items:
            minute += rng.randint(2, 60 * 14 // max(len(items), 1))
            n += 1
            mid = f"m{seed}-{n:05d}"
            channel = rng.choice(CHANNELS)
            record = {
                "id": mid,
                "channel": channel[0],
                "channel_name": channel[1],
                "author": m["author"],
                "timestamp": (START + timedelta(days=d, minutes=min(minute, 23 * 60 + 50)))
                .isoformat()
                .replace("+00:00", "Z"),
                "text": m["text"],
            }
            if m.get("bot"):
                record["bot"] = True
            if m.get("reply") and previous is not None:
                record["reply_to"] = previous
                record["channel"], record["channel_name"] = messages[-1]["channel"], messages[-1]["channel_name"]
            messages.append(record)
            previous = mid
            if asked is not None:
                (asked.evidence if role == "ev" else asked.stale).append(mid)
    said_by_people = {v.lower() for values in used.values() for v in values}
    return History(seed, days, messages, questions, sorted(v for v in inventions if v.lower() not in said_by_people))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=DEV_SEEDS[0])
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    h = generate(args.seed)
    args.out.write_text("".join(json.dumps(m) + "\n" for m in h.messages))
    cats: dict[str, int] = {}
    for q in h.questions:
        cats[q.category] = cats.get(q.category, 0) + 1
    print(f"{len(h.messages)} messages over {h.days} days, {len(h.questions)} questions {cats}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
