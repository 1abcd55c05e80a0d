"""The reader's training data (bench/reader_data.py): what an example teaches is what it says it teaches.

Built from small inline rows in SQuAD's and Persona-Chat's shapes (the real files live outside the repository,
in ../shared/data/reader/), through the real PromptBuilder.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from bench.reader_data import (
    ABSTAIN,
    MIXES,
    NAMES,
    Caster,
    Mix,
    PersonaFact,
    classify_fact,
    kind_answer,
    kind_of,
    temporal_examples,
    paired_persona_examples,
    squad_examples,
)

PARAGRAPH = (
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region "
    "in France. They were descended from Norse raiders and pirates from Denmark, Iceland and Norway. "
    "Their identity emerged initially in the first half of the 10th century. The Norman dynasty had a "
    "major political, cultural and military impact on medieval Europe."
)
OTHERS = [(NAMES[i], f"I like thing number {i}.") for i in range(30)]  # unrelated remembered moments


def caster(seed: int = 0) -> Caster:
    return Caster(
        lambda text: len(text.split()),
        random.Random(seed),
        facts=[("Bea", "I have a dog named Rex."), ("Tariq", "I work as a nurse.")],
    )


def row(question: str, *, answer: dict | None = None, plausible: str | None = None) -> dict:
    return {"title": "Normans", "context": PARAGRAPH, "question": question, "answer": answer, "plausible": plausible}


def test_a_near_miss_abstention_keeps_the_sentence_that_looks_like_its_answer_in_the_memory() -> None:
    mix = Mix(squad_unanswerable_keep=1.0, near_miss=True)
    rows = [row("Who did the Normans' ancestors sail with in 1200?", plausible="Norse raiders")] * 20
    examples = list(squad_examples(caster(), rows, OTHERS, mix))
    assert examples, "no example was made"
    for ex in examples:
        assert ex.kind == "abstain" and ex.reply in ABSTAIN
        # the near-miss sentence is in the memory section, as a person typed it (case and full stop may change)
        assert "descended from Norse raiders and pirates from Denmark" in ex.prompt.replace("they were", "They were")


def test_an_answerable_question_replies_with_its_answer_and_its_sentence_is_remembered() -> None:
    start = PARAGRAPH.index("Denmark")
    examples = list(
        squad_examples(
            caster(),
            [
                row(
                    "Where were the Norse raiders from?",
                    answer={"text": "Denmark, Iceland and Norway", "answer_start": start},
                )
            ]
            * 5,
            OTHERS,
            MIXES["v4"],
        )
    )
    assert examples and all(ex.kind == "answer" and ex.reply == "Denmark, Iceland and Norway." for ex in examples)
    assert all("Denmark, Iceland and Norway" in ex.prompt for ex in examples)


def test_the_v4_mix_puts_as_many_remembered_moments_in_a_prompt_as_recall_does() -> None:
    start = PARAGRAPH.index("Denmark")
    r = row("Where were the Norse raiders from?", answer={"text": "Denmark, Iceland and Norway", "answer_start": start})
    few = list(squad_examples(caster(1), [r] * 30, OTHERS, MIXES["v2"]))
    many = list(squad_examples(caster(1), [r] * 30, OTHERS, MIXES["v4"]))

    def moments(prompt: str) -> int:
        return sum(1 for line in prompt.splitlines() if line.lstrip("- ").startswith("[20"))

    assert sum(moments(e.prompt) for e in many) > 1.5 * sum(moments(e.prompt) for e in few)


def test_no_training_name_is_a_name_of_the_memory_evaluations_conversations() -> None:
    data = Path(__file__).resolve().parents[1] / "bench" / "data"
    speakers = set()
    for conv in [*data.glob("memory_eval/conv-*.jsonl"), *data.glob("memory_eval_natural/conv-*.jsonl")]:
        for line in conv.read_text("utf-8").splitlines():
            if line.strip():
                speakers.add(json.loads(line)["author"]["name"].lower())
    assert speakers, "no evaluation conversation found"
    assert not speakers & {n.lower() for n in NAMES}


def chats(n: int = 40) -> list:
    """Persona-Chat rows in the loader's shape: (user 1's facts, user 2's facts, turns)."""
    one = [classify_fact(t) for t in ("I have a dog named Pico.", "I work as a baker.", "I like hiking.")]
    two = [classify_fact(t) for t in ("My favorite color is teal.", "I live in a small town.")]
    return [(one, two, [(1, "hi there"), (2, "hello!")])] * n


def question(prompt: str) -> str:
    return prompt.rstrip().splitlines()[-2]


def test_a_v5_persona_question_that_abstains_is_also_asked_with_its_fact_in_the_memory() -> None:
    mix = Mix(persona_abstain=1.0, paired=True, extra_lines=(0, 0))
    examples = list(paired_persona_examples(caster(), chats(), OTHERS, mix))
    answers = [e for e in examples if e.kind == "answer"]
    abstains = [e for e in examples if e.kind == "abstain"]
    assert len(answers) == len(abstains) == 40
    for yes, no in zip(answers, abstains):
        assert question(yes.prompt) == question(no.prompt)  # the same question, asked twice
        assert no.reply in ABSTAIN and yes.reply not in ABSTAIN
        gold = yes.reply.rstrip(".").lower()
        assert gold in yes.prompt.lower() and gold not in no.prompt.lower()


def test_a_v5_fact_can_be_remembered_as_the_persons_reply_to_a_question() -> None:
    mix = Mix(persona_abstain=0.0, paired=True, exchange=1.0, extra_lines=(0, 0))
    examples = list(paired_persona_examples(caster(3), chats(), OTHERS, mix))
    assert examples and all(e.kind == "answer" for e in examples)
    asked = 0
    for e in examples:
        gold = e.reply.rstrip(".").lower()
        line = next(x for x in e.prompt.lower().splitlines() if gold in x and x.startswith("- ["))
        turns = line.split("] ", 1)[1].split(" / ")
        at = next(i for i, t in enumerate(turns) if gold in t)
        asked += at > 0 and "you" in turns[at - 1]  # the turn before the answer asked the person
    assert asked == len(examples)


def test_a_v6_question_names_the_kind_of_thing_asked_for_and_not_the_facts_words() -> None:
    rows = [
        (
            [classify_fact("I like to bake bread."), classify_fact("I work as a nurse.")],
            [classify_fact("I live in a small town.")],
            [(1, "hi"), (2, "hello")],
        )
    ] * 40
    mix = Mix(persona_abstain=0.5, paired=True, extra_lines=(0, 0))
    examples = list(paired_persona_examples(caster(5), rows, OTHERS, mix, kinds={}))
    answers = [e for e in examples if e.kind == "answer"]
    assert answers and all(e.source == "kind" for e in examples)
    said = {"Baking bread.": "bake bread", "Nurse.": "nurse", "Small town.": "small town"}
    assert {e.reply for e in answers} <= set(said)  # 'to bake bread' is said as something done
    for e in answers:
        asked = question(e.prompt).lower()
        assert not any(w in asked for w in ("bake", "nurse", "work as", "small", "live"))  # the kind, in other words
        assert said[e.reply] in e.prompt.lower()
    abstains = [e for e in examples if e.kind == "abstain"]
    assert abstains and all(e.reply in ABSTAIN for e in abstains)


def test_the_kind_of_an_answer_comes_from_its_pattern_or_its_sorted_kind() -> None:
    rng = random.Random(0)
    assert kind_of(classify_fact("I work as a nurse."), {}, rng) == "job"
    assert kind_of(classify_fact("I work at the mall."), {}, rng) == "workplace"
    assert kind_of(classify_fact("I love pizza."), {"pizza": "food"}, rng) == "food"
    assert kind_of(classify_fact("I love pizza."), {}, rng) is None  # not sorted and nothing done: no question
    assert kind_of(classify_fact("My favorite color is teal."), {}, rng) is None
    assert kind_answer("to paint in my spare time", own=False) == "painting in their spare time"
    assert kind_answer("to paint in my spare time", own=True) == "painting in your spare time"


def test_a_v7_when_question_is_answered_with_the_day_its_memory_shows() -> None:
    rows: list[tuple[list[PersonaFact], list[object], list[tuple[int, str]]]]
    rows = [([classify_fact("I bought a new car."), classify_fact("I adopted a puppy.")], [], [(1, "hi")])] * 60
    plain = Caster(lambda text: len(text.split()), random.Random(2), facts=OTHERS)
    shown = Caster(lambda text: len(text.split()), random.Random(2), facts=OTHERS, dated=True)
    before = list(temporal_examples(plain, rows, OTHERS))
    after = list(temporal_examples(shown, rows, OTHERS))
    assert len(before) == len(after) > 20
    copied = 0
    for new in after:
        day = new.reply.rstrip(".")
        if "(" + day[0].lower() + day[1:] + ")" in new.prompt or f"({day})" in new.prompt:
            copied += 1  # the reply is the day written after the relative words in its memory
    resolved = [e for e in after if re.search(r"(yesterday|last \w+|days ago) \(", e.prompt)]
    assert resolved and copied >= len(resolved)
    assert any(o.reply != n.reply for o, n in zip(before, after))  # "The Sunday before 9 May" became the day
