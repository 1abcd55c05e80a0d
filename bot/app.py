"""Composition root: build every service once from Settings, and close them in order."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from bot.brain import Brain
from bot.config import Settings
from bot.engines import load_engine
from bot.distill import Distiller, DistillSettings
from bot.llm import BUNDLED_MODEL_NAME, EngineConfig, LanguageModel, bundled_model_path
from bot.llm_extract import LLMTripleExtractor
from bot.namer import LLMNamer
from bot.prompt import PromptBuilder
from dream.cycle import DreamChannel, DreamConfig, DreamCycle, DreamServices
from dream.governance import ApproverPolicy, Governance
from dream.scheduler import DreamScheduler
from dream.steps import build_steps
from memory.archetypes import ArchetypeRouter, ArchetypeStore
from memory.conversation import ConversationStore
from memory.db import Database, embedded_exists, install
from memory.embed import Embedder, MiniLMEmbedder
from memory.episodic import EpisodicStore, WriteGate
from memory.importer import Importer
from memory.sources import IMPORTED
from memory.provenance import Provenance
from memory.extract import TripleExtractor
from memory.absorption import Absorber
from memory.clock import Clock, SystemClock
from memory.layers.base import LayerContext, LayerFactory, MemoryLayer
from memory.layers.episodes import EpisodesLayer
from memory.layers.facts import FactsLayer
from memory.layers.macros import MacrosLayer
from memory.layers.persona import PersonaLayer
from memory.layers.places import PlacesLayer
from memory.layers.resonance import ResonanceLayer
from memory.layers.turns import TurnsLayer
from memory.layers.weights import DistillPolicy, WeightsLayer
from memory.recall import Recall
from memory.semantic import GateConfig, SemanticMemory

log = logging.getLogger(__name__)


def engine_config(settings: Settings, *, progress: bool = True) -> EngineConfig:
    return EngineConfig(
        model=settings.model,
        cache_dir=settings.model_cache_dir,
        dtype=settings.model_dtype,
        load_in_4bit=settings.load_in_4bit,
        lora_adapter=settings.lora_adapter,
        max_new_tokens=settings.max_new_tokens,
        temperature=settings.temperature,
        top_p=settings.top_p,
        repetition_penalty=settings.repetition_penalty,
        seed=settings.seed,
        progress=progress,
        context_tokens=settings.context_tokens,
        vocab=settings.llamacpp_vocab,
        reader=reader_for(settings),
        extra_buffers=settings.llamacpp_extra_buffers,
    )


def prompt_builder(settings: Settings, llm: LanguageModel) -> PromptBuilder:
    """How prompts are laid out for ``llm``: its chat template when it has one (or one is asked for), else the
    transcript a base model continues."""
    render = None
    if settings.prompt_style == "chat" or (settings.prompt_style == "auto" and llm.uses_chat_template):
        render = llm.render_chat
    return PromptBuilder(
        bot_name=settings.bot_name,
        persona=settings.persona,
        budget_tokens=max(settings.context_tokens - settings.max_new_tokens, 64),
        count_tokens=llm.count_tokens,
        render_chat=render,
        memory_style=settings.memory_prompt_style,
    )


def reader_for(settings: Settings) -> Path | None:
    """The reader adapter's directory when the bundled model runs with it (on by default), else None."""
    if not settings.reader or settings.model is not None or settings.lora_adapter is not None:
        return None
    from bot.reader import reader_dir

    found = reader_dir()
    if found is None:
        log.warning("no reader adapter in this install (bot/reader/); the bundled model runs without it")
    return found


def distiller(settings: Settings, llm: LanguageModel | None) -> Distiller | None:
    """The weights layer's trainer, when distillation is on and the engine can apply what it trains."""
    if not settings.distill_enabled:
        return None
    if llm is not None and not getattr(llm, "supports_adapters", False):
        log.warning(
            "distillation is on but the %s engine cannot apply adapters: no adapters are trained",
            getattr(llm, "name", "language"),
        )
        return None
    cache = settings.model_cache_dir

    def model_path() -> str:  # the bundled model's converted copy is made on the first run, in the dream's thread
        return settings.model or str(bundled_model_path(cache, reader_for(settings), progress=False))

    return Distiller(
        model_path,
        base_model=settings.model or BUNDLED_MODEL_NAME,
        settings=DistillSettings(
            rank=settings.distill_rank,
            alpha=2.0 * settings.distill_rank,
            learning_rate=settings.distill_learning_rate,
            max_steps=settings.distill_max_steps,
            budget_s=settings.distill_budget_s,
            min_delta_em=settings.distill_min_delta_em,
            max_ppl_regression=settings.distill_max_ppl_regression,
            seed=settings.seed or 0,
        ),
    )


def dream_config(settings: Settings) -> DreamConfig:
    return DreamConfig(
        lookback_days=settings.dream_lookback_days,
        low_similarity=settings.dream_low_similarity,
        min_cluster_size=settings.dream_min_cluster_size,
        output_dir=settings.dream_dir,
        kg_prune_retrievability=settings.kg_prune_retrievability,
        kg_prune_confidence=settings.kg_prune_confidence,
        default_plan=(
            ("context_turns", settings.default_context_turns),
            ("context_vectors", settings.default_context_vectors),
            ("similarity_threshold", max(settings.default_similarity_threshold, 0.5)),
            ("triple_depth", settings.default_triple_depth),
        ),
    )


@dataclass
class App:
    settings: Settings
    db: Database
    embedder: Embedder
    conversations: ConversationStore
    episodes: EpisodicStore
    archetype_store: ArchetypeStore
    router: ArchetypeRouter
    provenance: Provenance
    layers: list[MemoryLayer]
    importer: Importer
    brain: Brain
    llm: LanguageModel | None
    governance: Governance
    dream: DreamCycle
    clock: Clock  # what "now" is for memory and the transports
    scheduler: DreamScheduler | None = None
    closed: bool = False

    @classmethod
    async def open(
        cls,
        settings: Settings,
        *,
        with_llm: bool,
        llm: LanguageModel | None = None,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        steps: Callable[[str], None] | None = None,
        preload: bool = True,
        layers: Sequence[LayerFactory] = (),
    ) -> App:
        """Start the database (embedded when no URL), load the models, wire the services. ``clock``: what
        "now" is for memory (default the wall clock; ``--now`` shifts it). ``steps`` is told each slow step
        before it starts (a first start creates the database and prepares the models: minutes). ``preload``
        False leaves the embedder and the fact extractor to load on first use, for a command that may never
        need them (``hippobot persona``, ``places --stats``, ``migrate``); the language model is ``with_llm``'s.
        ``layers``: more memory layers, built after the shipped ones from the shared services
        (``memory.layers.base.LayerFactory``); a layer from another package is registered by one entry here."""
        step = steps or (lambda text: log.info("%s", text))
        url = settings.database_url.get_secret_value() if settings.database_url else None
        if url is None and not embedded_exists(settings.data_dir):
            step(f"creating the database in {settings.data_dir / 'pgdata'} (first start)")
        else:
            step("starting the database" if url is None else "connecting to the database")
        db = await Database.open(url, settings.data_dir)
        first_models = not settings.model_cache_dir.exists()
        once = " (first start: prepared once, this takes minutes)" if first_models else ""
        try:
            if embedder is None:
                minilm = MiniLMEmbedder(backend=settings.embed_backend, cache_dir=settings.models_dir)
                if preload:
                    step("loading the embedding model" + once)
                    await asyncio.to_thread(minilm.load)
                embedder = minilm
            if with_llm and llm is None:
                step("loading the language model" + once)
                # after the embedder: importing transformers from two threads at once races
                llm = await asyncio.to_thread(load_engine, settings, engine_config(settings))
            pool = db.pool
            conversations = ConversationStore(pool)
            episodes = EpisodicStore(pool)
            archetype_store = ArchetypeStore(pool)
            router = ArchetypeRouter(
                archetype_store,
                embedder,
                settings.default_plan,
                min_similarity=settings.archetype_min_similarity,
                refresh_seconds=settings.archetype_refresh_seconds,
            )
            await router.start(pool)
            gate = WriteGate(
                settings.gate_alpha_surprise, settings.gate_beta_novelty, settings.gate_delta_pin, settings.gate_tau
            )
            prompts = prompt_builder(settings, llm) if llm is not None else None
            clock = clock or SystemClock()
            # the layers propose through it (memory.proposer.Proposer); their kinds are registered below
            governance = Governance(
                pool,
                ApproverPolicy(frozenset({settings.approver_role}), quorum=settings.approval_quorum),
                ttl=timedelta(hours=settings.proposal_ttl_hours),
            )
            episodes_layer = EpisodesLayer(
                episodes, gate, embedder, import_gate=replace(gate, tau=settings.import_gate_tau)
            )
            semantic = None
            # The memory layers, in the order their recall is reported. Adding a layer is one line here.
            registered: list[MemoryLayer] = [TurnsLayer(conversations), episodes_layer]
            if settings.kg_enabled:
                extractor = TripleExtractor()
                if preload:
                    step("loading the fact extractor")
                    # now, not at the first message: recall would wait past its deadline and lose the facts
                    await asyncio.to_thread(extractor.load)
                semantic = SemanticMemory(
                    pool,
                    extractor,
                    embedder,
                    GateConfig(enabled=settings.kg_gate_enabled, threshold=settings.kg_gate_threshold),
                    bot_name=settings.bot_name,
                )
                episodes_layer.graph = semantic  # entity expansion
                registered.append(
                    FactsLayer(
                        semantic,
                        prune_retrievability=settings.kg_prune_retrievability,
                        prune_confidence=settings.kg_prune_confidence,
                    )
                )
            if settings.persona_enabled:
                # a configured (not the bundled base) model scores evidence with the seed's classifier
                registered.append(
                    PersonaLayer(
                        pool,
                        embedder,
                        graph=semantic,
                        llm=llm if llm is not None and settings.model is not None else None,
                        proposer=governance,
                        clock=clock,
                    )
                )
            if settings.resonance_enabled:
                registered.append(ResonanceLayer(pool, llm, bot_name=settings.bot_name, clock=clock))
            if settings.places_enabled:
                registered.append(PlacesLayer(pool, embedder))
                registered.append(MacrosLayer(pool, embedder))
            registered.append(
                WeightsLayer(
                    pool,
                    settings.data_dir / "adapters",
                    trainer=distiller(settings, llm),
                    semantic=semantic,
                    enabled=settings.distill_enabled,
                    bot_name=settings.bot_name,
                    proposer=governance,
                    policy=DistillPolicy(min_new_messages=settings.distill_min_new_messages),
                )
            )
            shared = LayerContext(pool=pool, embedder=embedder, proposer=governance, clock=clock)
            registered += [factory(shared) for factory in layers]
            await install(pool, [layer.install for layer in registered])  # tables of layers shipped outside sql/
            recall = Recall(registered, timeout=settings.layer_timeout_s)
            absorber = Absorber(conversations, registered, router, archetype_store, embedder, clock)
            brain = Brain(
                conversations=conversations,
                archetypes=router,
                recall=recall,
                absorber=absorber,
                embedder=embedder,
                llm=llm,
                prompts=prompts,
                bot_id=f"bot:{settings.bot_name}",
                bot_name=settings.bot_name,
                max_message_chars=settings.max_message_chars,
                clock=clock,
                max_generations=settings.max_pending_replies,
                writer_queue=settings.max_pending_writes,
                abstain_bias=settings.reader_abstain_bias,
                chat_decline_bias=settings.reader_chat_decline_bias,
            )
            importer = Importer(conversations, absorber, embedder, episodes, max_chars=settings.max_message_chars)
            for layer in registered:  # what approving a layer's proposals does (e.g. persona shifts, adapters)
                governance.register_kinds(layer.proposal_kinds())
                governance.register_rejections(layer.proposal_rejections())
            dream = DreamCycle(
                DreamServices(
                    pool=pool,
                    embedder=embedder,
                    archetypes=archetype_store,
                    router=router,
                    governance=governance,
                    config=dream_config(settings),
                ),
                build_steps(registered),
            )
            if llm is not None and settings.model is not None:
                # a configured (not the bundled base) model names proposals and extracts facts
                dream.services.namer = LLMNamer(llm)
                if semantic is not None:
                    semantic.llm_extract = LLMTripleExtractor(llm)
        except BaseException:
            await db.close()
            raise
        return cls(
            settings=settings,
            db=db,
            embedder=embedder,
            conversations=conversations,
            episodes=episodes,
            archetype_store=archetype_store,
            router=router,
            provenance=Provenance(db.pool, registered, proposals=governance, clock=clock),
            layers=registered,
            importer=importer,
            brain=brain,
            llm=llm,
            governance=governance,
            dream=dream,
            clock=clock,
        )

    async def absorb_backlog(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Absorb what a crash or a kill left unabsorbed (bounded, oldest first); call before serving."""
        total = await self.conversations.count_unabsorbed()
        if total == 0:
            return 0
        log.info("absorbing %d message(s) left unabsorbed by the last run", total)
        limit, absorbed = self.settings.absorb_backlog_limit, 0
        # An interrupted import's messages as the import would have absorbed them: each weighed among the
        # messages that import stored (memory.importer), so where the kill fell changes no episode.
        for scope in await self.conversations.unabsorbed_scopes(IMPORTED):
            if absorbed >= limit:
                break
            absorbed += len(await self.importer.resume(scope, progress=progress, limit=limit - absorbed))
        return absorbed + await self.brain.absorb_backlog(limit=limit - absorbed, progress=progress)

    def start_scheduler(self, channel: DreamChannel | None) -> DreamScheduler:
        """Run the dream cycle nightly on this event loop, posting to ``channel``."""
        self.dream.services.channel = channel
        s = self.settings
        self.scheduler = DreamScheduler(
            self.dream, hour=s.dream_hour, minute=s.dream_minute, timezone=s.dream_timezone, clock=self.clock
        )
        self.scheduler.start()
        return self.scheduler

    async def close(self) -> None:
        """Stop taking messages, cancel generations, finish pending memory writes (within
        ``shutdown_timeout_s``), then stop everything (the embedded database last). Idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.scheduler is not None:
            self.scheduler.shutdown()
        try:
            if not await self.brain.shutdown(timeout=self.settings.shutdown_timeout_s):
                log.warning("memory writes still queued at shutdown; they are absorbed at the next start")
        finally:
            await self.router.stop()
            for layer in self.layers:  # their background work, before the pool it reads from closes
                try:
                    await layer.close()
                except Exception:
                    log.exception("memory layer %s did not close cleanly", layer.name)
            if self.llm is not None:
                aclose = getattr(self.llm, "aclose", None)  # a network engine closes on the event loop
                await (aclose() if aclose is not None else asyncio.to_thread(self.llm.close))
            await self.db.close()
