"""The resonance layer (seed 000): the bot's best moments bend its sampling.

Absorb turns each bot reply into a moment (memory.resonance.moments) with
the generation's metrics, and counts the person carrying on after the bot's
previous reply as a small "up". Recall ("Santa Klaus") scores the scope's
last 512 moments the audience may see against the message (token Jaccard,
theme overlap, arousal proximity, quality; recency and use dampers: see
memory.resonance.scoring), returns the top 5 as a small section (observation
bias: a few things the bot said that went well) and token boosts on the
engine's own ids (sampling bias: at most +0.3 in log space). Moments that
reached the prompt have their use count and last-use time updated when the
turn is absorbed (so ``hippobot recall`` stays read-only).

Nothing here may break a reply: an empty scope or prompt, a failing query
or a corrupt row gives no section (no boosts) and a log line.

Quality comes from people: ``react``/``replied_to`` (the Discord cog,
bot/discord/reactions.py), ``rate`` (``/good`` and ``/bad`` in the console,
through ``rate_last_reply``), and a deleted reply (``forgetting``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import asyncpg

from memory.conversation import StoredMessage
from memory.clock import Clock, SystemClock
from memory.layers.base import MEMORY, AbsorbedTurn, BaseLayer, MemoryItem, RecallQuery, Section, Signal, sources_of
from memory.resonance.features import arousal, clamp, jaccard, reply_len_norm, themes, unique_ratio, words
from memory.resonance.moments import (
    CANDIDATES,
    CARRY_ON_WEIGHT,
    DOWN_REACTIONS,
    RATING_WEIGHT,
    REPLY_WEIGHT,
    UP_REACTIONS,
    MomentStore,
    NewMoment,
    Stats,
)
from memory.resonance.scoring import (
    ALPHA,
    THRESHOLD,
    TOP_K,
    Candidate,
    Probe,
    Scored,
    select,
    token_boosts,
    word_weights,
)

log = logging.getLogger(__name__)

CARRY_ON_WINDOW = timedelta(minutes=30)  # the person's next message within this counts as carrying on
TEXT_CHARS = 240  # a recalled reply is cut to this in the prompt (a small section)
SHOWN_WORDS = 8  # boosted words listed per moment in `hippobot recall`


class TokenMapper(Protocol):
    """What the layer needs of the language model (bot.llm.LanguageModel has it)."""

    def word_token_ids(self, words: Iterable[str], *, exclude: Sequence[str] = ()) -> dict[str, tuple[int, ...]]: ...


@dataclass(frozen=True)
class Resonance:
    """What resonant recall chose, for the section's meta and the benchmark."""

    winners: tuple[Scored, ...]
    word_weights: Mapping[str, float]
    boosts: Mapping[int, float]


class ResonanceLayer(BaseLayer):
    name = "resonance"

    def __init__(
        self,
        pool: asyncpg.Pool,
        llm: TokenMapper | None,
        *,
        bot_name: str = "hippobot",
        alpha: float = ALPHA,
        top_k: int = TOP_K,
        threshold: float = THRESHOLD,
        candidates: int = CANDIDATES,
        boosts_enabled: bool = True,
        clock: Clock | None = None,
    ) -> None:
        """``llm``: maps words to the engine's token ids (None: the section alone, no boosts). ``clock``: when a
        forgetting marks a moment down (default the wall clock)."""
        self.moments = MomentStore(pool)
        self.clock: Clock = clock or SystemClock()
        self.llm = llm
        self.stop_labels = (f"\n{bot_name}:",)
        self.alpha = alpha
        self.top_k = top_k
        self.threshold = threshold
        self.candidates = candidates
        self.boosts_enabled = boosts_enabled
        self._polarity: Any = None
        self._loading: asyncio.Task[None] | None = None

    # --- recall ------------------------------------------------------------------------------------------

    async def recall(self, query: RecallQuery) -> Section | None:
        try:
            return await self._recall(query)
        except Exception:  # memory is an aid: the reply goes on without boosts
            log.warning("resonance recall failed for scope %s; no boosts", query.scope, exc_info=True)
            return None

    async def resonate(self, query: RecallQuery) -> tuple[Resonance, dict[int, Any]] | None:
        """The winners, their word weights and boosts, and the recalled texts by moment id; None when nothing
        resonates (an empty prompt, an empty scope, nothing above the threshold)."""
        text = query.text.strip()
        if not text:
            log.info("resonance: empty prompt in scope %s; no boosts", query.scope)
            return None
        probe = Probe(
            frozenset(words(text)),
            frozenset(themes([text], query.plan.archetype)),
            arousal(text, self._sentiment()),
            query.now,
        )
        # only moments sharing a word or a theme other than the archetype can score (scoring.score)
        sharing = (sorted(probe.words), sorted(t for t in probe.themes if not t.startswith("@")))
        candidates = await self.moments.candidates(
            query.scope, query.audience.visible_channel, self.candidates, sharing=sharing
        )
        if not candidates:
            log.debug("resonance: nothing in scope %s shares a word with the message", query.scope)
            return None
        winners = [w for w in select(probe, _sound(candidates), k=self.top_k, threshold=self.threshold)]
        if not winners:
            return None
        texts = await self.moments.recalled(query.scope, [w.candidate.id for w in winners])
        winners = [w for w in winners if w.candidate.id in texts]  # a reply deleted meanwhile
        if not winners:
            return None
        weights = word_weights(winners, alpha=self.alpha)
        boosts: dict[int, float] = {}
        if self.llm is not None and self.boosts_enabled and weights:
            try:
                lookup = getattr(self.llm, "aword_token_ids", None)  # an engine whose tokenizer is remote
                ids = (
                    await lookup(weights, exclude=self.stop_labels)
                    if lookup is not None
                    else self.llm.word_token_ids(weights, exclude=self.stop_labels)
                )
                boosts = token_boosts(weights, ids)
            except Exception:
                log.warning("resonance: the engine could not map words to tokens; no boosts", exc_info=True)
        return Resonance(tuple(winners), weights, boosts), texts

    async def _recall(self, query: RecallQuery) -> Section | None:
        found = await self.resonate(query)
        if found is None:
            return None
        res, texts = found
        refs = await sources_of(
            self.moments.pool, sorted({i for m in texts.values() for i in (m.message_id, m.reply_id)})
        )
        ranked = sorted(res.word_weights.items(), key=lambda kv: (-kv[1], kv[0]))
        items = []
        for w in res.winners:
            m = texts[w.candidate.id]
            mine = set(w.candidate.words)
            shown = [word for word, _ in ranked if word in mine][:SHOWN_WORDS]
            reply = " ".join(m.text.split())
            line = reply if len(reply) <= TEXT_CHARS else reply[: TEXT_CHARS - 1].rstrip() + "…"
            text = f"(quality {m.quality:.2f}) {line}" + (f"  [boosts: {', '.join(shown)}]" if shown else "")
            sources = tuple(refs[i] for i in (m.message_id, m.reply_id) if i in refs)
            items.append(
                MemoryItem(
                    "moment",
                    w.score,
                    text,
                    line,
                    (m.message_id, m.reply_id),
                    m.created_at,
                    ref=m.id,
                    sources=sources,
                    payload=w,
                )
            )
        return Section(
            self.name,
            "Things {bot} said before that went well",
            tuple(items),
            placement=MEMORY,
            priority=70,
            boosts=res.boosts,
            meta={"limit": self.top_k, "boosted_words": [w for w, _ in ranked[:20]], "boosted_tokens": len(res.boosts)},
        )

    def _sentiment(self) -> Any:
        """TextBlob's polarity once loaded; until then None (arousal from punctuation, capitals and emoji)
        while it loads off the event loop (about 1.6 s, once)."""
        if self._polarity is None and self._loading is None:
            try:
                self._loading = asyncio.get_running_loop().create_task(self._load_sentiment())
            except RuntimeError:
                pass
        return self._polarity

    async def _load_sentiment(self) -> None:
        def load() -> Any:
            from textblob import TextBlob

            TextBlob("warm up").sentiment  # noqa: B018  (loads the lexicon now, not on a message)
            return lambda text: TextBlob(text).sentiment.polarity

        try:
            self._polarity = await asyncio.to_thread(load)
        except Exception:
            log.warning("resonance: TextBlob sentiment unavailable; arousal from punctuation alone", exc_info=True)

    async def ready(self) -> None:
        """Load what the layer loads lazily (tests and benchmarks: the same arousal from the first message)."""
        self._sentiment()
        if self._loading is not None:
            await self._loading

    # --- absorb ------------------------------------------------------------------------------------------

    async def absorb(self, turn: AbsorbedTurn) -> None:
        message, reply = turn.message, turn.reply
        await self._carried_on(message)
        if reply is None or not reply.content.strip():
            return
        polarity = self._sentiment()
        reply_words = words(reply.content)
        novelty = turn.novelty
        if novelty is None:  # not handed over (a restart): novelty against the scope's recent moments' words
            recent = await self.moments.candidates(message.scope, message.visible_in, 64)
            mine = set(words(message.content))
            novelty = 1.0 - max((jaccard(mine, set(c.words)) for c in recent), default=0.0)
        moment = NewMoment(
            message_id=message.id,
            reply_id=reply.id,
            scope=message.scope,
            visible_in=message.visible_in,
            channel_id=message.channel_id,
            words=reply_words,
            themes=themes([message.content, reply.content], turn.plan.archetype),
            archetype=turn.plan.archetype,
            surprise=turn.surprise,
            entropy=turn.entropy,
            novelty=clamp(novelty),
            arousal=arousal(message.content, polarity),
            reply_len_norm=reply_len_norm(reply.content),
            unique_ratio=unique_ratio(reply.content),
            created_at=reply.created_at,
        )
        _, inserted = await self.moments.add(moment)
        used = turn.used.get(self.name, ())
        if used and inserted:  # a turn absorbed again after a crash counts its recalls once
            await self.moments.mark_used(message.scope, used, turn.now)

    async def _carried_on(self, message: StoredMessage) -> None:
        """The person wrote again soon after the bot's last reply to them here: a small up for that reply."""
        previous = await self.moments.previous_for(
            message.scope, message.channel_id, message.author_id, message.id, message.created_at - CARRY_ON_WINDOW
        )
        if previous is not None:
            await self.moments.signal(
                previous,
                "carry_on",
                CARRY_ON_WEIGHT,
                message.created_at,
                actor_id=message.author_id,
                message_id=message.id,
            )

    async def after_edit(self, message: StoredMessage, now: datetime) -> None:
        """The person's message changed: the moment's themes and arousal follow the new text."""
        row = await self.moments.pool.fetchrow(
            """SELECT r.archetype, m.content FROM resonance_moments r JOIN messages m ON m.id = r.reply_id
               WHERE r.message_id = $1""",
            message.id,
        )
        if row is not None:
            await self.moments.set_message_features(
                message.id,
                themes([message.content, row["content"]], row["archetype"]),
                arousal(message.content, self._polarity),
            )

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        return {"moments": await self.moments.forgetting(conn, message_ids, self.clock.now())}

    # --- what people say about a reply ------------------------------------------------------------------------

    async def signal(self, signal: Signal) -> None:
        """A reaction on one of the bot's replies, or a direct reply to it: the reply's moment's quality."""
        if signal.kind == "reaction":
            quality = await self.react(
                signal.source,
                signal.channel_id,
                signal.external_id,
                signal.actor_id,
                signal.emoji,
                added=signal.added,
                now=signal.now,
                scope=signal.scope,
            )
        elif signal.kind == "reply":
            quality = await self.replied_to(
                signal.source,
                signal.channel_id,
                signal.external_id,
                signal.actor_id,
                now=signal.now,
                scope=signal.scope,
            )
        else:
            return
        if quality is not None:
            log.info("%s on reply %s: quality %.2f", signal.kind, signal.external_id, quality)

    async def react(
        self,
        source: str,
        channel_id: str,
        reply_external_id: str,
        actor_id: str,
        emoji: str,
        *,
        added: bool,
        now: datetime,
        scope: str | None = None,
    ) -> float | None:
        """A reaction added to (or removed from) one of the bot's replies: its moment's new quality, or None
        when the message is no reply of the bot's, the emoji means nothing here, or ``scope`` differs."""
        weight = UP_REACTIONS.get(emoji, DOWN_REACTIONS.get(emoji))
        if weight is None:
            return None
        found = await self.moments.for_transport_reply(source, channel_id, reply_external_id)
        if found is None or (scope is not None and found[1] != scope):
            return None
        moment_id = found[0]
        if added:
            return await self.moments.signal(moment_id, "reaction", weight, now, actor_id=actor_id, detail=emoji)
        return await self.moments.retract(moment_id, "reaction", actor_id=actor_id, detail=emoji)

    async def replied_to(
        self,
        source: str,
        channel_id: str,
        reply_external_id: str,
        actor_id: str,
        *,
        now: datetime,
        scope: str | None = None,
    ) -> float | None:
        """Someone answered one of the bot's replies directly: an up for it (once per person)."""
        found = await self.moments.for_transport_reply(source, channel_id, reply_external_id)
        if found is None or (scope is not None and found[1] != scope):
            return None
        return await self.moments.signal(found[0], "reply", REPLY_WEIGHT, now, actor_id=actor_id)

    async def rate(self, moment_id: int, actor_id: str, good: bool, now: datetime) -> float | None:
        """``/good`` or ``/bad``: a strong up or down from this person (a new rating replaces theirs)."""
        return await self.moments.signal(
            moment_id, "rating", RATING_WEIGHT if good else -RATING_WEIGHT, now, actor_id=actor_id
        )

    async def moment_stats(self, scope: str) -> Stats:
        return await self.moments.stats(scope)

    async def stats(self, scope: str) -> Mapping[str, object]:
        return {"resonance": (await self.moment_stats(scope)).render()}


class _BrainLike(Protocol):
    clock: Any

    def layer(self, name: str) -> Any: ...

    async def drain(self) -> None: ...


async def rate_last_reply(brain: _BrainLike, scope: str, channel_id: str, rater_id: str, good: bool) -> str:
    """``/good`` and ``/bad`` in the console: rate the bot's last reply in this conversation; a line to print."""
    layer = brain.layer(ResonanceLayer.name)
    if not isinstance(layer, ResonanceLayer):
        return "resonance is not enabled"
    await brain.drain()  # the last reply's moment is written after it streams
    try:
        last = await layer.moments.last_in_channel(scope, channel_id)
        if last is None:
            return "no reply to rate yet"
        quality = await layer.rate(last[0], rater_id, good, brain.clock.now())
    except Exception:
        log.exception("rating the last reply in scope %s failed", scope)
        return "could not record the rating"
    if quality is None:
        return "no reply to rate yet"
    snippet = " ".join(last[1].split())[:60]
    return f"noted: {'good' if good else 'bad'} ({snippet!r} now has quality {quality:.2f})"


def _sound(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Candidates whose fields are usable; a corrupt row is logged and skipped."""
    out = []
    for c in candidates:
        try:
            if not all(isinstance(w, str) for w in c.words) or not all(isinstance(t, str) for t in c.themes):
                raise ValueError("words or themes are not text")
            out.append(c)
        except Exception:
            log.warning("resonance: moment %s is unreadable; skipped", getattr(c, "id", "?"))
    return out
