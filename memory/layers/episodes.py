"""The episodes layer (seed 001 HEI-NW): past moments, written through the gate, recalled by hybrid search.

Recall fuses two ranked lists by reciprocal rank (RRF): the dense one (the
episodes nearest the message's vector) and the lexical one (BM25 over the
raw message log, memory/lexical.py, so a message the gate declined is still
findable by its words). A candidate is kept when its episode is at least the
plan's threshold similar, or when it is among the very best lexical
matches; the plan's k best are returned, each with the neighbouring turns
likely to carry its answer (the reply to a hit that asks), every turn once,
within the plan's word budget, skipping those already in the recent-turns
window. Absorb: the
person's message with the bot's reply becomes one episode keyed by the
message's vector, with the write gate's salience from the reply's surprise
and the message's novelty; the episodes that reached the prompt are marked
recalled (which reinforces them). An imported message has no reply and no
surprise: its salience is calibrated from its own text and its novelty among
the messages imported with it (memory.salience), and the import's gate
(``import_gate``) decides.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

import asyncpg

from memory.associative import AssociativeConfig, AssociativeHit, AssociativeIndex
from memory.conversation import StoredMessage
from memory.embed import Embedder
from memory.episodic import EpisodeHit, EpisodicStore, NewEpisode, WriteGate, novelty
from memory.layers.base import MEMORY, AbsorbedTurn, BaseLayer, MemoryItem, RecallQuery, Section, SourceRef
from memory.lexical import LexicalHit, LexicalSearch, neighbours
from memory.salience import imported_salience
from memory.sources import IMPORTED
from memory.timeparse import dated, time_range

if TYPE_CHECKING:
    from memory.semantic import SemanticMemory

SPEAKERS_TTL_S = 60.0
_WORD = re.compile(r"[\w'-]+")


async def _nothing() -> list:
    return []


def _bare(word: str) -> str:
    """A word without its possessive: "Maya's" -> "maya"."""
    w = word.lower()
    return w[:-2] if w.endswith(("'s", "’s")) else w


@dataclass(frozen=True)
class HybridConfig:
    """How the episodes layer searches (defaults chosen by bench/memory_eval.py on its dev split)."""

    lexical: bool = True  # fuse BM25 over the message log with the dense episodes
    rrf_k: float = 3.0  # small: each list's best lead (recall_any on the dev split: k=60 0.64, 5 0.84, 3 0.84)
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    candidates: int = 50  # per list, before fusion
    keep_top: int = 5  # a candidate below the threshold is kept when it is among this many best of any list
    # The turns around each hit that are looked at (before it, and after it; None: as many as before). Which
    # reach the prompt is ``context``'s choice: "all" shows every one (recall_any@10 on the dev splits,
    # generated / hand-written: 0.854 / 0.787 with none, 0.861 / 0.830 with the next turn, 0.861 / 0.872 with
    # one either side, at 2.8x the words); "useful" only those likely to carry an answer (``useful_turns``).
    neighbours: int = 1
    neighbours_after: int | None = None
    context: str = "useful"
    short_answer_words: int = 8  # a hit this short that answers the question before it brings the question
    short_words: int = 0  # a neighbour of at most this many words is kept too (cheap, but see bench/README.md)
    # Words of recalled episodes (speaker names included) per reply when the plan sets none (sql/023); None:
    # no limit. Chosen on the dev splits' curve of recall_any@10 against words (bench/memory_eval.py
    # --words-curve).
    word_budget: int | None = 450
    speaker_keys: bool = True  # an episode's key embeds "Name: text", so questions naming people find them
    time_weight: float = 1.0  # a question naming a time ("last week", "in May"): that stretch's nearest episodes
    speaker_weight: float = 1.0  # a question naming someone who spoke here: their nearest episodes
    speaker_min_words: int = 4  # the speaker list skips lines of this many words or fewer (fillers: "can't complain")
    lexical_without_speakers: bool = True  # BM25 ignores the names of people who speak here
    # HEI-NW's list: k-WTA keys in FAISS after Hopfield completion (memory.associative). Off: on the dev split it
    # cost recall (a fifth list of near-duplicates of the dense one dilutes the fusion; bench/memory_eval.py
    # --ablation).
    associative: bool = False
    associative_weight: float = 1.0
    # Entity expansion: the names the knowledge graph links to the things the question names ("my sister" ->
    # "Ines", "Rotterdam"), searched for in the message log as one more list (needs ``EpisodesLayer.graph``).
    # Off: recall_any@10 on the dev splits, generated / hand-written, 0.898 / 0.872 without it, 0.898 / 0.840
    # with it (weight 0.5: 0.895 / 0.862); the linked names pull in other days' turns (temporal 0.875 -> 0.750).
    expansion: bool = False
    expansion_weight: float = 1.0
    expansion_facts: int = 12  # graph facts, one hop out, whose names are searched


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


# A clause before a question ("my brother recommended Piranesi, has anyone read it?"): split at a comma,
# semicolon or dash. It tells something when it has three words or more and does not open as a question does.
_CLAUSE = re.compile(r"\s*(?:[,;:]|\s[-\u2013\u2014]\s)\s*")
_ASKING = re.compile(
    r"^(?:who|whom|whose|what|which|when|where|why|how|is|are|am|was|were|do|does|did|have|has|had|"
    r"can|could|will|would|shall|should|may|might|must|isn't|aren't|don't|doesn't|didn't|won't|"
    r"wouldn't|can't|couldn't|shouldn't|or|and|any|anyone|anybody)\b",
    re.I,
)
# a question that tells: "did you know my sister moved to Porto?", "have I told you I got the job?"
_TELLING = re.compile(r"^(?:did|do) you know\b|^(?:have|did) i (?:ever )?(?:tell|told) you\b|^guess what\b", re.I)


def _tells(sentence: str) -> bool:
    if _TELLING.match(sentence.strip()):
        return True
    clauses = [c for c in _CLAUSE.split(sentence.strip()) if c.strip()]
    return any(len(c.split()) >= 3 and not _ASKING.match(c) for c in clauses[:-1])


def only_questions(text: str) -> bool:
    """True when every sentence of ``text`` asks and tells nothing ("where does my sister live?"): such a
    message states nothing to remember, and as an episode it would outrank the statement that answers it. A
    question that carries a statement ("my brother recommended Piranesi, has anyone read it?", "did you know
    I got the job?") tells something."""
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    return bool(sentences) and all(s.rstrip().endswith("?") and not _tells(s) for s in sentences)


def key_text(author_name: str, content: str) -> str:
    """What an episode's key embeds: who said it, and what."""
    return f"{author_name}: {content}"


class EpisodesLayer(BaseLayer):
    name = "episodes"

    def __init__(
        self,
        store: EpisodicStore,
        gate: WriteGate,
        embedder: Embedder,
        *,
        lexical: LexicalSearch | None = None,
        config: HybridConfig | None = None,
        associative: AssociativeConfig | None = None,
        import_gate: WriteGate | None = None,
    ) -> None:
        self.store = store
        self._gate = gate
        # what admits an imported message (its own tau, HIPPOBOT_IMPORT_GATE_TAU); None: the live gate
        self.import_gate = import_gate or gate
        self._embedder = embedder
        self.lexical = lexical if lexical is not None else LexicalSearch(store.pool)
        self.config = config or HybridConfig()
        self.associative = AssociativeIndex(store.pool, associative)
        self.graph: SemanticMemory | None = None  # for entity expansion; App sets it when the graph is on
        self._speaker_cache: dict[str, tuple[float, dict[str, str]]] = {}  # scope -> (when, id -> name)

    async def close(self) -> None:
        await self.lexical.close()  # a word-statistics recount in flight

    async def recall(self, query: RecallQuery) -> Section | None:
        plan, cfg, audience = query.plan, self.config, query.audience
        if plan.vectors <= 0:
            return None
        # Recall drops items that repeat the recent turns (the turns layer runs alongside), so ask
        # for as many more as the window may hold; the section's limit is the plan's k.
        extra = plan.turns if audience.channel_id is not None else 0
        n = max(cfg.candidates, plan.vectors + extra + 1)
        exclude = [query.before_message_id] if query.before_message_id is not None else []
        visible = audience.visible_channel
        named, rest = await self._named_speakers(query)
        # Lexical search leaves out the names of people who speak here (they are in most messages).
        words = rest if cfg.lexical_without_speakers and named else query.text
        dense, lexical, in_time, theirs, associated, expanded = await asyncio.gather(
            self.store.search(query.scope, query.vector, n, visible_channel=visible),
            self.lexical.search(query.scope, words, n, visible_channel=visible, exclude_ids=exclude)
            if cfg.lexical
            else _nothing(),
            self._in_time(query, n) if cfg.time_weight > 0 else _nothing(),
            self._by_speakers(query, named, rest, n) if cfg.speaker_weight > 0 and named else _nothing(),
            self.associative.search(query.scope, query.vector, n, visible_channel=visible)
            if cfg.associative
            else _nothing(),
            self._expanded(query, n, exclude) if cfg.expansion and self.graph is not None else _nothing(),
        )
        dense = [h for h in dense if h.episode.message_id != query.before_message_id]
        nearest = dense[0].similarity if dense else None
        ranked = await self._fuse(query, dense, lexical, in_time, theirs, associated, expanded)
        kept = [c.item() for c in ranked if c.kept(plan.similarity_threshold, cfg.keep_top)]
        items = await self._in_context(query, kept, plan.vectors + extra)
        return Section(
            self.name,
            "What {bot} remembers from earlier conversations",
            tuple(items),
            placement=MEMORY,
            priority=20,
            meta={"nearest_similarity": nearest, "limit": plan.vectors},
        )

    async def _in_time(self, query: RecallQuery, n: int) -> list[EpisodeHit]:
        """The nearest episodes of the stretch of time the question names (none named: nothing)."""
        when = time_range(query.text, query.now)
        if when is None:
            return []
        visible = query.audience.visible_channel
        if when.yearless:  # "in May" of a history: the latest May that has memories
            for back in range(6):
                if await self.store.any_between(
                    query.scope, when.years_back(back).start, when.years_back(back).end, visible_channel=visible
                ):
                    when = when.years_back(back)
                    break
        hits = await self.store.search_between(
            query.scope, query.vector, n, when.start, when.end, visible_channel=visible
        )
        return [h for h in hits if h.episode.message_id != query.before_message_id]

    async def _named_speakers(self, query: RecallQuery) -> tuple[list[str], str]:
        """Who of the people that spoke here the question names (author ids), and the question without
        their names."""
        speakers = await self._speakers(query.scope)
        tokens = _WORD.findall(query.text)
        words = {_bare(w) for w in tokens}
        named = [
            author
            for author, name in speakers.items()
            if (first := name.split()[0].lower() if name.split() else "") and len(first) > 1 and first in words
        ]
        if not named:
            return [], query.text
        names = {speakers[a].split()[0].lower() for a in named}
        return named, " ".join(w for w in tokens if _bare(w) not in names)

    async def _by_speakers(self, query: RecallQuery, named: list[str], rest: str, n: int) -> list[EpisodeHit]:
        """The nearest episodes of the people the question names ("what did Maya cook?": Maya's own words).
        Every one of their keys starts with their name, so the question is asked without it: what they said
        decides."""
        vector = await self._embedder.embed(rest) if rest.strip() else query.vector
        hits = await self.store.search_by_authors(
            query.scope,
            vector,
            n,
            named,
            visible_channel=query.audience.visible_channel,
            min_words=self.config.speaker_min_words + 1,
        )
        return [h for h in hits if h.episode.message_id != query.before_message_id]

    async def _speakers(self, scope: str) -> dict[str, str]:
        cached = self._speaker_cache.get(scope)
        if cached is not None and time.monotonic() - cached[0] < SPEAKERS_TTL_S:
            return cached[1]
        speakers = await self.store.speakers(scope)
        self._speaker_cache[scope] = (time.monotonic(), speakers)
        return speakers

    async def _expanded(self, query: RecallQuery, n: int, exclude: Sequence[int]) -> list[LexicalHit]:
        """Messages with the names the graph links to what the question talks about, one hop out (the
        question's own words left out: the lexical list has them; so are the names of people who speak here,
        which are in most messages)."""
        assert self.graph is not None
        facts = await self.graph.facts_for(
            query.scope,
            query.text,
            author_id=query.author_id,
            depth=1,
            now=query.now,
            limit=self.config.expansion_facts,
            visible_channel=query.audience.visible_channel,
        )
        asked = {_bare(w) for w in _WORD.findall(query.text)}
        asked |= {w for name in (await self._speakers(query.scope)).values() for w in map(_bare, _WORD.findall(name))}
        names = dict.fromkeys(
            name
            for f in facts
            for name in (f.subject, f.object)
            if name and not set(map(_bare, _WORD.findall(name))) <= asked
        )
        if not names:
            return []
        return await self.lexical.search(
            query.scope, " ".join(names), n, visible_channel=query.audience.visible_channel, exclude_ids=exclude
        )

    async def _fuse(
        self,
        query: RecallQuery,
        dense: list[EpisodeHit],
        lexical: list[LexicalHit],
        in_time: Sequence[EpisodeHit] = (),
        theirs: Sequence[EpisodeHit] = (),
        associated: Sequence[AssociativeHit] = (),
        expanded: Sequence[LexicalHit] = (),
    ) -> list[_Candidate]:
        """One list, best first: reciprocal-rank fusion of the dense, lexical, in-time, speaker, associative
        and expansion ranks, by the message that opened each episode (a lexical hit on a bot reply counts for
        the episode it belongs to)."""
        cfg = self.config
        wanted = [h.message.id for h in (*lexical, *expanded)] + [h.message_id for h in associated]
        found = (
            await self.store.for_messages(
                query.scope, wanted, query.vector, visible_channel=query.audience.visible_channel
            )
            if wanted
            else {}
        )
        candidates: dict[int, _Candidate] = {}
        rank = 0
        for a in associated:
            episode = found.get(a.message_id)
            if episode is None or a.message_id == query.before_message_id:
                continue  # gone since the cache was built, or the message being answered
            c = candidates.setdefault(a.message_id, _Candidate(hit=episode))
            c.score += cfg.associative_weight / (cfg.rrf_k + rank + 1)
            c.best_rank = min(c.best_rank, rank)
            rank += 1
        for rank, h in enumerate(dense):
            c = candidates.setdefault(h.episode.message_id, _Candidate(hit=h))
            c.score += cfg.dense_weight / (cfg.rrf_k + rank + 1)
            c.best_rank = min(c.best_rank, rank)
        for rank, h in enumerate(in_time):
            c = candidates.setdefault(h.episode.message_id, _Candidate(hit=h))
            c.score += cfg.time_weight / (cfg.rrf_k + rank + 1)
            c.best_rank = min(c.best_rank, rank)
        for rank, h in enumerate(theirs):
            c = candidates.setdefault(h.episode.message_id, _Candidate(hit=h))
            c.score += cfg.speaker_weight / (cfg.rrf_k + rank + 1)
            c.best_rank = min(c.best_rank, rank)
        for weight, hits in ((cfg.lexical_weight, lexical), (cfg.expansion_weight, expanded)):
            counted: set[int] = set()  # an episode found by its message and its reply counts once per list
            for rank, lh in enumerate(hits):
                episode = found.get(lh.message.id)
                anchor = episode.episode.message_id if episode is not None else lh.message.id
                if anchor == query.before_message_id or anchor in counted:
                    continue
                counted.add(anchor)
                c = candidates.setdefault(anchor, _Candidate(hit=episode, message=lh.message))
                if hits is lexical:
                    c.lexical_rank = rank
                c.score += weight / (cfg.rrf_k + rank + 1)
                c.best_rank = min(c.best_rank, rank)
        return sorted(candidates.values(), key=lambda c: -c.score)

    async def _in_context(self, query: RecallQuery, hits: list[MemoryItem], wanted: int) -> list[MemoryItem]:
        """At most ``wanted`` of the ranked ``hits`` as the prompt shows them, best first, each with the
        neighbouring turns ``useful_turns`` keeps, within the word budget (the plan's, else the config's).

        Turns are taken hit by hit, best first: the hit's own turn, then its kept neighbours, each while it
        fits (one that does not is left out, and a shorter one after it may still be taken; a neighbour only
        comes with its hit). Every turn is shown once: a hit an earlier excerpt shows already, or one next to
        a shown turn it would bring (the answer to its question), joins that excerpt with its kept neighbours,
        and a turn with the same speaker and words as one shown adds only its source.
        An item's sources are exactly the turns it shows."""
        cfg = self.config
        budget = query.plan.memory_words if query.plan.memory_words is not None else cfg.word_budget
        hits = hits[: 2 * wanted]  # folding and the budget leave some out; further ones would not be reached
        after = cfg.neighbours if cfg.neighbours_after is None else cfg.neighbours_after
        around = (
            await neighbours(
                self.store.pool,
                query.scope,
                [i.message_ids[0] for i in hits],
                cfg.neighbours,
                after=after,
                visible_channel=query.audience.visible_channel,
            )
            if hits
            else {}
        )
        excerpts: list[_Excerpt] = []
        showing: dict[int, _Excerpt] = {}  # message id -> the excerpt that shows it
        said: dict[tuple[str, str], _Excerpt] = {}  # (speaker, its words) -> the excerpt that shows such a turn
        used = 0

        def fits(text: str) -> bool:
            return budget is None or used + _n_words(text) <= budget

        def show(turn: StoredMessage, excerpt: _Excerpt) -> None:
            nonlocal used
            used += _n_words(_line(turn))
            excerpt.turns.append(turn)
            excerpt.sources[turn.id] = _source(turn)
            showing[turn.id] = excerpt
            said.setdefault(_said(turn), excerpt)

        for item in hits:
            window = around.get(item.message_ids[0], [])
            at = next((i for i, m in enumerate(window) if m.id == item.message_ids[0]), None)
            if at is None:  # its message is not in the log the audience sees: the item as it came
                if len(excerpts) < wanted and fits(item.text):
                    used += _n_words(item.text)
                    excerpts.append(_Excerpt(item, [], {}))
                continue
            hit, useful = window[at], useful_turns(window, at, cfg, asker=query.author_id)
            excerpt = showing.get(hit.id)
            if excerpt is None and _said(hit) in said:  # the same words as a shown turn: its source joins it
                said[_said(hit)].sources[hit.id] = _source(hit)
                showing[hit.id] = said[_said(hit)]
                continue
            if excerpt is None:
                # a hit next to a shown turn it would bring (the reply to its question) joins that excerpt
                joined = next((showing[m.id] for m in useful if m.id in showing), None)
                if joined is None and only_questions(hit.content) and all(only_questions(m.content) for m in useful):
                    # Questions with no answer beside them tell nothing; most are questions put to the bot,
                    # whose replies are never recalled, and shown as a memory they were answered in kind
                    # ("What breed is Kofi's rabbit?" then "Oscar's rabbit?" -> "Kofi's.").
                    continue
                if not fits(_line(hit)) or (joined is None and len(excerpts) >= wanted):
                    continue
                excerpt = joined or _Excerpt(item, [], {})
                if joined is None:
                    excerpts.append(excerpt)
                show(hit, excerpt)
            for m in useful:
                if m.id not in showing and _said(m) not in said and fits(_line(m)):
                    show(m, excerpt)
        return [e.item() for e in excerpts]

    async def absorb(self, turn: AbsorbedTurn) -> None:
        message, reply = turn.message, turn.reply
        if await self.store.pool.fetchval("SELECT EXISTS (SELECT 1 FROM episodes WHERE message_id = $1)", message.id):
            return  # written already (a retried absorption)
        if only_questions(message.content):
            return  # a question states nothing to remember (the log keeps it, found by its words), imported or not
        if message.source == IMPORTED:
            await self._absorb_imported(turn)
            return
        key = turn.vector
        if self.config.speaker_keys:
            key = await self._embedder.embed(key_text(message.author_name, message.content))
        async with self.store.pool.acquire() as conn, conn.transaction():
            nearest = await self.store.nearest_other(message.scope, key, message.id, conn)
            salience = self._gate.score(turn.surprise, novelty(nearest))
            if not self._gate.admits(salience):
                return  # below tau: the message log keeps it, found by its words
            # The person's words only: the bot's reply is not what people said (it stays in the log and the
            # recent turns, and reply_message_id keeps the turn's provenance).
            content = f"{message.author_name}: {message.content}"
            await self.store.add_many(
                [
                    NewEpisode(
                        scope=message.scope,
                        channel_id=message.channel_id,
                        author_id=message.author_id,
                        message_id=message.id,
                        content=content,
                        embedding=key,
                        created_at=message.created_at,
                        reply_message_id=reply.id if reply else None,
                        surprise=turn.surprise,
                        novelty=novelty(nearest),
                        salience=salience,
                        visible_in=message.visible_in,
                    )
                ],
                conn,
            )
            used = turn.used.get(self.name, ())
            if used:
                await self.store.mark_recalled(message.scope, used, turn.now, conn)

    async def _absorb_imported(self, turn: AbsorbedTurn) -> None:
        """An imported message: no reply, no surprise, so its salience is calibrated from its text and its novelty
        among the messages imported with it (``batch_novelty``; unknown counts as middling), and the import's
        gate decides. Only an admitted message's key is embedded (a few percent of a history)."""
        message = turn.message
        salience = imported_salience(message.content, turn.batch_novelty)
        if not self.import_gate.admits(salience):
            return  # the message log keeps it, found by its words
        key = turn.vector
        if self.config.speaker_keys:
            key = await self._embedder.embed(key_text(message.author_name, message.content))
        await self.store.add_many(
            [
                NewEpisode(
                    scope=message.scope,
                    channel_id=message.channel_id,
                    author_id=message.author_id,
                    message_id=message.id,
                    content=key_text(message.author_name, message.content),
                    embedding=key,
                    created_at=message.created_at,
                    salience=salience,
                    visible_in=message.visible_in,
                )
            ]
        )

    async def edited(self, message: StoredMessage, conn: asyncpg.Connection) -> None:
        """New text: the episode's text and its key follow."""
        episode = await conn.fetchval("SELECT content FROM episodes WHERE message_id = $1", message.id)
        if episode is None:
            return
        updated = f"{message.author_name}: {message.content}"
        vector = await self._embedder.embed(
            key_text(message.author_name, message.content) if self.config.speaker_keys else message.content
        )
        await self.store.update_source(message.scope, message.id, updated, vector, conn)
        self.associative.invalidate(message.scope)

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        n = await conn.fetchval(
            """SELECT count(*) FROM episodes
               WHERE message_id = ANY($1::bigint[]) OR reply_message_id = ANY($1::bigint[])""",
            list(message_ids),
        )
        self.lexical.forget_cached()  # word statistics that counted these messages
        self._speaker_cache.clear()  # and the names of who spoke
        self.associative.invalidate()  # and the associative keys
        return {"episodes": n}

    async def held_from(
        self, scope: str, author_id: str, now: datetime, *, visible_channel: str | None
    ) -> Section | None:
        episodes = await self.store.by_author(scope, author_id, 30, visible_channel=visible_channel)
        items = tuple(
            MemoryItem(
                "episode",
                None,
                line := f"[{e.created_at:%Y-%m-%d}] {e.content.splitlines()[0]} (message {e.message_id})",
                line,
                (e.message_id,),
                e.created_at,
            )
            for e in episodes
        )
        return Section(self.name, "Conversations I remember", items)

    async def pin(self, scope: str, message_id: int, now: datetime) -> int:
        return await self.store.pin(scope, message_id, now)


@dataclass
class _Candidate:
    hit: EpisodeHit | None = None  # its episode, when it has one the audience may see
    message: StoredMessage | None = None  # else the message the words found
    score: float = 0.0  # reciprocal-rank fusion
    lexical_rank: int | None = None
    best_rank: int = 1 << 30  # its best rank in any one list

    def kept(self, threshold: float, keep: int) -> bool:
        """Similar enough, or among the ``keep`` best of one of the lists (words, time, speaker, nearest)."""
        if self.hit is not None and self.hit.similarity >= threshold:
            return True
        return self.best_rank < keep

    def item(self) -> MemoryItem:
        if self.hit is not None:
            return episode_item(self.hit)
        assert self.message is not None
        return message_item(self.message)


def message_item(m: StoredMessage) -> MemoryItem:
    """A logged message the gate made no episode of, found by its words."""
    line = f"{m.author_name}: {m.content}"
    return MemoryItem(
        "message",
        None,
        line,
        f"[{m.created_at:%Y-%m-%d}] {m.author_name}: {dated(m.content, m.created_at)}",
        (m.id,),
        m.created_at,
        ref=None,
        sources=(_source(m),),
        payload=m,
    )


def episode_item(h: EpisodeHit) -> MemoryItem:
    e = h.episode
    flat = " / ".join(line.strip() for line in dated(e.content, e.created_at).splitlines() if line.strip())
    return MemoryItem(
        "episode",
        h.similarity,
        e.content,
        f"[{e.created_at:%Y-%m-%d}] {flat}",
        e.message_ids,
        e.created_at,
        ref=e.id,
        sources=h.sources,
        payload=h,
    )


@dataclass
class _Excerpt:
    """A hit as the prompt shows it: its item, the turns shown (its own among them, unless it came without
    a message), and every source those turns stand for."""

    hit: MemoryItem
    turns: list[StoredMessage]
    sources: dict[int, SourceRef]

    def item(self) -> MemoryItem:
        if not self.turns:
            return self.hit
        turns = sorted(self.turns, key=lambda m: (m.created_at, m.id))
        lines = [_line(m) for m in turns]
        shown = [f"{m.author_name}: {dated(m.content, m.created_at)}" for m in turns]
        when = f"[{turns[0].created_at:%Y-%m-%d}] " if turns[0].created_at else ""
        own = tuple(s for s in self.hit.sources if s.id in self.sources)
        extra = tuple(s for i, s in self.sources.items() if i not in {o.id for o in own})
        ids = self.hit.message_ids + tuple(s.id for s in extra if s.id not in self.hit.message_ids)
        return replace(
            self.hit, text="\n".join(lines), prompt_line=when + " / ".join(shown), message_ids=ids, sources=own + extra
        )


_QUESTION = re.compile(r"\?[\W_]*(?:\s|$)")
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def asks(text: str) -> bool:
    """True when ``text`` asks something: one of its sentences ends in a question mark ("How did Copenhagen
    go? We were so busy I didn't ask.")."""
    return bool(_QUESTION.search(text))


def useful_turns(
    window: Sequence[StoredMessage], at: int, cfg: HybridConfig, *, asker: str | None = None
) -> list[StoredMessage]:
    """The neighbours of ``window[at]`` (a hit; the window oldest first) worth showing with it, most useful
    first: every one (``context`` "all"), or those likely to carry an answer. A hit that asks ("How's
    Pepper?") was never the evidence itself on the hand-written dev split (0 of 253 such hits in the top 10):
    the reply after it is (when someone else speaks next: "Yeah, St Clare's."), else the turn it reacts to
    ("Cello is such a lovely choice, surely?"), so both come with it, the reply first. A short hit that
    answers a question brings the question; any neighbour of at most ``short_words`` words comes too. A hit
    that asks and was put by ``asker`` (who asks now) brings only the reply after it: the asker asking again
    (often the bot, whose replies are never recalled) is no reaction to whatever was said before it, and shown
    with that it pushed a memory out ("alex: the party is on Saturday / newbie: what is my dog called?")."""
    if cfg.context == "all":
        return [m for i, m in enumerate(window) if i != at]
    hit = window[at]
    nxt = window[at + 1] if at + 1 < len(window) else None
    prev = window[at - 1] if at > 0 else None
    out = []
    if asks(hit.content):
        before = prev if asker is None or hit.author_id != asker else None
        out += [m for m in (nxt, before) if m is not None and m.author_id != hit.author_id]
    elif (
        prev is not None
        and prev.author_id != hit.author_id
        and asks(prev.content)
        and _n_words(hit.content) <= cfg.short_answer_words
    ):
        out.append(prev)
    out += [m for i, m in enumerate(window) if i != at and m not in out and _n_words(m.content) <= cfg.short_words]
    return out


def _line(m: StoredMessage) -> str:
    return f"{m.author_name}: {m.content}"


def _n_words(text: str) -> int:
    return len(_TOKEN.findall(text))


def _said(m: StoredMessage) -> tuple[str, str]:
    """Who said it and its words, case and punctuation aside: a turn that repeats one shown adds nothing."""
    return m.author_id, " ".join(_TOKEN.findall(m.content.lower()))


def _source(m: StoredMessage) -> SourceRef:
    return SourceRef(m.id, m.external_id, m.channel_id, m.source, m.author_id, m.channel_name)
