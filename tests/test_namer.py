"""Tolerant parsing of a model's proposal name, and the namer in the dream cycle."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import App
from bot.namer import LLMNamer, parse_name
from tests.dream_data import NOW, month_of_history
from tests.fakes import ScriptedLLM
from tests.test_brain import graph


@pytest.mark.parametrize(
    "answer, expected",
    [
        (
            '{"name": "project_planning", "description": "Planning a project."}',
            ("project_planning", "Planning a project."),
        ),
        (
            "Sure! ```json\n{'name': 'Project Planning', 'description': 'Planning work'}\n```",
            ("project_planning", "Planning work"),
        ),
        ('{"name": "", "description": "x"} then {"name": "plans", "description": "Plans."}', ("plans", "Plans.")),
        ("I think it is about planning.", None),
        ('{"name": "9lives", "description": "cats"}', None),
    ],
)
def test_parse_name_tolerates_small_model_output(answer: str, expected: tuple[str, str] | None) -> None:
    assert parse_name(answer) == expected


async def test_a_configured_model_names_the_proposal(app: App, tmp_path: Path) -> None:
    app.dream.services.namer = LLMNamer(
        ScriptedLLM('{"name": "project_planning", "description": "Someone is planning a project."}')
    )
    await app.importer.run(month_of_history(tmp_path / "m.jsonl"), "g1")
    await app.dream.run(NOW)
    names = {p.payload["name"]: p.payload["description"] for p in await app.governance.list()}
    assert names.get("project_planning") == "Someone is planning a project."


@pytest.mark.parametrize(
    "answer, expected",
    [
        ('[["I", "adopted", "cat"], ["cat", "named", "Miso"]]', {("user", "adopted", "cat"), ("cat", "named", "miso")}),
        ("Here you go:\n```json\n[['my sister', 'lives in', 'Lisbon'],]\n```", {("my sister", "lives_in", "lisbon")}),
        ('[{"subject": "You", "relation": "are", "object": "kind"}]', {("bot", "are", "kind")}),
        ('["I", "like", "tea"]', {("user", "like", "tea")}),
        ("no facts here", set()),
        ('[["I", "", "x"], ["a", "b"]]', set()),
    ],
)
def test_llm_triples_are_parsed_tolerantly(answer: str, expected: set[tuple[str, str, str]]) -> None:
    from bot.llm_extract import parse_triples

    assert {(t.subject, t.relation, t.object) for t in parse_triples(answer)} == expected


async def test_a_configured_llm_extracts_and_questions_still_add_nothing(app: App) -> None:
    from bot.llm_extract import LLMTripleExtractor
    from memory.conversation import NewMessage

    llm = ScriptedLLM('[["I", "own", "a sailboat"]]')
    graph(app).llm_extract = LLMTripleExtractor(llm)
    statement = await app.conversations.add(
        NewMessage("g1", "console", "s1", "c", "u1", "ana", "I own a sailboat", NOW)
    )
    decisions = await graph(app).absorb(statement, NOW)
    assert [(d.triple.subject, d.triple.relation, d.triple.object) for d in decisions] == [
        ("user", "own", "a sailboat")
    ]
    question = await app.conversations.add(NewMessage("g1", "console", "s2", "c", "u1", "ana", "do I own a boat?", NOW))
    assert await graph(app).absorb(question, NOW) == []
    assert len(llm.prompts) == 1, "questions never reach the LLM extractor"
