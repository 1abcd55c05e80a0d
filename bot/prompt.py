"""Prompt assembly within a token budget.

Two renderings of the same ContextBundle: the model's chat template when it
has one, and for base models (the bundled Gemma 3 270M) a plain transcript
with speaker labels, which the model continues; the stop pattern ends the
reply where the model starts writing the next speaker's line.

Budget: the current message always goes in (cut from the front if it alone
is too long); then recalled episodes best first, up to ~40 % of the budget;
then recent turns newest first; then any remaining episodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from memory.recall import ContextBundle

# A new line that starts with "<speaker>:" ends the bot's turn in a transcript.
SPEAKER_LINE = re.compile(r"\n[^\n:]{1,40}:")
_MEMORY_SHARE = 0.4


@dataclass(frozen=True)
class Prompt:
    text: str
    stop: tuple[str, ...]
    stop_pattern: re.Pattern[str] | None
    tokens: int
    episodes_used: tuple[int, ...]  # episode ids that made it into the prompt
    turns_used: int
    facts_used: tuple[int, ...] = ()  # knowledge-graph edge ids that made it into the prompt


@dataclass(frozen=True)
class PromptBuilder:
    bot_name: str
    persona: str
    budget_tokens: int
    count_tokens: Callable[[str], int]
    render_chat: Callable[[list[dict[str, str]]], str] | None = None  # None: transcript

    def build(self, bundle: ContextBundle, author_name: str, text: str) -> Prompt:
        count = self.count_tokens
        header = self.persona.strip()
        current = f"{author_name}: {text}"
        fixed = count(header) + count(current) + count(f"\n{self.bot_name}:") + 16
        if fixed > self.budget_tokens:  # keep the end of an overlong message
            text = _tail_within(text, self.budget_tokens - count(header) - 32, count)
            current = f"{author_name}: {text}"
            fixed = count(header) + count(current) + count(f"\n{self.bot_name}:") + 16
        left = self.budget_tokens - fixed

        memories: list[tuple[int, str]] = []
        memory_cap = int(left * _MEMORY_SHARE)
        spent = 0
        facts: list[int] = []
        for fact in bundle.facts:  # compact and specific: before episodes
            line = "- " + fact.sentence()
            cost = count(line) + 1
            if spent + cost > memory_cap:
                break
            memories.append((-fact.edge_id, line))
            facts.append(fact.edge_id)
            spent += cost
        pending = list(bundle.episodes)
        while pending:
            line = "- " + _one_line(pending[0].episode.content, pending[0].episode.created_at)
            cost = count(line) + 1
            if spent + cost > memory_cap:
                break
            memories.append((pending.pop(0).episode.id, line))
            spent += cost
        turns: list[str] = []
        for message in reversed(bundle.turns):
            label = self.bot_name if message.is_bot else message.author_name
            line = f"{label}: {message.content}"
            cost = count(line) + 1
            if spent + cost > left:
                break
            turns.insert(0, line)
            spent += cost
        for hit in pending:  # room left after the turns
            line = "- " + _one_line(hit.episode.content, hit.episode.created_at)
            cost = count(line) + 1
            if spent + cost <= left:
                memories.append((hit.episode.id, line))
                spent += cost

        speakers = {author_name, self.bot_name} | {
            m.author_name for m in bundle.turns if not m.is_bot
        }
        if self.render_chat is not None:
            rendered = self._chat(header, memories, bundle, turns, current)
            stop: tuple[str, ...] = ()
            pattern = None
        else:
            rendered = self._transcript(header, memories, turns, current)
            stop = tuple(f"\n{s}:" for s in sorted(speakers))
            pattern = SPEAKER_LINE
        return Prompt(
            text=rendered,
            stop=stop,
            stop_pattern=pattern,
            tokens=count(rendered),
            episodes_used=tuple(i for i, _ in memories if i > 0),
            facts_used=tuple(facts),
            turns_used=len(turns),
        )

    def _transcript(self, header: str, memories: list[tuple[int, str]], turns: list[str], current: str) -> str:
        parts = [header]
        if memories:
            parts.append(f"What {self.bot_name} remembers from earlier conversations:\n"
                         + "\n".join(line for _, line in memories))
        parts.append("Conversation:\n" + "\n".join([*turns, current, f"{self.bot_name}:"]))
        return "\n\n".join(parts)

    def _chat(
        self, header: str, memories: list[tuple[int, str]], bundle: ContextBundle, turns: list[str], text: str
    ) -> str:
        assert self.render_chat is not None
        system = header
        if memories:
            system += "\n\nWhat you remember from earlier conversations:\n" + "\n".join(l for _, l in memories)
        messages = [{"role": "system", "content": system}]
        kept = bundle.turns[len(bundle.turns) - len(turns) :] if turns else []
        for m in kept:
            role = "assistant" if m.is_bot else "user"
            content = m.content if m.is_bot else f"{m.author_name}: {m.content}"
            if messages[-1]["role"] == role:  # templates want alternating roles
                messages[-1]["content"] += "\n" + content
            else:
                messages.append({"role": role, "content": content})
        if messages[-1]["role"] == "user":
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": "user", "content": text})
        return self.render_chat(messages)


def _one_line(content: str, at: datetime) -> str:
    flat = " / ".join(line.strip() for line in content.splitlines() if line.strip())
    return f"[{at:%Y-%m-%d}] {flat}"


def _tail_within(text: str, budget: int, count: Callable[[str], int]) -> str:
    """The longest suffix of ``text`` within ``budget`` tokens (binary search on characters)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi) // 2
        if count(text[mid:]) <= max(budget, 1):
            hi = mid
        else:
            lo = mid + 1
    return "…" + text[lo:] if lo else text
