"""Test doubles for the LLM seam only (the database is never faked)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping, Sequence

from bot.llm import Generation, StopScanner, TextStream


class ScriptedLLM:
    """Streams a fixed reply word by word, honouring stop strings like the real engine."""

    name = "scripted"
    uses_chat_template = False

    def __init__(
        self, reply: str = "Nice to meet you.", *, delay: float = 0.0, surprise: float = 2.5, entropy: float = 3.0
    ) -> None:
        self.reply = reply
        self.delay = delay
        self.surprise = surprise
        self.entropy = entropy
        self.vocab: dict[str, int] = {}  # word (lower case) -> a made-up token id, stable for this instance
        self.prompts: list[str] = []
        self.boosts: list[dict[int, float]] = []  # per generation
        self.adapters: list[object] = []  # the adapter each generation was asked to run with
        self.greedy: list[bool] = []  # whether each generation was asked to decode greedily

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + text.count("\n")

    def word_token_ids(self, words: Iterable[str], *, exclude: Sequence[str] = ()) -> dict[str, tuple[int, ...]]:
        """One made-up id per word (1000, 1001, ... in first-seen order); punctuation-only words and the words
        of ``exclude`` have none."""
        banned = {w.strip(":").lower() for e in exclude for w in e.split()}
        out: dict[str, tuple[int, ...]] = {}
        for word in words:
            key = word.lower()
            if not any(ch.isalnum() for ch in key) or key in banned:
                continue
            out[word] = (self.vocab.setdefault(key, 1000 + len(self.vocab)),)
        return out

    def render_chat(self, messages: Sequence[Mapping[str, str]]) -> str:
        return "\n".join(f"<{m['role']}>{m['content']}" for m in messages) + "\n<assistant>"

    def generate(
        self,
        prompt: str,
        *,
        stop: Sequence[str] = (),
        stop_pattern: re.Pattern[str] | None = None,
        max_new_tokens: int | None = None,
        boosts: Mapping[int, float] | None = None,
        adapter: object = None,
        greedy: bool = False,
    ) -> Generation:
        self.prompts.append(prompt)
        self.greedy.append(greedy)
        self.boosts.append(dict(boosts or {}))
        self.adapters.append(adapter)
        generation = Generation(asyncio.get_running_loop())
        asyncio.get_running_loop().create_task(self._stream(generation, StopScanner(tuple(stop), stop_pattern)))
        return generation

    async def _stream(self, generation: Generation, scanner: StopScanner) -> None:
        """Word by word through the engine's own TextStream, so stops behave as with a real model."""
        stream = TextStream(scanner)
        words = self.reply.split(" ")
        sent = 0
        for i in range(len(words)):
            if self.delay:
                await asyncio.sleep(self.delay)
            delta = stream.update(" ".join(words[: i + 1]))
            sent += 1
            if delta:
                generation._push("delta", delta)
            if stream.stopped:
                break
        tail = stream.finish(ended=True)
        if tail:
            generation._push("delta", tail)
        generation.text = stream.text
        generation.stats.tokens = sent
        generation.stats.mean_surprise = self.surprise
        generation.stats.mean_entropy = self.entropy
        generation.stats.first_token_s = 0.001
        generation._push("done")

    def close(self) -> None:
        pass
