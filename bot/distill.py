"""LoRA distillation (peft): the replay mix trained into a small adapter, evaluated before anyone sees it.

``Distiller.distill`` is the weights layer's ``AdapterTrainer``. One run:

1. loads the base model (the bundled Gemma's converted copy, or ``HIPPOBOT_MODEL``): float32 on CPU; on a
   CUDA GPU 4-bit NF4 through bitsandbytes with gradient checkpointing (QLoRA);
2. measures what the model knows now: exact match on the cloze questions with no memory in the prompt,
   under the base model and under the scope's current adapter, and perplexity of a fixed held-out text
   (``bot/data/distill_heldout.txt``) under the base model;
3. trains a fresh LoRA on the mix (each step draws its batch by the mix's shares: episodes, facts, turns)
   for ``max_steps`` steps (the budget: a busy machine trains as much, only slower), checking held-out
   perplexity every ``check_every`` steps: past the allowed regression it stops and keeps the last
   checkpoint that was within it. ``budget_s`` is only a safety stop for a run that would never end;
4. measures the candidate the same way and passes it only if exact match rose by at least
   ``min_delta_em`` over the current adapter and perplexity rose by at most ``max_ppl_regression``; the
   reason says how many steps were trained in how many seconds, and why training stopped;
5. writes the peft adapter, the same adapter as a llama.cpp GGUF LoRA (``adapter.gguf``, what the default
   engine loads), and ``manifest.json`` with the numbers.

Blocking and slow (minutes on CPU): the dream step runs it in a thread.
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from bot.llm_llamacpp import LORA_GGUF
from memory.layers.weights import Cloze, DistillOutcome, TrainingText

log = logging.getLogger(__name__)


TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
KINDS = ("episode", "fact", "turn")


def heldout_text() -> str:
    return resources.files("bot").joinpath("data", "distill_heldout.txt").read_text("utf-8")


# Why training stopped (``metrics["stopped_by"]``).
STEPS, PERPLEXITY, TIME_LIMIT, NOTHING = "steps", "perplexity", "time_limit", "nothing_to_train"


@dataclass(frozen=True)
class TrainingRun:
    losses: list[float]
    kept: int  # steps whose weights the candidate keeps
    seconds: float
    stopped_by: str


@dataclass
class DistillSettings:
    rank: int = 8
    alpha: float = 16.0
    learning_rate: float = 3e-4
    max_steps: int = 60  # the training budget
    budget_s: float = 3600.0  # a safety stop only: training seconds after which a run stops short of max_steps
    batch_size: int = 4
    max_tokens: int = 96  # per training text
    mix: tuple[float, float, float] = (0.5, 0.3, 0.2)  # episodes, facts, turns
    min_delta_em: float = 0.05
    max_ppl_regression: float = 0.25
    check_every: int = 5  # steps between held-out perplexity checks (training stays within the regression)
    target_modules: tuple[str, ...] = TARGET_MODULES
    seed: int = 0


class Distiller:
    def __init__(
        self,
        model_path: str | Path | Callable[[], str],
        *,
        base_model: str,
        settings: DistillSettings | None = None,
        load_in_4bit: bool | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._model_path = model_path  # a callable: resolved at the first run (e.g. converting the bundled model)
        self.base_model = base_model
        self.settings = settings or DistillSettings()
        self.load_in_4bit = load_in_4bit  # None: on CUDA only
        self.clock = clock  # times training (the safety stop and train_s)

    # --- the run --------------------------------------------------------------------------------------------

    def distill(
        self, texts: Sequence[TrainingText], questions: Sequence[Cloze], current: Path | None, out_dir: Path
    ) -> DistillOutcome:
        import torch

        s = self.settings
        t0 = time.perf_counter()
        torch.manual_seed(s.seed)
        model, tokenizer, device = self._load()
        heldout = heldout_text()
        metrics: dict[str, Any] = {
            "texts": len(texts),
            "questions": len(questions),
            "base_model": self.base_model,
            "device": device,
        }
        metrics["ppl_base"] = perplexity(model, tokenizer, heldout, device)
        metrics["em_base"] = exact_match(model, tokenizer, questions, device)
        metrics["em_current"] = metrics["em_base"]
        if current is not None and current.exists():
            from peft import PeftModel

            with_current = PeftModel.from_pretrained(model, str(current))
            metrics["em_current"] = exact_match(with_current, tokenizer, questions, device)
            model = with_current.unload()  # the base again, without merging
        metrics["eval_before_s"] = round(time.perf_counter() - t0, 1)

        candidate = self._lora(model)
        run = self._train(candidate, tokenizer, texts, device, heldout, metrics["ppl_base"])
        losses = run.losses
        metrics["train_s"] = round(run.seconds, 1)
        metrics["steps"] = run.kept
        metrics["steps_run"] = len(losses)
        metrics["max_steps"] = s.max_steps
        metrics["stopped_by"] = run.stopped_by
        metrics["loss_first"] = round(losses[0], 4) if losses else None
        metrics["loss_last"] = round(sum(losses[-5:]) / len(losses[-5:]), 4) if losses else None

        t2 = time.perf_counter()
        candidate.eval()
        metrics["em_candidate"] = exact_match(candidate, tokenizer, questions, device)
        metrics["ppl_candidate"] = perplexity(candidate, tokenizer, heldout, device)
        metrics["eval_after_s"] = round(time.perf_counter() - t2, 1)
        metrics["delta_em"] = round(metrics["em_candidate"] - metrics["em_current"], 4)
        metrics["ppl_ratio"] = round(metrics["ppl_candidate"] / metrics["ppl_base"], 4)
        passed, reason = self.verdict(metrics)
        reason = f"{reason}; {training_summary(metrics, s.budget_s)}"

        out_dir.mkdir(parents=True, exist_ok=True)
        candidate.save_pretrained(str(out_dir))
        export_gguf_lora(candidate, out_dir / LORA_GGUF, alpha=s.alpha)
        (out_dir / "manifest.json").write_text(
            json.dumps({"metrics": metrics, "passed": passed, "reason": reason}, indent=2) + "\n"
        )
        log.info("distilled %s in %.0f s: %s", out_dir.name, time.perf_counter() - t0, reason)
        return DistillOutcome(out_dir, metrics, passed, reason)

    def verdict(self, m: dict[str, Any]) -> tuple[bool, str]:
        s = self.settings
        em = f"EM {m['em_current']:.2f} -> {m['em_candidate']:.2f}"
        ppl = f"perplexity {m['ppl_base']:.2f} -> {m['ppl_candidate']:.2f} (x{m['ppl_ratio']:.3f})"
        if m["delta_em"] < s.min_delta_em:
            return False, f"{em}: recall did not rise by {s.min_delta_em:.2f}; {ppl}"
        if m["ppl_ratio"] > 1 + s.max_ppl_regression:
            return False, f"{ppl}: more than {s.max_ppl_regression:.0%} worse on held-out text; {em}"
        return True, f"{em}; {ppl}"

    # --- pieces ---------------------------------------------------------------------------------------------

    def _load(self) -> tuple[Any, Any, str]:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        cuda = torch.cuda.is_available()
        four_bit = cuda if self.load_in_4bit is None else self.load_in_4bit
        kwargs: dict[str, Any] = {"attn_implementation": "eager"}  # Gemma 3 trains with eager attention
        if four_bit:
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True,
                bnb_4bit_quant_type="nf4",
                bnb_4bit_compute_dtype=torch.bfloat16,
                bnb_4bit_use_double_quant=True,
            )
            kwargs["device_map"] = {"": 0}
        else:
            kwargs["dtype"] = torch.float32
        hf_logging.disable_progress_bar()
        try:
            path = self._model_path() if callable(self._model_path) else str(self._model_path)
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
        finally:
            hf_logging.enable_progress_bar()
        if four_bit:
            from peft import prepare_model_for_kbit_training

            model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=True)
        elif cuda:
            model = model.to("cuda")  # type: ignore[arg-type]  # transformers' typing of its wrapped .to() omits the device argument
        model.eval()
        return model, tokenizer, "cuda" if cuda else "cpu"

    def _lora(self, model: Any) -> Any:
        from peft import LoraConfig, get_peft_model

        s = self.settings
        # peft annotates lora_alpha as int, but scales by lora_alpha / r and takes a float.
        config = LoraConfig(
            r=s.rank,
            lora_alpha=s.alpha,  # type: ignore[arg-type]
            lora_dropout=0.0,
            bias="none",
            target_modules=list(s.target_modules),
            task_type="CAUSAL_LM",
        )
        return get_peft_model(model, config)

    def _train(
        self, model: Any, tokenizer: Any, texts: Sequence[TrainingText], device: str, heldout: str, ppl_base: float
    ) -> TrainingRun:
        """Train ``max_steps`` steps within the perplexity budget: every ``check_every`` steps the held-out
        perplexity is measured, and once it passes ``(1 + max_ppl_regression) * ppl_base`` training stops and
        the LoRA weights go back to the last check that was within it. Past ``budget_s`` seconds (a safety
        stop) it stops after the step running then, checked like the last one."""
        import torch

        s = self.settings
        rng = random.Random(s.seed)
        pools = {k: [t.text for t in texts if t.kind == k] for k in KINDS}
        weights = {k: w for k, w in zip(KINDS, s.mix) if pools[k] and w > 0}
        if not weights:
            return TrainingRun([], 0, 0.0, NOTHING)
        for pool in pools.values():
            rng.shuffle(pool)
        cursor = dict.fromkeys(KINDS, 0)
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=s.learning_rate, weight_decay=0.0)
        warmup = max(1, s.max_steps // 10)
        limit = ppl_base * (1 + s.max_ppl_regression)
        kept, saved = 0, [p.detach().clone() for p in params]
        losses: list[float] = []
        stopped_by = STEPS
        start = self.clock()
        elapsed = 0.0
        for step in range(s.max_steps):
            model.train()
            batch = []
            for _ in range(s.batch_size):
                kind = rng.choices(list(weights), weights=list(weights.values()))[0]
                pool = pools[kind]
                batch.append(pool[cursor[kind] % len(pool)])
                cursor[kind] += 1
            # no end-of-sequence token: each text is an excerpt of a conversation that went on
            enc = tokenizer(batch, return_tensors="pt", padding=True, truncation=True, max_length=s.max_tokens)
            labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
            for group in optimizer.param_groups:
                group["lr"] = s.learning_rate * min(1.0, (step + 1) / warmup)
            out = model(
                input_ids=enc["input_ids"].to(device),
                attention_mask=enc["attention_mask"].to(device),
                labels=labels.to(device),
            )
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(float(out.loss.detach()))
            elapsed = self.clock() - start  # read once per step
            out_of_time = elapsed >= s.budget_s and step + 1 < s.max_steps
            if (step + 1) % s.check_every == 0 or step + 1 == s.max_steps or out_of_time:
                model.eval()
                ppl = perplexity(model, tokenizer, heldout, device)
                log.debug("step %d: loss %.3f, held-out perplexity %.2f (limit %.2f)", step + 1, losses[-1], ppl, limit)
                if ppl > limit:
                    stopped_by = PERPLEXITY
                    break  # past the budget: back to the last good check
                kept, saved = step + 1, [p.detach().clone() for p in params]
            if out_of_time:
                stopped_by = TIME_LIMIT
                log.warning(
                    "distillation stopped by its %.0f s safety limit after %d of %d steps",
                    s.budget_s,
                    step + 1,
                    s.max_steps,
                )
                break
        with torch.no_grad():
            for p, good in zip(params, saved):
                p.copy_(good)
        model.eval()
        return TrainingRun(losses, kept, elapsed, stopped_by)


def training_summary(metrics: dict[str, Any], budget_s: float) -> str:
    """How much was trained, in how long, and why it stopped (the reason's tail)."""
    done = (
        f"{metrics['steps']} of {metrics['max_steps']} steps kept, {metrics['steps_run']} trained in "
        f"{metrics['train_s']:.0f} s"
    )
    why = {
        STEPS: "the step budget was reached",
        PERPLEXITY: "stopped when held-out perplexity passed its limit",
        TIME_LIMIT: f"stopped short by the {budget_s:.0f} s safety limit (a busy machine)",
        NOTHING: "nothing to train on",
    }.get(metrics["stopped_by"], metrics["stopped_by"])
    return f"{done}: {why}"


# --- evaluation (also used by the tests and bench) ------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def exact_match(
    model: Any, tokenizer: Any, questions: Sequence[Cloze], device: str = "cpu", batch_size: int = 8
) -> float:
    """Share of cloze questions whose greedy continuation starts with the answer (case and punctuation aside)."""
    import torch

    if not questions:
        return 0.0
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    hits = 0
    try:
        for i in range(0, len(questions), batch_size):
            chunk = questions[i : i + batch_size]
            longest = max(len(tokenizer(q.answer, add_special_tokens=False)["input_ids"]) for q in chunk)
            enc = tokenizer([q.prompt for q in chunk], return_tensors="pt", padding=True).to(device)
            with torch.no_grad():
                out = model.generate(
                    **enc, max_new_tokens=longest + 2, do_sample=False, pad_token_id=tokenizer.pad_token_id
                )
            for q, row in zip(chunk, out[:, enc["input_ids"].shape[1] :]):
                said = _norm(tokenizer.decode(row, skip_special_tokens=True))
                answer = _norm(q.answer)
                hits += bool(answer) and (said == answer or said.startswith(answer + " "))
    finally:
        tokenizer.padding_side = side
    return round(hits / len(questions), 4)


def perplexity(model: Any, tokenizer: Any, text: str, device: str = "cpu") -> float:
    import torch

    enc = tokenizer(text, return_tensors="pt").to(device)
    with torch.no_grad():
        loss = model(**enc, labels=enc["input_ids"]).loss
    return round(math.exp(float(loss)), 4)


# --- the llama.cpp form ---------------------------------------------------------------------------------------


def export_gguf_lora(model: Any, path: Path, *, alpha: float, dtype: str = "f32") -> Path:
    """Write the peft model's LoRA weights as a llama.cpp LoRA adapter (GGUF, ``general.type`` adapter):
    ``blk.N.attn_q.weight.lora_a`` (rank x in) and ``.lora_b`` (out x rank), as llama.cpp reads them;
    ``dtype`` "f16" halves the file (the shipped reader adapter)."""
    import gguf
    import numpy as np
    from peft import get_peft_model_state_dict

    config = model.get_base_model().config
    layers = int(getattr(config, "num_hidden_layers", None) or config.text_config.num_hidden_layers)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GEMMA3, layers)
    state = get_peft_model_state_dict(model)
    writer = gguf.GGUFWriter(str(path), arch=gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.GEMMA3])
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(alpha))
    count = 0
    for key in sorted(state):
        match = re.match(r"^(?:base_model\.model\.)?(.+)\.lora_([AB])\.weight$", key)
        if match is None:
            raise ValueError(f"unexpected LoRA tensor {key}")
        target = names.get_name(match.group(1) + ".weight", try_suffixes=(".weight",))
        if target is None:
            raise ValueError(f"no llama.cpp name for {match.group(1)}")
        array = state[key].detach().float().cpu().numpy().astype(np.float16 if dtype == "f16" else np.float32)
        writer.add_tensor(f"{target}.lora_{match.group(2).lower()}", np.ascontiguousarray(array))
        count += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    log.debug("wrote %d LoRA tensors to %s", count, path)
    return path
