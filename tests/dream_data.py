"""A month of synthetic conversation with a cluster that no archetype serves: planning a project."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)

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
    "thanks!", "ok cool", "sounds good", "what music do I like?", "what are my hobbies?",
    "my code throws an exception when I run it", "I'm getting a TypeError in my script",
    "remember what I said about my sister?", "what did I tell you yesterday?",
    "how does a rainbow form?", "can you explain how vaccines work?", "what is photosynthesis?",
]
CHATTER = [
    "good morning everyone", "I had pizza for lunch", "the weather is awful today", "anyone watching the match tonight?",
    "my cat knocked over a plant again", "just got back from the gym", "this song is stuck in my head",
    "I can't believe it's already Friday", "my train was late again", "we adopted a puppy on Sunday",
    "I'm so tired today", "lol that's hilarious", "happy birthday Sam!", "the new cafe downtown is great",
    "I finally finished that book", "it's snowing here", "going hiking this weekend", "my phone battery died",
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
            rows.append({"id": str(n), "channel": rng.choice(["general", "projects", "random"]),
                         "author": rng.choice(["ana", "ben", "cy", "dee"]), "timestamp": at.isoformat(), "text": text})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path
