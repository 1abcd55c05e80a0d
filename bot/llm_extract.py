"""Fact extraction by the LLM, when a capable model is configured (HIPPOBOT_MODEL).

The model is asked for a JSON list of [subject, relation, object] triples.
Small models wrap JSON in prose or code fences, use single quotes, trailing
commas, objects instead of lists, or "I"/"me" for the speaker; the parser
accepts all of that, and anything it cannot read yields no triples (the
spaCy extractor is then used instead). Questions are still skipped.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from bot.llm import LanguageModel
from memory.extract import BOT, USER, Triple

log = logging.getLogger(__name__)

_ARRAY = re.compile(r"\[.*\]", re.S)
_SPEAKER = {"i", "me", "my", "myself", "user", "the user", "speaker", "we"}
_ADDRESSEE = {"you", "your", "assistant", "the assistant", "bot", "the bot"}


def _norm(value: Any) -> str:
    text = re.sub(r"\s+", " ", str(value)).strip().strip(".").lower()
    if text in _SPEAKER:
        return USER
    if text in _ADDRESSEE:
        return BOT
    return text


def parse_triples(answer: str, *, confidence: float = 0.7) -> list[Triple]:
    """Triples from a model's answer; [] when nothing usable is there."""
    match = _ARRAY.search(answer)
    if match is None:
        return []
    raw = match.group(0)
    candidates = [raw, raw.replace("'", '"'), re.sub(r",\s*([\]}])", r"\1", raw.replace("'", '"'))]
    data: Any = None
    for candidate in candidates:
        try:
            data = json.loads(candidate)
            break
        except json.JSONDecodeError:
            continue
    if not isinstance(data, list):
        return []
    if len(data) == 3 and all(isinstance(x, str) for x in data):
        data = [data]  # one bare triple
    out = []
    for item in data:
        if isinstance(item, dict):
            item = [item.get("subject"), item.get("relation") or item.get("predicate"), item.get("object")]
        if not isinstance(item, list | tuple) or len(item) != 3 or not all(item):
            continue
        subject, relation, obj = (_norm(x) for x in item)
        relation = re.sub(r"[^a-z0-9]+", "_", relation).strip("_")
        if subject and relation and obj and subject != obj:
            out.append(Triple(subject, relation, obj, 0.0, confidence, subject, obj))
    return out


class LLMTripleExtractor:
    def __init__(self, llm: LanguageModel) -> None:
        self._llm = llm

    async def __call__(self, text: str) -> list[Triple]:
        prompt = (
            "Extract the facts this chat message states as a JSON list of [subject, relation, object] "
            'triples. Use "I" for the speaker and "you" for the assistant. Answer with JSON only.\n'
            f"Message: {text}\nJSON:"
        )
        if self._llm.uses_chat_template:
            prompt = self._llm.render_chat([{"role": "user", "content": prompt}])
        try:
            answer = await self._llm.generate(prompt, max_new_tokens=160).complete()
        except Exception:  # extraction by LLM is optional: spaCy takes over
            log.warning("LLM extraction failed", exc_info=True)
            return []
        return parse_triples(answer)
