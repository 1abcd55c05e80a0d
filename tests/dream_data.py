"""Synthetic chat histories for the dream cycle.

- ``month_of_history``: ~30 days with a cluster that no archetype serves (planning a project);
- ``planning_month``: a month where planning talk is frequent and phrased many ways (roadmaps,
  milestones, timelines, phases): the theme that used to come back as several overlapping proposals;
- ``two_months_of_history``: ~60 days of several people's chat, trivia mixed with substantive
  messages, with an old fact (the dentist) from ~55 days before ``NOW``.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

# Yesterday at noon (UTC), not a fixed date: proposals made "now" expire after their TTL, and the console and
# the buttons vote on the real clock (a fixed date here made those tests fail once it was 3 days old).
NOW = datetime.combine(datetime.now(UTC).date() - timedelta(days=1), time(12, 0), tzinfo=UTC)

PLANNING = [
    "let's plan the roadmap for our app launch",
    "what milestones should we set for the website redesign?",
    "can you help me break the garden project into phases?",
    "how should we split the work for the hackathon team?",
    "I need a timeline for moving house next month",
    "what should be the first step in organizing the conference?",
    "help me prioritise tasks for the product release",
    "we need a plan for migrating the database by March",
    "how do I structure the schedule for my thesis project?",
    "let's outline the steps to renovate the kitchen",
    "what's a realistic deadline for each phase of the project?",
    "can we draft a project plan with owners for every task?",
    "how many sprints do we need before the beta launch?",
    "help me plan the milestones for my novel",
    "what order should we tackle the project tasks in?",
    "let's set up a plan for the community fundraiser event",
    "I want to map out the steps for starting my bakery",
    "can you help me plan the timeline for the wedding preparations?",
]
HELD_OUT_PLANNING = [
    "let's make a project plan for the new mobile app",
    "what are the milestones and deadlines for our launch project?",
    "help me plan the phases of building the treehouse",
]
SERVED = [
    "thanks!",
    "ok cool",
    "sounds good",
    "what music do I like?",
    "what are my hobbies?",
    "my code throws an exception when I run it",
    "I'm getting a TypeError in my script",
    "remember what I said about my sister?",
    "what did I tell you yesterday?",
    "how does a rainbow form?",
    "can you explain how vaccines work?",
    "what is photosynthesis?",
]
CHATTER = [
    "good morning everyone",
    "I had pizza for lunch",
    "the weather is awful today",
    "anyone watching the match tonight?",
    "my cat knocked over a plant again",
    "just got back from the gym",
    "this song is stuck in my head",
    "I can't believe it's already Friday",
    "my train was late again",
    "we adopted a puppy on Sunday",
    "I'm so tired today",
    "lol that's hilarious",
    "happy birthday Sam!",
    "the new cafe downtown is great",
    "I finally finished that book",
    "it's snowing here",
    "going hiking this weekend",
    "my phone battery died",
]


def month_of_history(path: Path, *, seed: int = 5) -> Path:
    """Write ~30 days of chat as JSON Lines for `hippobot import` / Importer."""
    rng = random.Random(seed)
    rows = []
    n = 0
    start = NOW - timedelta(days=29)
    planning = list(PLANNING)
    rng.shuffle(planning)
    for day in range(29):
        texts = rng.sample(SERVED, 4) + rng.sample(CHATTER, 3)
        if planning and day % 2 == 0:
            texts.append(planning.pop())
            if planning:
                texts.append(planning.pop())
        for text in texts:
            n += 1
            at = start + timedelta(days=day, minutes=7 * n % 600)
            rows.append(
                {
                    "id": str(n),
                    "channel": rng.choice(["general", "projects", "random"]),
                    "author": rng.choice(["ana", "ben", "cy", "dee"]),
                    "timestamp": at.isoformat(),
                    "text": text,
                }
            )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


# Planning talk phrased many ways: "let's ..." requests, roadmap, milestone, timeline and phase questions.
PLANNING_SUBJECTS = [
    "the app launch",
    "the website redesign",
    "the garden project",
    "the hackathon",
    "moving house",
    "the conference",
    "the product release",
    "the database migration",
    "my thesis",
    "the kitchen renovation",
    "the beta launch",
    "my novel",
    "the fundraiser",
    "my bakery",
    "the wedding",
    "the office move",
    "the marketing campaign",
    "the school play",
    "the community festival",
    "the podcast",
    "the new api",
    "the book club",
    "the charity run",
    "the mobile game",
]
PLANNING_TEMPLATES = [
    "let's plan the roadmap for {s}",
    "let's make a roadmap for {s}",
    "what milestones should we set for {s}?",
    "can you help me break {s} into phases?",
    "I need a timeline for {s}",
    "what should be the first step in planning {s}?",
    "help me prioritise the tasks for {s}",
    "we need a project plan for {s} with owners for every task",
    "what's a realistic deadline for each phase of {s}?",
    "let's outline the steps and milestones for {s}",
    "how many weeks should we plan for {s}?",
    "can we draft a schedule for {s}?",
]


def planning_month(path: Path, *, seed: int = 11, per_day: int = 3) -> tuple[Path, list[str]]:
    """~30 days of chat with several planning messages a day, each a template on a subject.

    Returns the file and the planning texts it holds.
    """
    rng = random.Random(seed)
    rows, planning = [], []
    n = 0
    start = NOW - timedelta(days=29)
    for day in range(29):
        texts = rng.sample(SERVED, 4) + rng.sample(CHATTER, 3)
        for _ in range(per_day):
            text = rng.choice(PLANNING_TEMPLATES).format(s=rng.choice(PLANNING_SUBJECTS))
            texts.append(text)
            planning.append(text)
        for text in texts:
            n += 1
            at = start + timedelta(days=day, minutes=7 * n % 600)
            rows.append(
                {
                    "id": str(n),
                    "channel": rng.choice(["general", "projects", "random"]),
                    "author": rng.choice(["ana", "ben", "cy", "dee"]),
                    "timestamp": at.isoformat(),
                    "text": text,
                }
            )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path, planning


# Two months of several people's chat: mostly substantive, some trivia, an old fact to recall.
DENTIST = "my dentist is Dr. Okafor on Elm Street"
TRIVIA = [
    "ok",
    "lol",
    "haha",
    "thanks!",
    "good morning",
    "nice",
    "yeah",
    "same",
    "brb",
    "gn",
    "lmao",
    "okay",
    "cool",
    "hey all",
    "yep",
]
PEOPLE = ["ana", "ben", "cy", "dee", "eli"]
_SUBSTANTIVE = [
    "I'm reading {book} this week and it's slower than I expected",
    "we should meet at {place} on {day} to sort out the {thing}",
    "my {relative} is visiting from {city} next {day}",
    "the {thing} broke again, I need to call the repair shop about it",
    "I started learning {skill} with an online course",
    "just booked train tickets to {city} for the {month} holidays",
    "the {thing} at work needs a new budget of {n} euros",
    "my {relative} got a job as a {job} in {city}",
    "I ran {n} kilometres along the river before breakfast",
    "we adopted a {pet} called {pname} from the shelter",
    "the landlord says the rent goes up by {n} percent in {month}",
    "I finally fixed the {thing} by replacing the fuse",
    "my {relative} recommended {book}, has anyone read it?",
    "the meeting about the {thing} moved to {day} at {n} o'clock",
    "I'm cooking {dish} for the {relative}'s birthday dinner",
]
_SLOTS = {
    "book": ["Middlemarch", "Dune", "The Overstory", "Piranesi", "Beloved", "Moby Dick", "Circe", "Stoner"],
    "place": ["the library", "Cafe Lumen", "the old harbour", "Rosa's bakery", "the climbing gym", "the park"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "thing": ["boiler", "laptop", "bike", "washing machine", "garden fence", "car", "printer", "dishwasher"],
    "relative": ["sister", "brother", "cousin", "aunt", "grandfather", "niece", "uncle", "mother"],
    "city": ["Lisbon", "Oslo", "Nairobi", "Lyon", "Porto", "Kraków", "Montreal", "Osaka", "Quito"],
    "skill": ["Portuguese", "the cello", "woodworking", "pottery", "chess openings", "Rust", "watercolour"],
    "month": ["March", "April", "May", "June", "July", "August", "December"],
    "job": ["nurse", "carpenter", "teacher", "pilot", "chemist", "librarian", "baker"],
    "pet": ["kitten", "greyhound", "rabbit", "parrot", "beagle"],
    "pname": ["Miso", "Pepper", "Juniper", "Biscuit", "Olive", "Tofu", "Rocket"],
    "dish": ["a lasagne", "paella", "a lentil curry", "dumplings", "a roast chicken", "ramen"],
    "n": [str(n) for n in range(3, 40)],
}


def two_months_of_history(
    path: Path, *, seed: int = 3, per_day: int = 10, trivia_share: float = 0.08
) -> tuple[Path, dict[str, list[str]]]:
    """~60 days of five people's chat ending just before NOW, as JSON Lines.

    About ``trivia_share`` of the messages are trivia; the rest are substantive and
    rarely repeat. ``DENTIST`` was said by ana 55 days before NOW. Returns the file and
    {"trivia": [...], "substantive": [...]} (the texts, DENTIST among the substantive).
    """
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    kinds: dict[str, list[str]] = {"trivia": [], "substantive": []}
    n = 0
    start = NOW - timedelta(days=60)
    for day in range(60):
        for i in range(per_day):
            if rng.random() < trivia_share:
                text = rng.choice(TRIVIA)
                kinds["trivia"].append(text)
            else:
                for _ in range(50):  # people rarely say the same substantive thing twice
                    text = rng.choice(_SUBSTANTIVE).format(**{k: rng.choice(v) for k, v in _SLOTS.items()})
                    if text not in kinds["substantive"]:
                        break
                kinds["substantive"].append(text)
            n += 1
            at = start + timedelta(days=day, hours=8, minutes=50 * i + rng.randrange(40))
            rows.append(
                {
                    "id": str(n),
                    "channel": rng.choice(["general", "random"]),
                    "author": rng.choice(PEOPLE),
                    "timestamp": at.isoformat(),
                    "text": text,
                }
            )
        if day == 5:  # 55 days before NOW
            n += 1
            rows.append(
                {
                    "id": str(n),
                    "channel": "general",
                    "author": "ana",
                    "text": DENTIST,
                    "timestamp": (start + timedelta(days=day, hours=20)).isoformat(),
                }
            )
            kinds["substantive"].append(DENTIST)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path, kinds
