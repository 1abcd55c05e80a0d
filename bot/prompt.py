"""Prompt assembly within a token budget.

Two renderings of the same ContextBundle: the model's chat template when it
has one, and for base models (the bundled Gemma 3 270M) a plain transcript
with speaker labels, which the model continues; the stop pattern ends the
reply where the model starts writing the next speaker's line.

Layout: what does not change from one message to the next comes first (the
header, then the preamble lines that are the bot's standing state: its
self-description, what people here think), so that the engine keeps it in its
prefix cache; then what was chosen for this message (the preamble lines that
carry a score, such as the views nearest the message), the memories, the
recent turns and the message.

Budget: the current message always goes in (cut from the front if it alone
is too long); then the layers' preamble sections, then their memory
sections by priority (each best first), up to ~40 % of the budget; then the
recent turns newest first; then any remaining memories. The prompt records
which items of each layer made it in, so each layer can reinforce them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from memory.layers.base import MEMORY, PREAMBLE, TRANSCRIPT, MemoryItem, Section
from memory.recall import ContextBundle

# A new line that starts with "<speaker>:" ends the bot's turn in a transcript; so does " / <speaker>:", the
# way remembered exchanges are flattened into one memory line ("[date] ana: ... / bo: ..."), which a base model
# copies to write the other speakers' turns on its own line. So do a blank line and a line that opens one of
# the prompt's own sections ("Conversation continued...", "Conversation ended with the following words:"):
# a base model writes such filler after its turn, and it must never be shown or stored as the reply.
SPEAKER_LINE = re.compile(r"\n[^\n:]{1,40}:| / [^\s:/]{1,32}(?: [^\s:/]{1,32}){0,2}:|\n[ \t]*\n|\nConversation\b")
_MEMORY_SHARE = 0.4
# One worked example of answering from a remembered line (memory_style "example"); about 60 tokens.
MEMORY_EXAMPLE = """Example of using a memory:
Memory: [2024-02-03] Sam: my dog is called Biscuit and he loves the beach
Sam: what was my dog's name again?
{bot}: Your dog is called Biscuit, the one who loves the beach."""


@dataclass(frozen=True)
class Prompt:
    text: str
    stop: tuple[str, ...]
    stop_pattern: re.Pattern[str] | None
    tokens: int
    used: Mapping[str, tuple[int, ...]]  # layer -> refs of the items that made it into the prompt
    turns_used: int

    @property
    def episodes_used(self) -> tuple[int, ...]:
        return tuple(self.used.get("episodes", ()))

    @property
    def facts_used(self) -> tuple[int, ...]:
        return tuple(self.used.get("facts", ()))


@dataclass(frozen=True)
class PromptBuilder:
    bot_name: str
    persona: str
    budget_tokens: int
    count_tokens: Callable[[str], int]
    render_chat: Callable[[list[dict[str, str]]], str] | None = None  # None: transcript
    # How a base model is shown its memories: "plain" (a titled list) or "example" (the list, then one worked
    # example of a reply that uses a remembered fact, so the model answers from memory instead of rambling).
    memory_style: str = "plain"
    # Where the best memories stand: "best_first" (each section's best item first, sections by priority) or
    # "best_last" (the same lines in reverse: the best item of the first section right before the conversation,
    # where a small model attends most).
    memory_order: str = "best_first"

    def build(self, bundle: ContextBundle, author_name: str, text: str) -> Prompt:
        """The prompt for ``text``: the layers' sections fitted to the budget by priority."""
        count = self.count_tokens
        preamble = sorted((s for s in bundle.sections if s.placement == PREAMBLE and s.items), key=lambda s: s.priority)
        memory = sorted((s for s in bundle.sections if s.placement == MEMORY), key=lambda s: s.priority)
        transcript = [i for s in bundle.sections if s.placement == TRANSCRIPT for i in s.items]

        header = self.persona.strip()
        current = f"{author_name}: {text}"
        fixed = count(header) + count(current) + count(f"\n{self.bot_name}:") + 16
        if fixed > self.budget_tokens:  # keep the end of an overlong message
            text = _tail_within(text, self.budget_tokens - count(header) - 32, count)
            current = f"{author_name}: {text}"
            fixed = count(header) + count(current) + count(f"\n{self.bot_name}:") + 16
        left = self.budget_tokens - fixed
        spent = 0
        used: dict[str, list[int]] = {}
        chosen: dict[int, list[str]] = {}  # section index -> lines (memory sections)

        def take(section_key: int, layer: str, item: MemoryItem, limit: int) -> bool:
            nonlocal spent
            line = "- " + item.prompt_line
            cost = count(line) + 1
            if spent + cost > limit:
                return False
            chosen.setdefault(section_key, []).append(line)
            if item.ref is not None:
                used.setdefault(layer, []).append(item.ref)
            spent += cost
            return True

        # Preamble sections (a self-narrative, say) first, within the memory share.
        memory_cap = int(left * _MEMORY_SHARE)
        standing: list[str] = []  # the bot's state, the same from one message to the next
        chosen_now: list[str] = []  # preamble lines picked for this message (they carry a score)
        for s in preamble:
            for item in s.items:
                line = item.prompt_line
                cost = count(line) + 1
                if spent + cost > memory_cap:
                    break
                (standing if item.score is None else chosen_now).append(line)
                if item.ref is not None:
                    used.setdefault(s.layer, []).append(item.ref)
                spent += cost
        # Memories by section priority, best first, up to the memory share ...
        pending: list[tuple[int, Section, MemoryItem]] = []
        for key, s in enumerate(memory):
            items = list(s.items)
            while items and take(key, s.layer, items[0], memory_cap):
                items.pop(0)
            pending += [(key, s, i) for i in items]
        # ... then the recent turns, newest first ...
        turns: list[str] = []
        kept: list[MemoryItem] = []
        for item in reversed(transcript):
            message = item.payload
            label = self.bot_name if message is not None and message.is_bot else None
            line = f"{label}: {message.content}" if label else item.prompt_line
            cost = count(line) + 1
            if spent + cost > left:
                break
            turns.insert(0, line)
            kept.insert(0, item)
            spent += cost
        # ... then whatever memories still fit.
        for key, s, item in pending:
            take(key, s.layer, item, left)

        blocks = [(s.title.replace("{bot}", self.bot_name), chosen[k]) for k, s in enumerate(memory) if k in chosen]
        if self.memory_order == "best_last":
            blocks = [(title, lines[::-1]) for title, lines in reversed(blocks)]
        # What does not change between messages comes first, so the engine keeps it evaluated in its cache
        # (llama.cpp reuses the longest prefix a prompt shares with the previous one): the header, the
        # standing preamble lines, then the lines chosen for this message, the memories and the turns.
        preamble_lines = standing + chosen_now
        if preamble_lines:
            header = header + "\n" + "\n".join(preamble_lines)
        speakers = {author_name, self.bot_name} | {
            i.payload.author_name for i in transcript if i.payload is not None and not i.payload.is_bot
        }
        if self.render_chat is not None:
            rendered = self._chat(header, blocks, kept, turns, current)
            stop: tuple[str, ...] = ()
            pattern = None
        else:
            rendered = self._transcript(header, blocks, turns, current)
            stop = tuple(f"\n{s}:" for s in sorted(speakers))
            pattern = SPEAKER_LINE
        return Prompt(
            text=rendered,
            stop=stop,
            stop_pattern=pattern,
            tokens=count(rendered),
            used={k: tuple(v) for k, v in used.items()},
            turns_used=len(turns),
        )

    def _transcript(self, header: str, blocks: list[tuple[str, list[str]]], turns: list[str], current: str) -> str:
        parts = [header]
        if blocks and self.memory_style == "example":
            parts.append(MEMORY_EXAMPLE.format(bot=self.bot_name))
        parts += [f"{title}:\n" + "\n".join(lines) for title, lines in blocks]
        parts.append("Conversation:\n" + "\n".join([*turns, current, f"{self.bot_name}:"]))
        return "\n\n".join(parts)

    def _chat(
        self, header: str, blocks: list[tuple[str, list[str]]], kept: list[MemoryItem], turns: list[str], text: str
    ) -> str:
        assert self.render_chat is not None
        system = header
        for title, lines in blocks:
            system += f"\n\n{title}:\n" + "\n".join(lines)
        messages = [{"role": "system", "content": system}]
        for item in kept:
            m = item.payload
            is_bot = m is not None and m.is_bot
            role = "assistant" if is_bot else "user"
            content = m.content if is_bot else item.prompt_line
            if messages[-1]["role"] == role:  # templates want alternating roles
                messages[-1]["content"] += "\n" + content
            else:
                messages.append({"role": role, "content": content})
        if messages[-1]["role"] == "user":
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": "user", "content": text})
        return self.render_chat(messages)


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
