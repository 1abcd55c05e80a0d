"""Generation on an OpenAI-compatible server: llama.cpp's server, vLLM, Ollama, LM Studio.

``HIPPOBOT_LLM_URL`` is the server's base URL (``http://host:8080/v1``). Replies are
streamed from ``/chat/completions`` (the prompt builder's messages) or ``/completions``
(a transcript, for base models), with the bot's stop strings, its token limit, its
sampling settings and, where the server gives them, per-token log-probabilities for the
write gate's surprise measure. Resonance boosts go out as ``logit_bias``: the words' token
ids come from the server's tokenize endpoint (llama.cpp: ``/tokenize`` with ``content``, vLLM:
``/tokenize`` with ``prompt``, llama-cpp-python: ``/extras/tokenize``); a server without one gets no boosts, said once
in the log.

A connection failure, a timeout or a 5xx/429 answer is retried with backoff while no text
has arrived; after that, or once text has been streamed, the generation fails with
``LLMUnavailable`` and the transport tells the person so (their message is stored and
absorbed all the same). Token counts for the prompt budget are estimated locally on the
safe side (one token per three bytes), since the server's tokenizer is a network call away.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from bot.llm import Generation, LLMError, LLMUnavailable, StopScanner, TextStream, finish_stats

log = logging.getLogger(__name__)

_CHAT = "\x00hippobot-chat\x00"  # render_chat's output: the messages as JSON, for generate to send as-is
_MAX_STOPS = 4  # the OpenAI API's limit; longer lists are cut here and the rest enforced locally
_BIAS_LIMIT = 100.0
_WORD_CACHE = 20_000


class _Retryable(Exception):
    pass


class _WithoutLogprobs(Exception):
    pass


class OpenAICompatibleLLM:
    """A LanguageModel whose generations run on a remote OpenAI-compatible server."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        api: str = "chat",
        timeout: float = 60.0,
        retries: int = 2,
        concurrency: int = 2,
        max_new_tokens: int = 96,
        temperature: float = 0.7,
        top_p: float = 0.9,
        seed: int | None = None,
        backoff: float = 0.5,
        logprobs: bool = True,
    ) -> None:
        if api not in ("chat", "completions"):
            raise ValueError(f"api must be 'chat' or 'completions', not {api!r}")
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        self._root = f"{parts.scheme}://{parts.netloc}"
        self.model = model
        self.api = api
        self.name = f"{model or 'default model'} at {parts.netloc}"
        self.uses_chat_template = api == "chat"
        self._api_key = api_key
        self._timeout = timeout
        self._retries = retries
        self._backoff = backoff
        self._concurrency = concurrency
        self._defaults = {"max_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p}
        if seed is not None:
            self._defaults["seed"] = seed
        self._session: Any = None
        self._slots: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._word_ids: dict[str, tuple[int, ...]] = {}
        self._text_ids: dict[str, tuple[int, ...]] = {}  # the tokens of stop labels, to leave out of boosts
        self._added: set[int] = set()
        self._tokenizer: tuple[str, Any] | None = None  # (url, body maker) that worked
        self._no_tokenizer = False
        self._logprobs_ok = logprobs  # turned off for good if the server refuses them

    @classmethod
    def from_settings(cls, settings: Any) -> OpenAICompatibleLLM:
        api = settings.llm_api
        if api == "auto":
            api = "completions" if settings.prompt_style == "transcript" else "chat"
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return cls(
            settings.llm_url,
            model=settings.llm_model,
            api_key=key,
            api=api,
            timeout=settings.llm_timeout,
            retries=settings.llm_retries,
            concurrency=settings.llm_concurrency,
            max_new_tokens=settings.max_new_tokens,
            temperature=settings.temperature,
            top_p=settings.top_p,
            seed=settings.seed,
            logprobs=settings.llm_logprobs,
        )

    # --- prompt helpers -----------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """A safe-side estimate: real tokenizers average three to four bytes per token on chat text."""
        return math.ceil(len(text.encode("utf-8")) / 3)

    def render_chat(self, messages: Sequence[Mapping[str, str]]) -> str:
        return _CHAT + json.dumps([{"role": m["role"], "content": m["content"]} for m in messages])

    def word_token_ids(self, words: Iterable[str], *, exclude: Sequence[str] = ()) -> dict[str, tuple[int, ...]]:
        """Only words already looked up (``aword_token_ids`` asks the server); no network call here."""
        banned = {i for e in exclude for i in self._text_ids.get(e, ())}
        out = {}
        for w in words:
            ids = tuple(i for i in self._word_ids.get(w, ()) if i not in banned)
            if ids:
                out[w] = ids
        return out

    async def aword_token_ids(self, words: Iterable[str], *, exclude: Sequence[str] = ()) -> dict[str, tuple[int, ...]]:
        """Each word's token ids (after a space, as written and capitalised) from the server's tokenizer,
        without the tokens the server adds to any text (BOS) or those of ``exclude``."""
        words = list(dict.fromkeys(words))
        if self._no_tokenizer or not words:
            return {}
        for e in exclude:
            if e and e not in self._text_ids:
                self._text_ids[e] = tuple(await self._tokenize(e))
        missing = [w for w in words if w not in self._word_ids]
        forms = {w: list(dict.fromkeys((" " + w, " " + w[:1].upper() + w[1:]))) for w in missing}
        texts = [f for w in missing for f in forms[w]]
        found = await asyncio.gather(*(self._tokenize(t) for t in texts)) if texts else []
        ids_of = dict(zip(texts, found))
        for w in missing:
            if len(self._word_ids) < _WORD_CACHE:
                self._word_ids[w] = tuple(dict.fromkeys(i for f in forms[w] for i in ids_of[f]))
        return self.word_token_ids(words, exclude=exclude)

    async def _tokenize(self, text: str) -> list[int]:
        if self._no_tokenizer:
            return []
        candidates = (
            [self._tokenizer]
            if self._tokenizer
            else [
                (f"{self._root}/tokenize", lambda t: {"content": t, "add_special": False, "model": self.model}),
                (f"{self._root}/tokenize", lambda t: {"prompt": t, "model": self.model, "add_special_tokens": False}),
                (f"{self._root}/extras/tokenize", lambda t: {"input": t, "model": self.model}),
            ]
        )
        session = await self._client()
        answered = False
        for url, body in candidates:
            try:
                async with session.post(url, json=body(text), headers=self._headers()) as resp:
                    answered = True
                    data = await resp.json(content_type=None) if resp.status == 200 else None
            except Exception as exc:  # the server is down, or its answer is not JSON: try the next
                log.debug("tokenize at %s failed: %s", url, exc)
                continue
            tokens = data.get("tokens") if isinstance(data, dict) else None
            if isinstance(tokens, list) and all(isinstance(t, int) for t in tokens):
                if self._tokenizer is None:
                    self._tokenizer = (url, body)
                    if text:  # what the server adds to any text (a BOS), learnt from the empty string
                        self._added = set(await self._tokenize(""))
                    else:
                        self._added = set(tokens)
                return [t for t in tokens if t not in self._added]
        if self._tokenizer is None and answered:  # the server is up and has none (a down one is asked again)
            self._no_tokenizer = True
            log.info("the server at %s has no tokenize endpoint: resonance boosts are skipped", self._root)
        return []

    # --- generation ---------------------------------------------------------

    _warned_adapter = False

    def generate(
        self,
        prompt: str,
        *,
        stop: Sequence[str] = (),
        stop_pattern: re.Pattern[str] | None = None,
        max_new_tokens: int | None = None,
        boosts: Mapping[int, float] | None = None,
        adapter: Any = None,
        greedy: bool = False,
    ) -> Generation:
        """Start a streamed generation on the server; iterate the result for text deltas. A scope's LoRA
        ``adapter`` cannot be applied to a remote server: it is logged once and the server's model answers.
        ``greedy`` asks for temperature 0."""
        if adapter is not None and not self._warned_adapter:
            log.warning("the OpenAI-compatible engine cannot apply LoRA adapters; the server's model answers")
            self._warned_adapter = True
        generation = Generation(asyncio.get_running_loop())
        scanner = StopScanner(stop=tuple(stop), pattern=stop_pattern)
        task = asyncio.create_task(
            self._generate(generation, prompt, scanner, tuple(stop), max_new_tokens, boosts, greedy)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return generation

    async def _generate(
        self,
        gen: Generation,
        prompt: str,
        scanner: StopScanner,
        stop: tuple[str, ...],
        max_new_tokens: int | None,
        boosts: Mapping[int, float] | None,
        greedy: bool,
    ) -> None:
        try:
            if self._slots is None:
                self._slots = asyncio.Semaphore(self._concurrency)
            async with self._slots:
                await self._attempts(gen, prompt, scanner, stop, max_new_tokens, boosts, greedy)
        except asyncio.CancelledError:
            gen._push("error", LLMError("generation cancelled at shutdown"))
            raise
        except LLMError as exc:
            gen._push("error", exc)
        except Exception as exc:  # a malformed answer: reported to the waiting caller
            log.exception("generation on %s failed", self._root)
            gen._push("error", LLMError(f"the server's answer could not be read: {exc}"))
        else:
            gen._push("done")

    def _body(
        self,
        prompt: str,
        stop: tuple[str, ...],
        max_new_tokens: int | None,
        boosts: Mapping[int, float] | None,
        greedy: bool = False,
    ) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = dict(self._defaults, stream=True)
        if greedy:
            body["temperature"] = 0.0
        if max_new_tokens:
            body["max_tokens"] = max_new_tokens
        if self.model:
            body["model"] = self.model
        if stop:
            body["stop"] = list(stop[:_MAX_STOPS])
        if boosts:
            body["logit_bias"] = {str(int(i)): max(-_BIAS_LIMIT, min(_BIAS_LIMIT, float(v))) for i, v in boosts.items()}
        if prompt.startswith(_CHAT):
            body["messages"] = json.loads(prompt[len(_CHAT) :])
            if self._logprobs_ok:
                body["logprobs"] = True
            return f"{self.base_url}/chat/completions", body
        body["prompt"] = prompt
        if self._logprobs_ok:
            body["logprobs"] = 1
        return f"{self.base_url}/completions", body

    async def _attempts(
        self,
        gen: Generation,
        prompt: str,
        scanner: StopScanner,
        stop: tuple[str, ...],
        max_new_tokens: int | None,
        boosts: Mapping[int, float] | None,
        greedy: bool,
    ) -> None:
        stream = TextStream(scanner)
        state: dict[str, Any] = {"raw": "", "tokens": 0, "surprise": [], "finish": None}
        last: Exception | None = None
        attempt = 0
        while True:
            url, body = self._body(prompt, stop, max_new_tokens, boosts, greedy)
            try:
                await self._stream(gen, url, body, stream, state)
                break
            except _WithoutLogprobs:
                continue  # asked again at once, without logprobs; not a failed attempt
            except _Retryable as exc:
                cause = exc.__cause__
                last = cause if isinstance(cause, Exception) else exc
                if state["raw"]:  # text was shown: a retry would repeat it
                    raise LLMUnavailable(f"the language model server at {self._root} broke off: {last}") from last
                attempt += 1
                log.warning(
                    "language model server %s: %s (attempt %d of %d)", self._root, last, attempt, self._retries + 1
                )
                if attempt > self._retries:
                    raise LLMUnavailable(
                        f"the language model server at {self._root} is not answering: {last}"
                    ) from last
                await asyncio.sleep(min(8.0, self._backoff * 2 ** (attempt - 1)))
        finish = state["finish"]
        stopped_by = (
            "cancelled" if gen.cancelled.is_set() else "stop" if stream.stopped or finish == "stop" else "length"
        )
        # a server-side stop string ends the text without the string: the local scanner saw none
        ids = [0] * state["tokens"]
        finish_stats(gen, stream, ids, state["surprise"], [], stopped_by)

    async def _stream(
        self, gen: Generation, url: str, body: dict[str, Any], stream: TextStream, state: dict[str, Any]
    ) -> None:
        import aiohttp

        session = await self._client()
        try:
            async with session.post(url, json=body, headers=self._headers()) as resp:
                if resp.status >= 500 or resp.status == 429:
                    raise _Retryable(f"HTTP {resp.status}: {(await resp.text())[:200]}")
                if resp.status != 200:
                    detail = (await resp.text())[:300]
                    if self._logprobs_ok and "logprobs" in body and resp.status in (400, 422):
                        self._logprobs_ok = False  # some servers refuse logprobs: ask again without them
                        log.info("server %s refused logprobs; surprise is not measured there", self._root)
                        raise _WithoutLogprobs(detail)
                    raise LLMError(f"the language model server refused the request (HTTP {resp.status}): {detail}")
                async for line in _sse_lines(resp.content):
                    if line == "[DONE]":
                        break
                    self._chunk(gen, json.loads(line), stream, state)
                    if gen.cancelled.is_set() or stream.stopped:
                        break
        except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError) as exc:
            raise _Retryable(str(exc) or type(exc).__name__) from exc

    def _chunk(self, gen: Generation, chunk: dict[str, Any], stream: TextStream, state: dict[str, Any]) -> None:
        if "error" in chunk:
            raise LLMError(f"the language model server reported: {chunk['error']}")
        choices = chunk.get("choices") or []
        if not choices:
            return
        choice = choices[0]
        if "delta" in choice:
            piece = (choice.get("delta") or {}).get("content") or ""
            logprobs = [c.get("logprob") for c in ((choice.get("logprobs") or {}).get("content") or [])]
        else:
            piece = choice.get("text") or ""
            logprobs = list((choice.get("logprobs") or {}).get("token_logprobs") or [])
        if choice.get("finish_reason"):
            state["finish"] = choice["finish_reason"]
        state["surprise"].extend(-float(lp) for lp in logprobs if isinstance(lp, (int, float)))
        state["tokens"] += len(logprobs) if logprobs else (1 if piece else 0)
        if not piece:
            return
        state["raw"] += piece
        delta = stream.update(state["raw"].lstrip())
        if delta:
            if gen.stats.first_token_s is None:
                gen.stats.first_token_s = time.perf_counter() - gen.submitted_at
            gen._push("delta", delta)

    # --- plumbing -----------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    async def _client(self) -> Any:
        import aiohttp

        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=self._timeout, sock_connect=min(10.0, self._timeout))
            self._session = aiohttp.ClientSession(timeout=timeout)
        return self._session

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()

    def close(self) -> None:
        """Nothing to free off the event loop; ``aclose`` closes the HTTP session."""


async def _sse_lines(content: Any):
    """The data fields of a server-sent event stream."""
    async for raw in content:
        line = raw.decode("utf-8", errors="replace").strip()
        if line.startswith("data:"):
            yield line[5:].strip()
