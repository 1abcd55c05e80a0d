"""Naming proposals with the LLM, when a capable model is configured.

The bundled Gemma 3 270M is a small base model, so by default the dream
cycle names proposals from their distinctive terms; with ``HIPPOBOT_MODEL``
set to an instruction-following model, this asks it instead and parses its
answer tolerantly (a small model's JSON is often wrapped in prose or code
fences, or slightly off). Anything unusable falls back to the default.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence

from bot.llm import LanguageModel

log = logging.getLogger(__name__)

_OBJECT = re.compile(r"\{.*?\}", re.S)


def parse_name(text: str) -> tuple[str, str] | None:
    """(snake_case name, description) from a model's answer, or None."""
    for candidate in _OBJECT.findall(text):
        try:
            data = json.loads(candidate.replace("'", '"'))
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        name = re.sub(r"[^a-z0-9]+", "_", str(data.get("name", "")).lower()).strip("_")[:60]
        description = str(data.get("description", "")).strip()[:300]
        if re.fullmatch(r"[a-z][a-z0-9_]{1,62}", name) and description:
            return name, description
    return None


class LLMNamer:
    def __init__(self, llm: LanguageModel) -> None:
        self._llm = llm

    async def name(self, examples: Sequence[str], terms: Sequence[str]) -> tuple[str, str] | None:
        listing = "\n".join(f"- {e}" for e in examples)
        prompt = (
            "These chat messages are one kind of request a chat bot receives:\n"
            f"{listing}\n"
            f"Distinctive words: {', '.join(terms)}.\n"
            'Answer with JSON only: {"name": "<snake_case name, 2-3 words>", '
            '"description": "<one sentence: what the user is doing>"}\n'
        )
        if self._llm.uses_chat_template:
            prompt = self._llm.render_chat([{"role": "user", "content": prompt}])
        try:
            text = await self._llm.generate(prompt, max_new_tokens=80).complete()
        except Exception:  # naming is optional: keep the default on any failure
            log.warning("LLM naming failed; using the default name", exc_info=True)
            return None
        return parse_name(text)
