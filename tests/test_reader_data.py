"""The reader's training data (bench/reader_data.py): what an example teaches is what it says it teaches.

Built from small inline rows in SQuAD's and Persona-Chat's shapes (the real files live outside the repository,
in ../shared/data/reader/), through the real PromptBuilder.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from bench.reader_data import ABSTAIN, MIXES, NAMES, Caster, Mix, squad_examples

PARAGRAPH = ("The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region "
             "in France. They were descended from Norse raiders and pirates from Denmark, Iceland and Norway. "
             "Their identity emerged initially in the first half of the 10th century. The Norman dynasty had a "
             "major political, cultural and military impact on medieval Europe.")
OTHERS = [(NAMES[i], f"I like thing number {i}.") for i in range(30)]  # unrelated remembered moments


def caster(seed: int = 0) -> Caster:
    return Caster(lambda text: len(text.split()), random.Random(seed),
                  facts=[("Bea", "I have a dog named Rex."), ("Tariq", "I work as a nurse.")])


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
    examples = list(squad_examples(caster(), [row("Where were the Norse raiders from?",
                                                  answer={"text": "Denmark, Iceland and Norway",
                                                          "answer_start": start})] * 5,
                                   OTHERS, MIXES["v4"]))
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
