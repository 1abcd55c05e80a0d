"""The language-model engines side by side, on the same prompts (run by bench/pipeline.py, or alone).

    python -m bench.engines [--engines bare,transformers,llamacpp,openai] [--repeats 3] [--tokens 64]

Engines:

* ``bare``: transformers ``model.generate`` on the bf16 model (the bundled GGUF converted once), greedy,
  no processors or streamer: the reference the issue's 4x is measured against;
* ``transformers``: the bot's transformers engine (bot.llm.TransformersLLM), the default until now;
* ``llamacpp``: the bot's llama.cpp engine (bot.llm_llamacpp), the default: the shipped Q4_K_M file with its
  vocabulary trimmed to Latin-script text, punctuation and emoji (bot.gguf_trim);
* ``llamacpp-full``: the same engine on the shipped file as it is (HIPPOBOT_LLAMACPP_VOCAB=full);
* ``llamacpp-reader``: the default engine with the reader adapter (bot/reader/) applied as a llama.cpp LoRA,
  as the bot runs it (``llamacpp`` is the same without it: HIPPOBOT_READER=off);
* ``openai``: the bot's HTTP client (bot.llm_openai) against ``python -m bot.llama_server`` (llama_cpp.server)
  on the same file, started here on a free port: what the HTTP path costs. Without logprobs: that server computes
  them in Python over the whole vocabulary, about 4 tokens/s (HIPPOBOT_LLM_LOGPROBS=false does the same).

Speed, on chat transcripts of about 60 ("short") and 600 ("long") tokens. Each repeat is a different
transcript (its first line differs), so no engine serves a prompt's prefix from a cache: cold prefill.
The bot's engines run with the bot's sampling settings (temperature 0.7, top-p 0.9, repetition penalty
1.15, fixed seed) and no stop strings; ``bare`` runs greedy. Time to first token is from submission to
the first streamed text (``bare``: a one-token ``generate``); decode tokens/s is (tokens - 1) over the
time after the first token.

Quality, against the bf16 transformers reference on the same token ids: perplexity of a fixed held-out
text (bench/data/engines/heldout.txt, never used to choose anything), and the share of the reference's
greedy continuations (32 tokens after each long prompt) that the engine's own argmax reproduces, token
by token, when fed the same prefix (teacher-forced agreement).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HELDOUT = Path(__file__).parent / "data" / "engines" / "heldout.txt"
ENGINES = (
    "llamacpp",
    "llamacpp-reader",
    "llamacpp-full",
    "openai",
    "bare",
    "transformers",
)  # llama.cpp first: torch's idle threads spin a while
NAMES = ["ana", "ben", "chloe", "dev"]
LINES = [
    "I finally finished the bookshelf, it only took three weekends",
    "how do you keep sourdough starter alive?",
    "my sister moved to Porto in May and loves it",
    "the bus was late again this morning",
    "does anyone know a good tutorial for rust lifetimes?",
    "we should plan the game night for Friday",
    "I tried the new ramen place near the station",
    "my cat keeps knocking plants off the windowsill",
    "the deploy failed because the migration timed out",
    "what's a good book for learning statistics?",
    "I'm training for a half marathon in October",
    "can someone review my pull request later?",
    "the heating in our flat broke during the cold snap",
    "my grandmother turns ninety next week",
    "I switched to a standing desk and my back is better",
    "is it worth learning the cello as an adult?",
    "the garden tomatoes are finally ripe",
    "I keep getting a KeyError when I parse the config",
    "we watched the meteor shower from the hill last night",
    "the library extended its opening hours",
]


def transcript(seed: int, tokens: int, count) -> str:
    """A chat transcript of about ``tokens`` tokens ending in the bot's label; ``seed`` picks its lines."""
    rng = random.Random(seed)
    lines = [f"Conversation {seed} in #channel-{rng.randrange(1000)} between friends and hippobot."]
    while True:
        lines.append(f"{rng.choice(NAMES)}: {rng.choice(LINES)}")
        if rng.random() < 0.3:
            lines.append(f"hippobot: {rng.choice(LINES)}")
        text = "\n".join(lines) + "\nana: what do you think?\nhippobot:"
        if count(text) >= tokens:
            return text


def pct(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: Path, threads: int) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    log = open(Path(tempfile.mkdtemp(prefix="hippobot-llm-server-")) / "server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot.llama_server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            str(threads),
            "--n_threads_batch",
            str(threads),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"llama_cpp.server did not start (log: {log.name})") from None
            time.sleep(0.3)


async def product_speed(llm: Any, prompts: dict[str, list[str]], tokens: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, texts in prompts.items():
        ttft, tps, n = [], [], []
        for text in texts:
            gen = llm.generate(text, max_new_tokens=tokens)
            await gen.complete()
            s = gen.stats
            if s.first_token_s is not None:
                ttft.append(s.first_token_s)
            if s.tokens_per_second:
                tps.append(s.tokens_per_second)
            n.append(s.tokens)
        out[kind] = {"ttft_s": pct(ttft, 50), "tokens_per_s": pct(tps, 50), "tokens": statistics.mean(n)}
    return out


def bare_speed(model: Any, tok: Any, prompts: dict[str, list[str]], tokens: int) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {}
    for kind, texts in prompts.items():
        ttft, tps = [], []
        for text in texts:
            ids = tok(text, return_tensors="pt")
            with torch.inference_mode():
                t0 = time.perf_counter()
                model.generate(**ids, max_new_tokens=1, do_sample=False)
                t1 = time.perf_counter()
                model.generate(**ids, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False)
                t2 = time.perf_counter()
            ttft.append(t1 - t0)
            tps.append((tokens - 1) / max(1e-9, (t2 - t1) - (t1 - t0)))
        out[kind] = {"ttft_s": pct(ttft, 50), "tokens_per_s": pct(tps, 50), "tokens": tokens}
    return out


def reference_logprobs(model: Any, ids: list[int]) -> np.ndarray:
    """bf16 transformers: log p of each token after the first, teacher-forced."""
    import torch

    with torch.inference_mode():
        logits = model(torch.tensor([ids])).logits[0, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        return logp.gather(1, torch.tensor(ids[1:]).unsqueeze(1)).squeeze(1).numpy()


def llama_logits(llama: Any, ids: list[int]) -> np.ndarray:
    """llama.cpp (logits_all): each position's logits, teacher-forced on ``ids``."""
    llama.reset()
    llama.eval(ids)
    return np.asarray(llama.scores[: len(ids)], dtype=np.float32)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    top = x.max(axis=-1, keepdims=True)
    return x - top - np.log(np.exp(x - top).sum(axis=-1, keepdims=True))


def quality(model: Any, tok: Any, gguf: Path, long_prompts: list[str], threads: int) -> dict[str, Any]:
    """Perplexity of the held-out text and greedy agreement, bf16 transformers vs llama.cpp on the same ids (a
    trimmed file's ids mapped to the original ones; a token it does not have counts as a miss)."""
    import torch
    from llama_cpp import Llama

    from bot.gguf_trim import read_kept_ids
    from bot.config import Settings
    from bot.llm_llamacpp import machine_load_settings

    text = HELDOUT.read_text(encoding="utf-8")
    ids = [tok.bos_token_id, *tok(text, add_special_tokens=False)["input_ids"]][:1024]
    ref_ppl = math.exp(-float(reference_logprobs(model, ids).mean()))
    kept = read_kept_ids(gguf)
    new_id = {int(o): i for i, o in enumerate(kept)} if kept is not None else None
    to_file = (lambda xs: [new_id[x] for x in xs]) if new_id is not None else (lambda xs: list(xs))  # noqa: E731
    missing = [i for i in ids if new_id is not None and i not in new_id]
    if missing:
        raise SystemExit(f"{gguf.name} lacks {len(missing)} token(s) of the held-out text: {missing[:5]}")
    with machine_load_settings(Settings().llamacpp_extra_buffers):  # as the engine loads it (off on AMX CPUs)
        llama = Llama(
            model_path=str(gguf),
            n_ctx=2048,
            n_batch=512,
            n_threads=threads,
            n_threads_batch=threads,
            logits_all=True,
            verbose=False,
        )
    try:
        fids = to_file(ids)
        logp = _log_softmax(llama_logits(llama, fids)[:-1])
        cpp_ppl = math.exp(-float(logp[np.arange(len(fids) - 1), fids[1:]].mean()))
        same = total = 0
        for prompt in long_prompts:
            p = tok(prompt, return_tensors="pt")
            with torch.inference_mode():
                out = model.generate(**p, max_new_tokens=32, min_new_tokens=32, do_sample=False)[0].tolist()
            n = p["input_ids"].shape[1]
            total += len(out) - n
            if new_id is not None and any(t not in new_id for t in out):
                continue  # the reference wrote a token the file does not have: all 32 count as misses
            logits = llama_logits(llama, to_file(out))
            chosen = logits[n - 1 : len(out) - 1].argmax(axis=-1)
            if kept is not None:
                chosen = kept[chosen]
            same += int((chosen == np.asarray(out[n:])).sum())
    finally:
        llama.close()
    return {
        "tokens": len(ids),
        "ppl_bf16": ref_ppl,
        "ppl_llamacpp": cpp_ppl,
        "ppl_ratio": cpp_ppl / ref_ppl,
        "greedy_agreement": same / total if total else None,
    }


async def run_engines(
    engines: list[str], *, repeats: int = 3, tokens: int = 64, threads: int = 2, cache_dir: Path | None = None
) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from bot.config import Settings
    from bot.llm import EngineConfig, TransformersLLM, ensure_bundled_model
    from bot.llm_llamacpp import LlamaCppLLM, ensure_engine_gguf
    from bot.llm_openai import OpenAICompatibleLLM

    torch.set_num_threads(threads)
    cache = cache_dir or Settings(_env_file=None).model_cache_dir
    path = ensure_bundled_model(cache, progress=False)
    gguf = {"llamacpp": ensure_engine_gguf(cache, "latin"), "llamacpp-full": ensure_engine_gguf(cache, "full")}
    tok = AutoTokenizer.from_pretrained(str(path))
    count = lambda t: len(tok(t, add_special_tokens=False)["input_ids"])  # noqa: E731
    prompts = {
        "short": [transcript(100 + i, 60, count) for i in range(repeats)],
        "long": [transcript(200 + i, 600, count) for i in range(repeats)],
    }
    sizes = {k: statistics.mean(count(t) for t in v) for k, v in prompts.items()}
    config = EngineConfig(cache_dir=cache, max_new_tokens=tokens, seed=7, progress=False, context_tokens=1024)
    results: dict[str, Any] = {"prompt_tokens": sizes, "new_tokens": tokens, "threads": threads, "speed": {}}
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.bfloat16).eval()
    for engine in engines:
        print(f"engine {engine}", file=sys.stderr)
        if engine == "bare":
            bare_speed(model, tok, {"short": prompts["short"][:1]}, 4)  # warm-up
            results["speed"][engine] = bare_speed(model, tok, prompts, tokens)
            continue
        server = None
        if engine == "transformers":
            llm: Any = TransformersLLM.load(config)
        elif engine in gguf:
            llm = LlamaCppLLM.load(
                replace(config, vocab="full" if engine == "llamacpp-full" else "latin"), threads=threads
            )
        elif engine == "llamacpp-reader":
            from bot.reader import reader_dir

            llm = LlamaCppLLM.load(replace(config, reader=reader_dir()), threads=threads)
        elif engine == "openai":
            server, url = start_server(gguf["llamacpp"], threads)
            llm = OpenAICompatibleLLM(
                url,
                api="completions",
                max_new_tokens=tokens,
                temperature=config.temperature,
                top_p=config.top_p,
                seed=7,
                logprobs=False,
            )  # see the docstring
        else:
            raise SystemExit(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
        try:
            await product_speed(llm, {"short": [transcript(99, 60, count)]}, 4)  # warm-up
            results["speed"][engine] = await product_speed(llm, prompts, tokens)
        finally:
            if hasattr(llm, "aclose"):
                await llm.aclose()
            else:
                llm.close()
            if server is not None:
                server.terminate()
                server.wait(timeout=10)
    for engine in (e for e in engines if e in gguf):
        print(f"quality: bf16 transformers vs {engine}", file=sys.stderr)
        results.setdefault("quality", {})[engine] = quality(model, tok, gguf[engine], prompts["long"], threads)
    return results


def print_engines(r: dict[str, Any]) -> None:
    sizes = r["prompt_tokens"]
    print(
        f"\nengines: {r['threads']} threads, {r['new_tokens']} new tokens, prompts of about "
        f"{sizes['short']:.0f} and {sizes['long']:.0f} tokens (median of the repeats)"
    )
    print(f"{'engine':<14}{'TTFT short ms':>15}{'TTFT long ms':>14}{'decode tok/s':>14}{'x bare':>8}")

    def decode(s: dict[str, Any]) -> float | None:  # the mean of the short and long prompts' medians
        tps = [s[k]["tokens_per_s"] for k in ("short", "long") if s[k]["tokens_per_s"]]
        return statistics.mean(tps) if tps else None

    bare = decode(r["speed"]["bare"]) if "bare" in r["speed"] else None
    for engine, s in r["speed"].items():
        rate = decode(s)
        ratio = f"{rate / bare:>8.1f}" if rate and bare else f"{'-':>8}"
        ms = lambda v: f"{v * 1000:.0f}" if v is not None else "-"  # noqa: E731
        print(
            f"{engine:<14}{ms(s['short']['ttft_s']):>15}{ms(s['long']['ttft_s']):>14}"
            f"{(f'{rate:.1f}' if rate else '-'):>14}{ratio}"
        )
    for engine, q in r.get("quality", {}).items():
        print(
            f"{engine}: held-out perplexity ({q['tokens']} tokens) bf16 {q['ppl_bf16']:.2f}, llama.cpp "
            f"{q['ppl_llamacpp']:.2f} (ratio {q['ppl_ratio']:.3f}); greedy agreement with bf16: "
            f"{q['greedy_agreement']:.3f}"
        )


async def main() -> None:
    from bot.config import offline_environment

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    offline_environment()
    r = await run_engines(
        [e for e in args.engines.split(",") if e], repeats=args.repeats, tokens=args.tokens, threads=args.threads
    )
    print_engines(r)


if __name__ == "__main__":
    asyncio.run(main())
