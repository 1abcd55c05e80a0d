"""Tolerant parsing of a model's proposal name, and the namer in the dream cycle."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import App
from bot.namer import LLMNamer, parse_name
from tests.dream_data import NOW, month_of_history
from tests.fakes import ScriptedLLM


@pytest.mark.parametrize(
    "answer, expected",
    [
        ('{"name": "project_planning", "description": "Planning a project."}', ("project_planning", "Planning a project.")),
        ("Sure! ```json\n{'name': 'Project Planning', 'description': 'Planning work'}\n```", ("project_planning", "Planning work")),
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
