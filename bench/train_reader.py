"""Train the reader adapter (issue 28): a LoRA that teaches the bundled Gemma 3 270M to answer from the
memory section of the bot's own prompt, to say when the memory does not hold the answer, and to keep a chat
turn short.

    python -m bench.train_reader                       # resumes from bench/results/reader/ if a run is there
    python -m bench.train_reader --max-steps 600 --budget-s 5400
    python -m bench.train_reader --export              # write bot/reader/ from the latest checkpoint

Data (bench/reader_data.py, every example cast into the prompt ``bot.prompt.PromptBuilder`` builds):
SQuAD 2.0 dev (CC BY-SA 4.0) and Synthetic-Persona-Chat valid + test (CC BY 4.0), read offline from
``../shared/data/reader/``; sources and licences are in NOTICE. No evaluation split is read.

Training: peft LoRA (rank 8, alpha 16, every attention and MLP projection) on the converted bundled model in
float32; one example a forward pass (no padding), gradients accumulated over ``--accumulate`` examples; the
loss is taken on the reply tokens only (the reply and the end-of-turn token), and the 262k-row output layer
runs only on those positions, so a step costs about what the decoder layers cost on the prompt. A CUDA GPU is
used when there is one. Every ``--save-every`` steps the adapter, the optimizer and the position in the data
are saved to ``--out``, so a killed run resumes where it stopped.

On a borrowed GPU machine without the bot's code or the model files, ``bench/reader_pack.py`` trains the same
adapter from a small pack (the shipped adapter was trained that way: see docs/reader.md); its checkpoint has
this script's layout, so ``--export --out DIR`` ships it.

Export: the adapter in peft form (float16 safetensors) and as a llama.cpp GGUF LoRA (``adapter.gguf``), with
``manifest.json`` (steps, losses, data counts), into ``bot/reader/``, where both engines load it by default.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.reader_data import Example, build  # noqa: E402
from bot.config import Settings, offline_environment  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "reader"
SHIP = ROOT / "bot" / "reader"
TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
DEV = 160  # examples kept out of training, for the loss curve


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--max-steps", type=int, default=500)
    p.add_argument("--budget-s", type=float, default=3600.0, help="stop after this many seconds of this run")
    p.add_argument("--accumulate", type=int, default=8, help="examples per optimizer step")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--alpha", type=float, default=16.0)
    p.add_argument("--max-tokens", type=int, default=640, help="longer examples are left out")
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--dev-every", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--export", action="store_true", help="write bot/reader/ from the latest checkpoint and stop")
    p.add_argument("--ship", type=Path, default=SHIP)
    return p.parse_args(argv)


def load_model(settings: Settings):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from bot.llm import ensure_bundled_model

    path = ensure_bundled_model(settings.model_cache_dir, progress=False)
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32, attn_implementation="eager")
    return model, tokenizer


def encode(tokenizer, ex: Example) -> tuple[list[int], int]:
    """(token ids, where the reply starts): BOS + prompt as the engines tokenize it, then ' reply' and EOS."""
    prompt = [tokenizer.bos_token_id] + tokenizer(ex.prompt, add_special_tokens=False)["input_ids"]
    reply = tokenizer(" " + ex.reply, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return prompt + reply, len(prompt)


def reply_loss(model, ids: list[int], start: int, device: str):
    """Mean cross-entropy over the reply tokens, with the output layer applied at those positions only."""
    import torch

    causal = model.get_base_model()
    x = torch.tensor([ids], device=device)
    hidden = causal.model(input_ids=x).last_hidden_state[0, start - 1 : len(ids) - 1]
    logits = causal.lm_head(hidden).float()
    cap = getattr(causal.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return torch.nn.functional.cross_entropy(logits, x[0, start:])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    offline_environment()
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model

    if args.threads:
        torch.set_num_threads(args.threads)
    settings = Settings(_env_file=None)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    t0 = time.perf_counter()
    model, tokenizer = load_model(settings)
    ckpt = args.out / "checkpoint"
    state_path = args.out / "state.json"
    if args.export:
        return export(model, ckpt, state_path, args)

    count_cache: dict[str, int] = {}

    def count(text: str) -> int:
        n = count_cache.get(text)
        if n is None:
            n = count_cache[text] = len(tokenizer(text, add_special_tokens=False)["input_ids"])
        return n

    examples = build(count, seed=args.seed)
    encoded = []
    for ex in examples:
        ids, start = encode(tokenizer, ex)
        if len(ids) <= args.max_tokens:
            encoded.append((ex, ids, start))
    dev, train = encoded[:DEV], encoded[DEV:]
    kinds = Counter(f"{ex.kind}/{ex.source}" for ex, _, _ in train)
    mean_len = sum(len(i) for _, i, _ in train) / max(1, len(train))
    print(
        f"data: {len(train)} training examples ({dict(sorted(kinds.items()))}), {len(dev)} dev, mean "
        f"{mean_len:.0f} tokens; {len(examples) - len(encoded)} over {args.max_tokens} tokens left out; "
        f"built in {time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
    )

    if (ckpt / "adapter_config.json").exists():
        model = PeftModel.from_pretrained(model, str(ckpt), is_trainable=True)
        state = json.loads(state_path.read_text())
        print(f"resuming at step {state['step']}", file=sys.stderr)
    else:
        config = LoraConfig(
            r=args.rank,
            lora_alpha=args.alpha,
            lora_dropout=0.0,
            bias="none",
            target_modules=list(TARGET_MODULES),
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, config)
        state = {
            "step": 0,
            "seen": 0,
            "losses": [],
            "dev": [],
            "seconds": 0.0,
            "args": vars(args) | {"out": str(args.out), "ship": str(args.ship)},
        }
    model.to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    if (ckpt / "optimizer.pt").exists():
        optimizer.load_state_dict(torch.load(ckpt / "optimizer.pt"))
    order = list(range(len(train)))
    random.Random(args.seed).shuffle(order)

    def lr_at(step: int) -> float:  # warm-up, then cosine to a tenth
        warm = 20
        if step < warm:
            return args.lr * (step + 1) / warm
        t = min(1.0, (step - warm) / max(1, args.max_steps - warm))
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    def dev_loss() -> float:
        model.eval()
        with torch.no_grad():
            total = sum(float(reply_loss(model, ids, start, device)) for _, ids, start in dev[:80])
        model.train()
        return total / min(80, len(dev))

    if not state["dev"]:
        state["dev"].append([0, round(dev_loss(), 4)])
        print(f"dev loss before training: {state['dev'][-1][1]:.4f}", file=sys.stderr)
    started = time.perf_counter()
    model.train()
    while state["step"] < args.max_steps and time.perf_counter() - started < args.budget_s:
        step_t = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = lr_at(state["step"])
        total = 0.0
        for _ in range(args.accumulate):
            _, ids, start = train[order[state["seen"] % len(order)]]
            state["seen"] += 1
            loss = reply_loss(model, ids, start, device) / args.accumulate
            loss.backward()
            total += float(loss)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        state["step"] += 1
        state["losses"].append(round(total, 4))
        state["seconds"] += time.perf_counter() - step_t
        if state["step"] % 5 == 0:
            recent = state["losses"][-5:]
            print(
                f"step {state['step']}: loss {sum(recent) / len(recent):.4f}, "
                f"{time.perf_counter() - step_t:.1f} s/step",
                file=sys.stderr,
                flush=True,
            )
        if state["step"] % args.dev_every == 0:
            state["dev"].append([state["step"], round(dev_loss(), 4)])
            print(f"dev loss at step {state['step']}: {state['dev'][-1][1]:.4f}", file=sys.stderr, flush=True)
        if state["step"] % args.save_every == 0 or state["step"] >= args.max_steps:
            save(model, optimizer, ckpt, state_path, state, kinds, len(train))
    save(model, optimizer, ckpt, state_path, state, kinds, len(train))
    print(f"stopped at step {state['step']} ({state['seconds']:.0f} s of training in all)", file=sys.stderr)
    return 0


def save(model, optimizer, ckpt: Path, state_path: Path, state: dict, kinds: Counter, n: int) -> None:
    import torch

    tmp = ckpt.with_name("checkpoint.partial")
    tmp.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(tmp))
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    state = state | {"data": {"train": n, "kinds": dict(kinds)}}
    if ckpt.exists():
        old = ckpt.with_name("checkpoint.old")
        ckpt.rename(old)
        tmp.rename(ckpt)
        import shutil

        shutil.rmtree(old)
    else:
        tmp.rename(ckpt)
    state_path.write_text(json.dumps(state, indent=1) + "\n")


def export(model, ckpt: Path, state_path: Path, args: argparse.Namespace) -> int:
    """bot/reader/: the peft adapter in float16, its GGUF LoRA, and the manifest."""
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file, save_file

    from bot.distill import export_gguf_lora
    from bot.reader import GGUF_NAME, MANIFEST

    if not (ckpt / "adapter_config.json").exists():
        print(f"no checkpoint in {ckpt}", file=sys.stderr)
        return 2
    state = json.loads(state_path.read_text())
    peft_model = PeftModel.from_pretrained(model, str(ckpt))
    ship = args.ship
    ship.mkdir(parents=True, exist_ok=True)
    weights = load_file(str(ckpt / "adapter_model.safetensors"))
    save_file({k: v.to(torch.float16) for k, v in weights.items()}, str(ship / "adapter_model.safetensors"))
    config = json.loads((ckpt / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = "gemma-3-270m (bundled)"
    (ship / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    alpha = float(config["lora_alpha"])
    export_gguf_lora(peft_model, ship / GGUF_NAME, alpha=alpha, dtype="f16")
    manifest = {
        "steps": state["step"],
        "examples_seen": state["seen"],
        "train_seconds": round(state["seconds"]),
        "data": state.get("data"),
        "dev_loss": state["dev"],
        "rank": config["r"],
        "alpha": alpha,
        "target_modules": sorted(config["target_modules"]),
        "trained_with": state.get("args"),
    }
    (ship / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    for path in ship.iterdir():
        path.chmod(0o644)  # safetensors writes 0600: package data must be readable by everyone
    print(f"exported step {state['step']} to {ship}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
