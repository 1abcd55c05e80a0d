"""The Brain: one message through the memory stack and the LLM, for any transport.

    persist the message -> embed once -> archetype plan -> recall (every
    memory layer, concurrently) -> prompt within budget -> generate (streamed,
    with the layers' boosts) -> after the reply: store it and absorb the turn
    into every layer (background, serial, durable).

``respond`` does everything up to the prompt before it returns a ``Reply``;
iterating the reply streams the model's text. The memory writes are queued
only once the stream ends (or is cancelled) and never delay it; a message
whose absorption did not happen (a crash) is absorbed at the next start.
``shutdown`` stops taking messages and drains the writes.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import shlex
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import numpy as np

from bot.grounding import (
    LEAVING,
    BARE_NO,
    MAX_SOURCES,
    NO_GUARD,
    NOT_TOLD,
    NOT_TOLD_YOU,
    Grounding,
    Guard,
    WHEN_RELATED,
    SourceLine,
    answer_words,
    asks_whether_at_all,
    asks_who_did,
    called_off,
    called_off_since,
    called_off_of,
    changed_of,
    changed_since,
    content_words,
    asked_phrase,
    asks_when,
    absolute_day,
    asks_of_memory,
    dated_answer,
    declines,
    echoes,
    fits_asked,
    from_now,
    ground,
    grounded_or_not_told,
    guard,
    held_words,
    in_askers_words,
    judges,
    judging_words,
    moved_clause,
    names_a_time,
    names_a_speaker,
    is_question,
    own_items,
    quote,
    own_account,
    quote_answer,
    quote_bearing,
    quote_holding,
    same_thing,
    said,
    said_by_whom,
    says_mine,
    said_of,
    says_no,
    says_yes,
    speaks_as_someone,
    stem,
    stems,
    topic_of,
    whole_list,
    which_member,
)
from bot.kinds import kinds_asked, word_kinds
from bot.llm import Generation, LanguageModel
from bot.prompt import Prompt, PromptBuilder
from memory.absorption import AbsorbHints, Absorber
from memory.archetypes import ArchetypeRouter, ContextPlan
from memory.clock import Clock, SystemClock
from memory.conversation import ConversationStore, NewMessage, StoredMessage, require_scope
from memory.db import database_unreachable
from memory.embed import Embedder
from memory.errors import InvalidInput
from memory.episodic import novelty
from memory.layers.base import MemoryItem, MemoryLayer
from memory.recall import ContextBundle, Recall, recall_query
from memory.timeparse import dated, resolved

log = logging.getLogger(__name__)
NOTHING_TO_SAY = "I'm not sure what to say to that."  # when the model wrote nothing at all: never an empty reply
# Where a person sees everything the bot holds of them, by where they asked (P6: "(and 4 more)" said not where).
# How the asker sees all of it, by where they asked; the console's names the person as the command takes them (P12:
# "<you>" read as a placeholder to fill in).
_LISTING = {"discord": "/memory mine lists them all", "console": "`hippobot mine --person {person}` lists them all"}
# "What do you know about me?": answered with what the asker told the bot (Brain.about_asker), never by the model,
# which read it as a question about a memory and said it remembered nothing (P5).
_LEAD = r"^\W*(?:(?:so|and|hey|hi|ok|okay),?\s+)?"  # how a question to the bot may open ("ok, ...", "hey ...")
_ABOUT_ASKER = re.compile(
    _LEAD + r"(?:what (?:else )?(?:do|did) you (?:know|remember|recall) (?:about|of) me"
    r"|what (?:have|did) i (?:tell|told|say|said) (?:to )?you(?: so far| about me| about myself)?)\W*$",
    re.I,
)

# "Who are you?", "what can you do?": answered with what the bot is and does (Brain.introduction), never by the
# model, which made up an identity for itself (P14: "I'm a veterinarian who specializes in ...", 2 times of 2, to a
# new user's first question).
_ABOUT_BOT = re.compile(
    _LEAD + r"(?:(?:who|what) (?:are|r) (?:you|u)(?: exactly| even| for)?"
    r"|what (?:can|do|could) (?:you|u) do(?: for me| here)?|how do (?:you|u) work|what (?:is|are) (?:you|u) "
    r"(?:for|good for)|tell me about yourself|introduce yourself)\W*$",
    re.I,
)
_HELP = {"discord": "the /memory commands show what I hold about you", "console": "/help lists the commands"}

CONTEXTS_IN_FLIGHT = 16  # recall --queries: recalls at once (more than the pool's 8 connections: one waits on the
# database while another uses the cores; 360 dev queries took 8.9 s with 4, 7.4 s with 16, before the batch parse)
BATCH_LAYER_TIMEOUT_S = 30.0  # nobody waits on a batch's single answer: a layer is skipped only when stuck


@dataclass(frozen=True)
class IncomingTurn:
    """A message from any transport, before it is stored."""

    scope: str
    source: str  # 'discord' | 'console'
    channel_id: str
    author_id: str
    author_name: str
    text: str
    external_id: str | None = None  # None: a fresh uuid (console)
    created_at: datetime | None = None  # None: now
    visible_in: str | None = None  # None: public in the scope; else the (parent) channel whose audience may see it
    thread_parent_id: str | None = None  # a thread's parent channel
    channel_name: str | None = None  # what the channel (or thread) is called, when the transport knows
    author_username: str | None = None  # the author's account name (Discord's username), when the transport knows
    reply_to: str | None = None  # the transport's id of the message this one replies to, in the same channel


class Busy(Exception):
    """The bot cannot take this message now (generation or memory queues full): ask the person to retry."""


@dataclass
class TurnTrace:
    """Seconds spent in each stage of one turn (for the benchmark and logs)."""

    persist_s: float = 0.0
    embed_s: float = 0.0
    classify_s: float = 0.0
    recall_s: float = 0.0
    prompt_s: float = 0.0
    first_token_s: float | None = None
    prompt_tokens: int = 0
    reused_tokens: int = 0  # prompt tokens the engine did not evaluate again (a cached prefix)
    tokens: int = 0
    tokens_per_s: float | None = None
    write_s: float | None = None


class MemoryWriter:
    """Runs memory writes one after another in the background, from a bounded queue.

    ``submit`` raises Busy when the queue is full (the caller tells the person
    to retry); whatever is not written yet at a crash is still in the store,
    unabsorbed, and is absorbed at the next start.
    """

    def __init__(self, max_queue: int = 256) -> None:
        self._queue: asyncio.Queue[tuple[str, Callable[[], Awaitable[None]]]] = asyncio.Queue(max_queue)
        self._task: asyncio.Task[None] | None = None
        self.failures = 0

    @property
    def full(self) -> bool:
        return self._queue.full()

    def submit(self, label: str, job: Callable[[], Awaitable[None]]) -> None:
        try:
            self._queue.put_nowait((label, job))
        except asyncio.QueueFull:
            raise Busy("memory writes are backed up") from None
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="memory-writer")

    async def _run(self) -> None:
        while not self._queue.empty():
            label, job = self._queue.get_nowait()
            try:
                await job()
            except Exception as exc:  # a failed write is logged with its ids, the queue goes on
                self.failures += 1
                if database_unreachable(exc):  # one line: the message is stored, absorbed at the next start
                    log.warning("memory write failed: %s (the database cannot be reached: %s)", label, exc)
                else:
                    log.exception("memory write failed: %s", label)
            finally:
                self._queue.task_done()

    async def drain(self, timeout: float | None = None) -> bool:
        """Wait until every queued write has finished (True), or ``timeout`` seconds passed (False)."""
        try:
            async with asyncio.timeout(timeout):
                await self._queue.join()
        except TimeoutError:
            return False
        return True


class Reply:
    """A reply being generated: iterate for text deltas."""

    def __init__(
        self,
        brain: Brain,
        turn: IncomingTurn,
        message: StoredMessage,
        vector: np.ndarray,
        bundle: ContextBundle,
        prompt: Prompt,
        generation: Generation,
        trace: TurnTrace,
        *,
        record: bool = True,
        guard: Guard = NO_GUARD,
        drawn: Sequence[MemoryItem] = (),
    ) -> None:
        self.turn = turn
        self.message = message
        self.bundle = bundle
        self.prompt = prompt
        self.trace = trace
        self.external_id = str(uuid.uuid4())  # a transport may set the id it posted the reply under
        self.posted_at: datetime | None = None  # ... and the time it was posted at (else the clock's now)
        self._brain = brain
        self._vector = vector
        self._generation = generation
        self._finished = False
        self._record = record  # False: a read-only answer (`hippobot ask`): nothing stored or absorbed
        self.guard = guard  # a question about memory: its reply is held back until it can be checked
        self._final: str | None = None  # what the bot says instead of the model's text, when that failed the check
        self._verdict: str | None = None  # the check's word on the model's text (before "my" is reworded)
        self._streamed: list[str] = []  # what was shown so far (an engine fills its text only once it stops)
        self._quoted: MemoryItem | None = None  # the memory the reply quotes, when the model gave no answer
        self._drawn = tuple(drawn)  # what a reply the bot wrote without the model was made from (its sources)
        self._deniers: set[int] = set()  # messages that say the reply's answer is over (``_answer_denied``)
        self._moved: tuple[str, MemoryItem] | None = None  # the sentence that says it changed, quoted (the same)
        self._grounded_text: str | None = None  # the reply as grounded, before "8 days ago" was added to it
        self._opener_dropped = False  # a streamed reply's "Me too!" was not shown (_OpenerFilter)
        self._when_lines: dict[str, str] = {}  # of a when-question, memories' lines that can say when (_about_when)

    @property
    def plan(self) -> ContextPlan:
        return self.bundle.plan

    @property
    def text(self) -> str:
        """What the person was shown: the whole reply once done; after a cancel (/stop, a failed send) the part
        streamed so far; a held-back reply cancelled before its check, nothing."""
        if self._final is not None:
            return self._final
        if self.guard.about_memory and not self.guard.missing:
            return ""
        shown = _STANCE_LABEL.sub("", self._generation.text or "".join(self._streamed))  # as it was streamed
        return without_shared_opener(shown) if self._opener_dropped else shown

    @property
    def model_text(self) -> str:
        """What the model wrote, shown or not (the evaluation weighs the grounding check by it)."""
        return self._generation.text

    @property
    def replaced(self) -> bool:
        """The model's reply was not shown: it answered a question about memory from no memory."""
        return self._verdict is not None and self._verdict != self._generation.text

    @property
    def mean_surprise(self) -> float | None:
        return self._generation.stats.mean_surprise

    @property
    def mean_entropy(self) -> float | None:
        return self._generation.stats.mean_entropy

    @property
    def novelty(self) -> float | None:
        """The message's novelty at recall (1 - max cosine to the scope's episodes), when episodes were asked."""
        section = self.bundle.section("episodes")
        return None if section is None else novelty(section.meta.get("nearest_similarity"))

    def __aiter__(self) -> AsyncIterator[str]:
        return self._stream()

    async def _stream(self) -> AsyncIterator[str]:
        try:
            if self.guard.about_memory and not self.guard.missing:
                # Held back: a reply to a question about memory is shown only once it is known to draw on a memory.
                async for _ in self._generation:
                    pass
                self._when_lines = await self._about_when()
                self._final = self._verdict = grounded_or_not_told(
                    self._generation.text,
                    self.message.content,
                    self.evidence(),
                    ignore=self._ignored(),
                    dates=self.guard.dates_ground,
                    whether=self.guard.whether,
                    own=self.guard.own,
                    claim=self.guard.claim,
                    named=self.guard.asked_of,
                )
                if self._final == self._generation.text:
                    self._final = await self._in_askers_words(self._final)
                elif self.replaced:  # why a person saw "I don't remember ..." instead of the model's words
                    log.info(
                        "message %s: the model's reply %r drew on no memory; said %r instead",
                        self.message.id,
                        self._generation.text[:200],
                        self._final,
                    )
                await self._settle()
                if not self._final.strip() and not self._generation.cancelled.is_set():
                    self._final = NOTHING_TO_SAY
                if self._final:
                    yield self._final
            else:
                labels, opener = _LabelFilter(), _OpenerFilter()
                async for delta in self._generation:
                    if piece := opener.feed(labels.feed(delta)):
                        self._streamed.append(piece)
                        yield piece
                if rest := opener.feed(labels.flush()) + opener.flush():
                    self._streamed.append(rest)
                    yield rest
                self._opener_dropped = opener.dropped
                if not "".join(self._streamed).strip() and not self._generation.cancelled.is_set():
                    # the model wrote nothing (P6: "hippobot: " to a long message), or only "Me too!"
                    self._final = TELL_ME_MORE if opener.dropped else NOTHING_TO_SAY
                    yield self._final
        finally:
            stats = self._generation.stats
            self.trace.first_token_s = stats.first_token_s
            self.trace.prompt_tokens, self.trace.reused_tokens = stats.prompt_tokens, stats.reused_tokens
            self.trace.tokens = stats.tokens
            self.trace.tokens_per_s = stats.tokens_per_second
            self._finish()

    @property
    def _shown(self) -> str:
        """What the person will be shown, as it stands while the reply is settled."""
        return self._final or ""

    def _denial(self, items: Sequence[MemoryItem]) -> tuple[str, MemoryItem] | None:
        """The first sentence of the newest memory among ``items`` that holds a word the question asks with, quoted
        with its speaker: what says the asked-about thing is over ("Actually I turned down Spotify")."""
        skip = self._skipped()
        return quote_holding(self.message.content, items, asker=self.message.author_name, skip=skip)

    def _changed_since(self, old: tuple[str, MemoryItem]) -> tuple[str, MemoryItem] | None:
        """What a memory newer than the quoted ``old`` says has changed of it (``bot.grounding.changed_since``), by
        the question's words beyond the people it names (a name alone ties "update: another twelve hour shift" to
        any of that person's plans); none for a question that names its own time ("which novel was Priya's book
        club reading in March?": what was so then, not what is so now)."""
        if names_a_time(self.message.content):
            return None
        skip = self._skipped(named=True)
        return changed_since(self.message.content, old, self.evidence(), asker=self.message.author_name, skip=skip)

    def _said_so(self, items: Sequence[MemoryItem]) -> tuple[str, MemoryItem] | None:
        """The sentence among ``items`` that holds the reply's answer, quoted with its speaker (``quote_answer``)."""
        return quote_answer(
            self._shown, self.message.content, items, asker=self.message.author_name, ignore=self._ignored()
        )

    async def _settle(self) -> None:
        """After the check, what the person is shown instead of a checked reply that is no answer, or that others'
        words or the asker's own newer words contradict. Three steps: an answer of the kind asked for
        (``_of_the_kind_asked``); then the first of ``_settling_rules`` that applies, in its order; then the
        touches that keep what is shown but say it better (``_touch_up``: a day dated, a list whole)."""
        self._final = _STANCE_LABEL.sub("", self._final or "")  # "(negative)": a fact's label in the prompt
        self._of_the_kind_asked()
        if self._quoted is None:  # what was said, quoted, stands as it is
            for rule in self._settling_rules():
                if await rule():
                    log.debug("message %s: settled by %s", self.message.id, rule.__name__)
                    break
        self._touch_up()
        await self._every_one_of_the_kind()
        # ... and none copied from a fact's line by the touches ("Mango (positive).", P14: a list made whole)
        self._final = _STANCE_LABEL.sub("", self._final or "")

    async def _every_one_of_the_kind(self) -> None:
        """A short reply that names one of the things of a kind asked for in the plural ("Cats." to "what pets do
        I have?") from a sentence that names more of that kind ("I just got a puppy called Bramble, and I have two
        cats as well"): the sentence, quoted, so none is left out (P12: the puppy was dropped 4 times of 4)."""
        if self._quoted is not None or self.replaced or declines(self._shown) or len(self._shown.split()) > 3:
            return
        asked = {w for w in content_words(self.message.content) if stem(w) != w and kinds_asked({stem(w)})}
        if not asked:
            return
        said_so = self._said_so(self.evidence())
        if said_so is None:
            return
        kinds = kinds_asked({stem(w) for w in asked})
        words = set(content_words(said_so[0])) - set(content_words(self._shown))
        found = await word_kinds(self._brain.embedder, {*words, *content_words(self._shown)})
        others = {w for w in words if found.get(w) in kinds and stem(w) not in {stem(a) for a in asked}}
        if any(found.get(w) in kinds for w in content_words(self._shown)) and others:
            self._final, self._quoted = said_so

    def _settling_rules(self) -> tuple[Callable[[], Awaitable[bool]], ...]:
        """The rules that may replace a checked reply, first applicable first: a rule that applies decides,
        whether or not it found something to show instead."""
        return (
            self._the_one_asked,
            self._no_by_newer_words,
            self._whether_changed,
            self._no_as_said,
            self._their_own_account,
            self._answer_over,
            self._in_whose_words,
            self._quoted_instead,
        )

    def _of_the_kind_asked(self) -> None:
        """No answer of the kind asked ("Friday." to "what time is jun's flight?"): the sentence it came from,
        quoted, where that holds one ("... on Friday at 7am"); else it is no answer."""
        if self.replaced or fits_asked(self.message.content, self._shown):
            return
        log.info("message %s: %r is no answer of the kind asked", self.message.id, self._shown[:200])
        said_so = self._said_so(self.grounding().items)
        if said_so is not None and fits_asked(self.message.content, said_so[0]):
            self._final, self._quoted = said_so
        else:
            self._final = NOT_TOLD_YOU if self.guard.own else NOT_TOLD

    async def _the_one_asked(self) -> bool:
        """To a "which" question among the members of a list a memory gives, the member another memory says the
        question's other words of ("which cat is shy?": "Olive.", beside "I have two cats, Smudge and Olive" and
        "Olive is the shy one"; ``which_member``), whatever the model said: the list's first name, a name no
        memory holds, a decline, or a quote of another thing said of the question's words (P13: "which of felix's
        sisters moved to Lisbon?" was shown "The Lisbon trip is off"). From every memory in the prompt: "which cat
        was sick?" keeps only those that say "cat" as evidence."""
        everything = evidence_in(self.bundle, self.prompt)
        member = which_member(self.message.content, everything, skip=self._skipped(named=True))
        if member is None:
            return False
        self._final = f"{member}."
        return True

    async def _no_by_newer_words(self) -> bool:
        """A yes/no question their own newer words answer otherwise ("I moved from Lisbon to Porto"): "No."
        (``_denied``)."""
        if not await self._denied():
            return False
        self._final = BARE_NO
        return True

    async def _whether_changed(self) -> bool:
        """A yes/no question about a thing a memory says is off or has changed: that memory, quoted, for a reply
        that draws on no memory (P12: "is the hike still happening?" got "Yes, it is." beside "The Ben Lomond
        hike is off"); a reply a memory holds ("Yes, on the 14th." from "going to Paris instead on the 14th") stands."""
        if not asks_whether_at_all(self.message.content):
            return False
        skip = self._skipped(named=True)
        asker = self.message.author_name
        if not self.grounding().items:
            found = changed_of(self.message.content, self.evidence(), asker=asker, skip=skip)
        elif not says_no(self._shown):
            # a reply from memory that does not say no, where a memory calls the thing off ("It's not cancelled
            # yet." beside "Five-a-side is cancelled this week", P13)
            found = called_off_of(self.message.content, self.evidence(), asker=asker, skip=skip)
        else:
            found = None
        if found is None:
            return False
        self._final, self._quoted = found
        return True

    async def _no_as_said(self) -> bool:
        """A "No." no memory says, to a yes/no question about a fact: what was said of it, for them to judge."""
        if self.replaced or self.guard.claim is None or not says_no(self._shown):
            return False
        shown = said_of(self.guard.claim, self.evidence(), asker=self.message.author_name)
        if shown is None:
            return False
        self._final, self._quoted = shown
        return True

    async def _their_own_account(self) -> bool:
        """What the people asked about said of themselves, not what others said of them (``_own_account``)."""
        account = None if self.replaced else self._own_account()
        if account is None:
            return False
        self._final, self._quoted = account
        return True

    async def _answer_over(self) -> bool:
        """The answer names what its own memory says is over ("Siemens." from "I left Siemens, now I'm at Bosch"):
        the memory that says so, in its words, instead (P10: "Lisbon." was shown from the plan beside "Lisbon is
        off, we're going to Porto instead")."""
        if self.replaced or not await self._answer_denied():
            return False
        drawn = self.grounding().items
        denying = [i for i in self.evidence() if self._deniers & set(i.message_ids)]
        said_so = self._moved or self._said_so(denying) or self._denial(denying) or self._said_so(drawn)
        self._final, self._quoted = said_so if said_so is not None else (NOT_TOLD, None)
        return True

    async def _in_whose_words(self) -> bool:
        """The model answered in someone's words ("I started at the museum on Monday."), or named no one to "who
        has cats?" ("Pepper and Salt.", P7): what was said, quoted with who said it, where a memory holds it."""
        if self.replaced or declines(self._shown):
            return False
        if not (
            speaks_as_someone(self._shown)
            or asks_who_did(self.message.content)
            and not names_a_speaker(self._shown, self.evidence())
        ):
            return False
        said_so = self._said_so(self.evidence())
        if said_so is not None:
            self._final, self._quoted = said_so
        return True

    async def _quoted_instead(self) -> bool:
        """No answer (a decline, or the question's own words), but a memory holds every word of the question: what
        was said, in its words; unless a newer memory says it is over or has changed, which is then shown. With
        no such memory, one that says what the question asks about is over is the answer ("when does dev start at
        Google?" beside "Changed my mind: I said no to Google", P11)."""
        if not (declines(self._shown) or echoes(self._shown, self.message.content, ignore=self._ignored())):
            return False

        def holding(kinds: Mapping[str, str] | None = None) -> tuple[str, MemoryItem] | None:
            return quote(
                self.message.content,
                self.evidence(),
                asker=self.message.author_name,
                ignore=self._ignored(),
                named=self.guard.named,
                kinds=kinds,
            )

        found = holding()
        if found is None and kinds_asked(stems(self.message.content)):
            # "what pets does dev have?" beside "I adopted a rabbit called Turnip and a turtle called Shelly" (P11):
            # a word that names a kind is held by a word of that kind
            words = {w for i in self.evidence() if i.kind != "fact" for w in content_words(i.text)}
            found = holding({stem(w): k for w, k in (await word_kinds(self._brain.embedder, words)).items()})
        if found is None and judges(self.message.content):
            # "would ana enjoy a pottery class?", declined: what ana said of pottery, for them to judge
            found = quote_bearing(
                self.message.content,
                self.evidence(),
                asker=self.message.author_name,
                named=self.guard.named,
                skip=self._skipped(),
            )
        if found is not None:
            log.info("message %s: %r was no answer; quoted memory instead", self.message.id, self._shown[:200])
            self._final, self._quoted = found
            # what a newer memory says is over is no answer: "I start in two weeks" beside "I turned it down"
            over = await self._over_since(found[1].created_at)
            if over and (denial := self._denial(over)) is not None:
                self._final, self._quoted = denial
            elif (moved := self._changed_since(found)) is not None:
                self._final, self._quoted = moved  # "the picnic moved to Sunday" beside "... on Saturday"
        elif declines(self._shown) and (over := await self._over_since(None, any_time=True)):
            self._final, self._quoted = self._denial(over) or (self._final, self._quoted)
        return True

    def _touch_up(self) -> None:
        """What is shown, said better, when it quotes nothing: a copied day dated, a decline cut to its first line,
        a day counted from when it was said made absolute, one member of a list the whole list (or the member
        asked for), a day gone by said as gone by."""
        if self._quoted is None and not self.replaced:
            # "Monday." copied from a memory's "on Monday": the day that memory means, dated
            self._final = dated_answer(self._shown, self.evidence()) or self._final
        if self._quoted is None and declines(self._shown) and len(_SENTENCES.findall(self._shown.strip())) > 1:
            # A decline that goes on ("I don't know. Didn't anyone mention that you were leaving ...?", P10, after
            # a forget): what follows it is the model's guess; the plain line says it all
            self._final = NOT_TOLD_YOU if self.guard.own else NOT_TOLD
        if self._quoted is not None or self.replaced:
            return
        # "Pip lol.": the laugh of the message it was copied from is no part of the answer (P14)
        self._final = _LAUGH_AFTER.sub(".", self._shown) if len(self._shown.split()) <= 12 else self._final
        self._final = absolute_day(self._shown) or self._final  # "Next Friday (D)." read weeks later
        # "Pepper." to "what are my cats called", from "two cats, Pepper and Salt": the memory's whole list
        self._final = whole_list(self._shown, self.message.content, self.evidence()) or self._final
        # a day gone by, asked of as if to come: how long ago it was ("Friday (27 November 2026), 8 days ago."),
        # grounded as the day it is (P11: the "8 days ago" a memory does not hold left it without its source)
        if (later := from_now(self._shown, self.message.content, self.message.created_at)) is not None:
            self._grounded_text, self._final = self._final, later

    async def _about_when(self) -> dict[str, str]:
        """For a question asking when something happens, the memories in the prompt with lines that cannot say
        when, by prompt line, each with the text of its lines that can ("" for none). A line can when it holds a
        word the question asks about beyond whom, or means something near it (``WHEN_RELATED``), or answers a
        question in the line before it that can ("Yeah, on the 5th." after "When's the wedding?"). A new user's
        "when is Lena's wedding?", nobody having mentioned one, got "December 2026." from "My sister Lena is moving
        to Berlin next month", and "when is the wedding?" the day of a job interview, held in the turn beside a
        memory of a wedding: a date ties a reply to any memory that holds one. A paraphrase keeps its memory
        ("When did Omar buy the vehicle?", "I got a car on Sunday"). Lines are compared without their speaker's
        name (a name alone moved "wedding" to 0.15 of Lena's move)."""
        question = self.message.content
        skip = self._skipped(named=True)
        phrase = asked_phrase(question, skip)
        if not asks_when(question) or not phrase:
            return {}
        asked = {stem(w) for w in phrase.split()}
        items = [
            (i, [line for line in i.text.splitlines() if said(line)]) for i in evidence_in(self.bundle, self.prompt)
        ]
        holds = {
            (n, k): bool(asked & held_words(said(line), item.created_at))
            for n, (item, lines) in enumerate(items)
            for k, line in enumerate(lines)
        }
        far = [(n, k) for (n, k), held in holds.items() if not held]
        if not far:
            return {}
        texts = [said(items[n][1][k]) for n, k in far]
        vectors = np.asarray(await self._brain.embedder.embed_many([phrase, *texts]))
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
        related = dict(holds)
        for key, similarity in zip(far, vectors[1:] @ vectors[0], strict=True):
            related[key] = float(similarity) >= WHEN_RELATED
        out: dict[str, str] = {}
        for n, (item, lines) in enumerate(items):
            kept = [
                line
                for k, line in enumerate(lines)
                if related[n, k] or (k > 0 and related[n, k - 1] and said(lines[k - 1]).endswith("?"))
            ]
            if len(kept) < len(lines):
                out[item.prompt_line] = "\n".join(kept)
        return out

    async def _denied(self) -> bool:
        """Whether any reply (a "yes", one that does not know, or neither: "Cancel." to "is chloe going to Rome?",
        P9) to a yes/no question about a fact of the asker or of someone
        remembered ("do I live in Lisbon?", "does hank live in Lisbon?") is answered "No." by the newest memory of
        them that denies what it asks last, unless one said since holds it: P6 got "Yes, I do." to both
        cities after "I moved from Lisbon to Porto", which holds the word Lisbon, and to "do I still live in
        Dublin?" from "I drive a taxi in Dublin" beside "I moved from Dublin to Cork"; a new user got "I don't
        know" to "does hank live in Lisbon?" after hank's move. That memory then stands for the "No." (the
        layers' ``denied``: negated claims, where one moved from, where one quit, what a newer claim beat: "I
        moved to Lisbon" denies Hamburg, P7)."""
        claim = self.guard.claim
        if claim is None or not claim.last or not self._final or claim.rest & LEAVING:
            # "did felix turn down Spotify?", "did ana quit the bank?": what denies it is what it asks about
            return False
        dates = self.guard.dates_ground
        about = [
            i for i in self.evidence() if i.sources and (not claim.subject or claim.subject in held_words(i.text, None))
        ]
        if not about:
            return False

        def when(item: MemoryItem) -> tuple[datetime, int]:
            return item.created_at or datetime.min.replace(tzinfo=UTC), max(item.message_ids, default=0)

        people = await self._claimed_of(about)
        ids = sorted({m for i in about for m in i.message_ids})
        found: dict[int, set[str]] = {}
        for layer_found in await asyncio.gather(
            *(layer.denied(self.message.scope, ids, people) for layer in self._brain.layers)
        ):
            for m, names in layer_found.items():
                found.setdefault(m, set()).update(stem(w) for name in names for w in name.split())
        deniers = [i for i in about if any(claim.last in found.get(m, ()) for m in i.message_ids)]
        if not deniers:
            return False
        denier = max(deniers, key=when)
        holders = [
            i for i in about if i not in deniers and claim.last in held_words(i.text, i.created_at if dates else None)
        ]
        if holders and when(max(holders, key=when)) > when(denier):
            return False  # said again since ("I moved back to Dublin")
        self._quoted = denier
        return True

    def _own_account(self) -> tuple[str, MemoryItem] | None:
        """When the reply drew only on what others said of the people the question names, what those people said
        of themselves that differs from it (``bot.grounding.own_account``), quoted."""
        named, reply = self.guard.named, self._final or ""
        items = self.grounding().items
        if not named or not items or self.guard.claim is not None or declines(reply):
            return None
        speakers = {stem(w) for i in items for line in i.text.split("\n") for w in said_by_whom(line).lower().split()}
        if speakers & named:
            return None
        return own_account(
            self.message.content,
            reply,
            self.evidence(),
            people=named,
            asker=self.message.author_name,
            ignore=self._ignored(),
        )

    async def _answer_denied(self) -> bool:
        """Whether every answer word of a reply (not a yes or no) names what the memories it drew on say their
        speakers, or the people asked about, no longer have or never did (the layers' ``denied``): P7's "where
        does kai work?" got "Siemens." from "I left Siemens, now I'm at Bosch". Or whether what the question asks
        about is what a memory newer than every one the reply drew on says is over (``_over_since``)."""
        if self.guard.claim is not None or not self._final or declines(self._final):
            return False
        drawn = self.grounding().items
        wanted = answer_words(self._final, self.message.content, ignore=self._ignored())
        if not drawn or not wanted:
            return False
        latest = max((i.created_at for i in drawn if i.created_at is not None), default=None)
        if await self._over_since(latest):
            return True
        off = [i for i in drawn if wanted <= called_off(i) - stems(self.message.content)]
        if off:  # "Friday." from "Dinner on Friday is cancelled, let's do Saturday instead"
            self._deniers |= {m for i in off for m in i.message_ids}
            return True
        # said since, of the same thing, that it changed: "Bad news: the gig is pushed to Friday the 20th" beside
        # the "on Thursday the 12th" the answer came from (P12: the old day 6 times of 6, sourced to both)
        # (its relative days read as the days they name: "this Saturday" holds "14 November 2026")
        answering = [i for i in drawn if i.created_at is not None and wanted & stems(resolved(i.text, i.created_at))]
        if answering:
            newest = max(answering, key=lambda i: i.created_at or datetime.min.replace(tzinfo=UTC))
            moved = self._changed_since((newest.text, newest))
            if moved is not None:
                self._deniers |= set(moved[1].message_ids)
                self._moved = moved
                return True
            if asks_when(self.message.content) and not names_a_time(self.message.content):
                # a day the thing has since moved from ("Book club moved to Tuesday the 8th", P13)
                skip = self._skipped(named=True)
                since = moved_clause(
                    self.message.content, wanted, self.evidence(), asker=self.message.author_name, skip=skip
                )
                when = since[1].created_at if since is not None else None
                if since is not None and when is not None and newest.created_at is not None:
                    if when >= newest.created_at:
                        self._deniers |= set(since[1].message_ids)
                        self._moved = since
                        return True
            # its own speaker called the plan off since ("The Lisbon trip is off" after "I'm visiting Greta in Lisbon
            # on Friday the 4th", P13)
            off_since = called_off_since(
                wanted, newest, self.evidence(), asker=self.message.author_name, skip=self._skipped(named=True)
            )
            if off_since is not None:
                self._deniers |= set(off_since[1].message_ids)
                self._moved = off_since
                return True
        ids = sorted({m for i in drawn for m in i.message_ids})
        said = await self._brain.conversations.many(self.message.scope, ids)
        people = [*dict.fromkeys(f"user:{m.author_id}" for m in said.values()), *sorted(self.guard.named)]
        found: set[str] = set()
        for layer_found in await asyncio.gather(
            *(layer.denied(self.message.scope, ids, people) for layer in self._brain.layers)
        ):
            for message_id, names in layer_found.items():
                denies = {stem(w) for name in names for w in name.split()}
                found |= denies
                if denies & wanted:
                    self._deniers.add(message_id)
        return wanted <= found

    async def _over_since(self, since: datetime | None, *, any_time: bool = False) -> list[MemoryItem]:
        """The memories in the prompt newer than ``since`` (or, ``any_time``, all of them, whatever the question)
        whose speakers say a thing the question asks about is over (the layers' ``denied``), noted in
        ``_deniers``: P10's "when do I start at Spotify?" got "Two weeks." from the offer, and a decline quoted it,
        beside the newer "Actually I turned down Spotify"."""
        if not any_time and (since is None or self.guard.claim is not None):
            return []
        newer = [
            i
            for i in self.evidence()
            if i.created_at is not None and (since is None or i.created_at > since) and i.sources
        ]
        if self.guard.named:  # what the people asked about said, or was said of them (not tomas's job for felix's)
            newer = [i for i in newer if self.guard.named & held_words(i.text, None)]
        if not newer:
            return []
        topic = topic_of(self.message.content, self._skipped())
        ids = sorted({m for i in newer for m in i.message_ids})
        said = await self._brain.conversations.many(self.message.scope, ids)
        people = [*dict.fromkeys(f"user:{m.author_id}" for m in said.values())]
        over: set[int] = set()
        for layer_found in await asyncio.gather(
            *(layer.denied(self.message.scope, ids, people) for layer in self._brain.layers)
        ):
            over |= {m for m, names in layer_found.items() if topic & {stem(w) for n in names for w in n.split()}}
        self._deniers |= over
        return [i for i in newer if over & set(i.message_ids)]

    async def _claimed_of(self, items: Sequence[MemoryItem]) -> list[str]:
        """Whom a yes/no question asks about, as the graph knows them: the asker ('user:<id>'), or the person it
        names, by name and as the speaker of ``items``' messages they said themselves ("hank: I moved ...")."""
        subject = self.guard.claim.subject if self.guard.claim is not None else ""
        if not subject:
            return [f"user:{self.message.author_id}"]
        said = await self._brain.conversations.many(
            self.message.scope, sorted({m for i in items for m in i.message_ids})
        )
        speakers = [f"user:{m.author_id}" for m in said.values() if stem(m.author_name.lower()) == subject]
        return [subject, *dict.fromkeys(speakers)]

    async def _in_askers_words(self, text: str) -> str:
        """``text`` with "my" of the one person whose memory it drew on said from the asker's side
        (``bot.grounding.in_askers_words``)."""
        if not says_mine(text):
            return text
        speakers = {s.author for s in await self._brain.source_lines(self.message.scope, self.grounding())}
        if len(speakers) != 1:
            return text
        return in_askers_words(text, speakers.pop(), self.message.author_name)

    async def complete(self) -> str:
        async for _ in self:
            pass
        return self.text

    def cancel(self) -> None:
        """Stop generating (the transport failed, or the bot is shutting down); the turn is still absorbed."""
        self._generation.cancel()
        self._finish()

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            if self._record:
                self._brain._after_reply(self, self._vector)
            else:
                self._brain._active.discard(self)

    def memories_in_prompt(self) -> list[MemoryItem]:
        """The recalled memories (not the recent turns, not the bot's own state) that made it into the prompt,
        in recall's order."""
        text = self.prompt.text
        return [i for i in self.bundle.items(preamble=False) if i.kind != "turn" and i.prompt_line in text]

    def evidence(self) -> list[MemoryItem]:
        """What a reply may draw on: the memories in the prompt and people's recent turns in it; never a bot's
        turn, never a moment of the bot's own; of a when-question, only the lines that can say when
        (``_about_when``). For a question about the asker's own things (``Guard.own``),
        only what the asker said or what names them; for "what is my horse called?" or "what's jun's wife's
        name?", only what mentions the horse, or a wife (``Guard.thing``)."""
        items = []
        for item in evidence_in(self.bundle, self.prompt):
            lines = self._when_lines.get(item.prompt_line)  # a when-question's: only the lines that can say when
            if lines is None:
                items.append(item)
            elif lines:
                items.append(replace(item, text=lines))
        if self.guard.own:
            items = own_items(items, self.message.author_id, self.message.author_name)
        if not self.guard.thing:
            return items
        # "what is my horse called?", "what's jun's wife's name?": only a memory that mentions a horse, a wife
        thing = same_thing(self.guard.thing)
        return [i for i in items if thing & held_words(i.text, i.created_at)]

    def _ignored(self) -> tuple[str, str]:
        return self._brain.bot_name, self.message.author_name

    def _skipped(self, *, named: bool = False) -> set[str]:
        """The stems of the bot's and the asker's names (and, ``named``, of the people the question names): words
        of the question that say whom, not what, it asks about."""
        skip = {stem(w.lower()) for n in self._ignored() for w in n.split()}
        return skip | set(self.guard.named) if named else skip

    def grounding(self) -> Grounding:
        """Which of the memories in the prompt, or of people's recent turns in it, the reply drew on
        (bot.grounding's rule); call once it is done."""
        if self._quoted is not None:
            return Grounding((self._quoted,), frozenset(held_words(self._quoted.text, self._quoted.created_at)))
        if self._drawn:
            drawn = self._drawn[:MAX_SOURCES]
            return Grounding(drawn, frozenset(w for item in drawn for w in held_words(item.text, None)))
        reply = self._grounded_text or self.text
        # to a message that asks nothing, a reply's words that only judge ("nice") draw on nothing
        judging = () if is_question(self.message.content) else tuple(judging_words(reply))
        found = ground(
            reply,
            self.message.content,
            self.evidence(),
            ignore=(*self._ignored(), *judging),
            dates=self.guard.dates_ground,
            named=self.guard.asked_of,
        )
        claim = self.guard.claim
        if not found.items and claim is not None and says_yes(self.text):  # the memory that holds the yes
            holder = claim.holder(self.evidence(), dates=self.guard.dates_ground)
            if holder is not None:
                return Grounding((holder,), frozenset({claim.subject, *claim.names, *claim.rest} - {""}))
        return found


_SENTENCES = re.compile(r"[^.!?]+[.!?]*")  # a reply's sentences, each with its end
_LAUGH_AFTER = re.compile(r"(?:[\s,]+(?:lol|lmao|rofl|haha+|hehe+|xd|:\)|:d))+\s*[.!]*\s*$", re.I)
# The stance a fact's line carries in the prompt (memory.layers.facts.stance), copied into a reply (P13: "Restaurant
# (negative)."): never part of an answer.
_STANCE_LABEL = re.compile(r"\s*\((?:positive|negative)\)", re.I)


class _OpenerFilter:
    """A streamed chat reply without an opening that claims the person's experience as the bot's own ("Me too!
    What kind of music do they play?" to "my boyfriend plays drums in a jazz band", P14; "Me neither.", "Same
    here!"): the reply's start is held back until it is known to open so (dropped) or not (let through)."""

    def __init__(self) -> None:
        self._held = ""
        self._decided = False
        self.dropped = False

    def feed(self, delta: str) -> str:
        if self._decided:
            return delta
        self._held += delta
        said = " ".join(self._held.lower().split())
        if any(o.startswith(said) and o != said for o in _OPENERS):
            return ""  # "me t...": could still become an opener
        for opener in _OPENERS:
            if said.startswith(opener) and not re.search(r"\w", said[len(opener) :]):
                return ""  # "me too!": what follows decides ("same time ..." is no opener)
        return self._decide()

    def flush(self) -> str:
        return "" if self._decided else self._decide()

    def _decide(self) -> str:
        self._decided = True
        text, self._held = self._held, ""
        rest = without_shared_opener(text)
        self.dropped = rest != text
        return rest


def without_shared_opener(text: str) -> str:
    """``text`` less an opening that claims the person's experience ("Me too! What ..." -> "What ...")."""
    if (m := _SHARED_OPENER.match(text)) is None:
        return text
    rest = text[m.end() :]
    return rest[:1].upper() + rest[1:]


# How the model claims a person's experience as its own, opening a reply (the bot has no evening, band or cat).
_OPENERS = (
    "me too",
    "me neither",
    "me either",
    "me as well",
    "same here",
    "same",
    "so do i",
    "so am i",
    "i do too",
    "i am too",
)
# ... each a whole phrase ("Me too!"), "same" only as a word of its own ("Same!", not "Same time next week").
_SHARED_OPENER = re.compile(
    r"\s*(?:(?:" + "|".join(o for o in _OPENERS if o != "same") + r")\b|same(?=\s*[!.]))[\s!.,~]*", re.I
)
TELL_ME_MORE = "Tell me more!"  # what is left of a reply that only claimed the person's experience


class _LabelFilter:
    """A streamed reply without a fact's stance label (``_STANCE_LABEL``): from a " (" on, the text is held back
    until it is known to be a label (dropped) or not (let through); a few characters' wait."""

    _LONGEST = len(" (negative)")

    def __init__(self) -> None:
        self._held = ""

    def feed(self, delta: str) -> str:
        text = self._held + delta
        start = text.find("(")
        if start < 0:
            self._held = ""
            return text
        start = len(text[:start].rstrip())  # the space before it goes with it
        head, tail = text[:start], text[start:]
        tail = _STANCE_LABEL.sub("", tail)
        if "(" in tail and len(tail) - tail.index("(") < self._LONGEST and ")" not in tail[tail.index("(") :]:
            self._held = tail  # could still become a label
            return head
        self._held = ""
        return head + tail

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


def evidence_in(bundle: ContextBundle, prompt: Prompt) -> list[MemoryItem]:
    """The memories (not moments of the bot's own) and people's turns of ``bundle`` that reached ``prompt``."""
    text = prompt.text
    items = bundle.items(preamble=False)
    memories = [i for i in items if i.kind not in ("turn", "moment") and i.prompt_line in text]
    turns = [
        i
        for i in items
        if i.kind == "turn" and i.prompt_line in text and i.payload is not None and not i.payload.is_bot
    ]
    return memories + turns


class Brain:
    def __init__(
        self,
        *,
        conversations: ConversationStore,
        archetypes: ArchetypeRouter,
        recall: Recall,
        absorber: Absorber,
        embedder: Embedder,
        llm: LanguageModel | None,
        prompts: PromptBuilder | None,
        bot_id: str,
        bot_name: str,
        max_message_chars: int,
        clock: Clock | None = None,
        max_generations: int = 8,
        writer_queue: int = 256,
        abstain_bias: float = 0.0,
        chat_decline_bias: float = 0.0,
    ) -> None:
        self.conversations = conversations
        self.archetypes = archetypes
        self.recall = recall
        self.absorber = absorber
        self.embedder = embedder
        self.llm = llm
        self.prompts = prompts  # the PromptBuilder (bench: the same layout without memory, or with a long context)
        self.bot_id = bot_id
        self.bot_name = bot_name
        self._max_chars = max_message_chars
        self.clock: Clock = clock or SystemClock()
        self.writer = MemoryWriter(writer_queue)
        self._max_generations = max_generations
        self._active: set[Reply] = set()  # generating now (or queued for the engine)
        self.accepting = True
        # replies whose write is still queued, so the next turn sees them anyway
        self._unsaved: dict[str, StoredMessage] = {}
        self._temp_ids = itertools.count(-1, -1)
        # A logit bias on the word that opens "I don't know" in a reply to a question about memory (see
        # _abstain_boosts); 0 leaves the model's own balance between answering and saying it does not know.
        self.abstain_bias = abstain_bias
        # The same word's bias in a reply to anything else (small talk, advice, a general question): the reader
        # learned to decline a question its memory cannot answer, and said "I don't remember anyone telling me
        # that." to "what should I cook tonight?" (P7), which asks nothing of memory.
        self.chat_decline_bias = chat_decline_bias
        self._abstain_ids: dict[int, tuple[int, ...]] = {}  # id(llm) -> its token ids for " don"

    def use_model(self, llm: LanguageModel | None, prompts: PromptBuilder | None) -> None:
        """Answer with ``llm`` and its prompt layout from now on (bench: one app, several engines)."""
        self.llm, self.prompts = llm, prompts

    @property
    def layers(self) -> Sequence[MemoryLayer]:
        return self.recall.layers

    def layer(self, name: str) -> MemoryLayer | None:
        return next((layer for layer in self.layers if layer.name == name), None)

    # --- input --------------------------------------------------------------

    def validate(self, text: str) -> str:
        """The text to use, or InvalidInput with a message fit to show the person."""
        if not isinstance(text, str):
            raise InvalidInput("a message must be text")
        cleaned = text.replace("\x00", "").strip()
        if not cleaned:
            raise InvalidInput("the message is empty")
        if len(cleaned) > self._max_chars:
            raise InvalidInput(f"the message is {len(cleaned):,} characters long; the limit is {self._max_chars:,}")
        # A lone surrogate cannot be stored (PostgreSQL wants valid UTF-8): keep the rest of the text.
        return cleaned.encode("utf-8", "replace").decode("utf-8")

    async def receive(self, turn: IncomingTurn) -> StoredMessage:
        """Validate and persist an incoming message (before anything else happens)."""
        require_scope(turn.scope)
        text = self.validate(turn.text)
        return await self.conversations.add(
            NewMessage(
                scope=turn.scope,
                source=turn.source,
                external_id=turn.external_id or str(uuid.uuid4()),
                channel_id=turn.channel_id,
                author_id=turn.author_id,
                author_name=turn.author_name,
                content=text,
                created_at=turn.created_at or self.clock.now(),
                visible_in=turn.visible_in,
                thread_parent_id=turn.thread_parent_id,
                channel_name=turn.channel_name,
                author_username=turn.author_username,
            )
        )

    # --- the pipeline -----------------------------------------------------------

    async def respond(self, turn: IncomingTurn) -> Reply:
        """Persist the message, assemble its context and start generating the reply.

        Raises Busy (after storing the message, so nothing received is lost)
        when the bot is shutting down or its generation or write queues are full.
        """
        if self.llm is None or self.prompts is None:
            raise RuntimeError("this Brain was built without a language model")
        trace = TurnTrace()
        t0 = time.perf_counter()
        message = await self.receive(turn)
        if not self.accepting or len(self._active) >= self._max_generations or self.writer.full:
            if self.accepting and not self.writer.full:
                self.writer.submit(f"absorb message={message.id}", lambda: self._absorb_quietly(message.id))
            raise Busy("the bot is busy")
        t1 = time.perf_counter()
        vector = await self.embedder.embed(message.content)
        t2 = time.perf_counter()
        plan = self.archetypes.classify(vector, turn.scope, asks=asks_of_memory(message.content))
        replied = (
            await self.conversations.find_transport(turn.source, turn.channel_id, turn.reply_to)
            if turn.reply_to
            else None
        )
        t3 = time.perf_counter()
        bundle = await self.recall.gather(
            recall_query(
                turn.scope,
                message.content,
                vector,
                plan,
                self.clock.now(),
                channel_id=turn.channel_id,
                visible_channel=turn.thread_parent_id or turn.channel_id,
                author_id=message.author_id,
                before_message_id=message.id,
                extra_turns=tuple(self._unsaved.values()),
                reply_to=replied,
            )
        )
        t4 = time.perf_counter()
        prompt = self.prompts.build(bundle, message.author_name, message.content)
        t5 = time.perf_counter()
        trace.persist_s, trace.embed_s, trace.classify_s = t1 - t0, t2 - t1, t3 - t2
        trace.recall_s, trace.prompt_s = t4 - t3, t5 - t4
        log.debug(
            "message %s scope=%s archetype=%s sim=%.3f used=%s turns=%d prompt_tokens=%d skipped=%s",
            message.id,
            turn.scope,
            plan.archetype,
            plan.similarity,
            {k: len(v) for k, v in prompt.used.items()},
            prompt.turns_used,
            prompt.tokens,
            bundle.skipped,
        )
        checks = self._guard(message, bundle, prompt)
        if checks.about_memory and bundle.turns:
            # A question about what the bot remembers is answered from its memories as a fresh question is
            # (`hippobot ask`, what the reader was trained on and the evaluation measures): the recent turns
            # are left out but the message replied to, and what they hid comes back as memories. In a chat, the
            # bot's own earlier replies there ("I don't remember anyone telling me that.") are not evidence,
            # and the model repeated them instead of reading the memory (bench.memory_eval --llm-chat).
            fresh = bundle.as_fresh_question(keep=(replied.id,) if replied is not None else ())
            fresh_prompt = self.prompts.build(fresh, message.author_name, message.content)
            fresh_checks = self._guard(message, fresh, fresh_prompt)
            if fresh_checks.about_memory:
                bundle, prompt, checks = fresh, fresh_prompt, fresh_checks
        generation, checks, drawn = await self._answer(
            message, bundle, prompt, checks, turn.thread_parent_id or turn.channel_id
        )
        reply = Reply(self, turn, message, vector, bundle, prompt, generation, trace, guard=checks, drawn=drawn)
        self._active.add(reply)
        return reply

    async def ask(
        self,
        text: str,
        scope: str,
        *,
        author_id: str,
        author_name: str,
        channel_id: str | None = None,
        visible_channel: str | None = None,
        now: datetime | None = None,
    ) -> Reply:
        """The bot's answer to ``text`` as a fresh question, read-only (`hippobot ask`): the whole pipeline
        (embed, archetype, every layer's recall, the prompt, generation) with no recent turns, and nothing
        stored or absorbed. ``now`` is when it is asked (default: the clock's now)."""
        if self.llm is None or self.prompts is None:
            raise RuntimeError("this Brain was built without a language model")
        require_scope(scope)
        text = self.validate(text)
        when = now or self.clock.now()
        trace = TurnTrace()
        t1 = time.perf_counter()
        vector = await self.embedder.embed(text)
        t2 = time.perf_counter()
        plan = self.archetypes.classify(vector, scope, asks=asks_of_memory(text))
        t3 = time.perf_counter()
        bundle = await self.recall.gather(
            recall_query(  # a batch's answer waits on no one: slow layers still count
                scope,
                text,
                vector,
                plan,
                when,
                channel_id=None,
                visible_channel=visible_channel or channel_id,
                author_id=author_id,
            ),
            timeout=BATCH_LAYER_TIMEOUT_S,
        )
        t4 = time.perf_counter()
        prompt = self.prompts.build(bundle, author_name, text)
        t5 = time.perf_counter()
        trace.embed_s, trace.classify_s, trace.recall_s, trace.prompt_s = t2 - t1, t3 - t2, t4 - t3, t5 - t4
        message = StoredMessage(
            id=next(self._temp_ids),
            scope=scope,
            source="ask",
            external_id=str(uuid.uuid4()),
            channel_id=channel_id or "ask",
            author_id=author_id,
            author_name=author_name,
            is_bot=False,
            content=text,
            derived_from_id=None,
            created_at=when,
            visible_in=visible_channel,
        )
        checks = self._guard(message, bundle, prompt)
        generation, checks, drawn = await self._answer(message, bundle, prompt, checks, visible_channel or channel_id)
        turn = IncomingTurn(
            scope=scope,
            source="ask",
            channel_id=message.channel_id,
            author_id=author_id,
            author_name=author_name,
            text=text,
            created_at=when,
        )
        reply = Reply(
            self, turn, message, vector, bundle, prompt, generation, trace, record=False, guard=checks, drawn=drawn
        )
        self._active.add(reply)
        return reply

    async def _answer(
        self, message: StoredMessage, bundle: ContextBundle, prompt: Prompt, checks: Guard, visible_channel: str | None
    ) -> tuple[Generation, Guard, tuple[MemoryItem, ...]]:
        """The reply's generation, its guard and what it was made from when the bot writes it without the model:
        "what do you know about me?" is answered with what the asker told the bot (``about_asker``)."""
        if _ABOUT_ASKER.search(message.content.replace("’", "'")):
            text, drawn = await self.about_asker(
                message.scope,
                message.author_id,
                visible_channel,
                listing=_LISTING.get(message.source, _LISTING["console"]).format(
                    person=shlex.quote(message.author_name)
                ),
            )
            return Generation.fixed(text, reason="what the asker told"), NO_GUARD, drawn
        if _ABOUT_BOT.search(message.content.replace("’", "'")):
            text = self.introduction(_HELP.get(message.source, _HELP["console"]))
            return Generation.fixed(text, reason="what the bot is"), NO_GUARD, ()
        return self._generate(bundle, prompt, checks), checks, ()

    def introduction(self, help_line: str) -> str:
        """What the bot says it is and does, to "who are you?" or "what can you do?"."""
        return (
            f"I'm {self.bot_name}, a chat bot with a long memory: I remember what people tell me here, so you can "
            f'ask me about it later ("what is my dog called?", "when is Sam\'s party?"), and I say where a '
            f"remembered answer came from, or that I don't know. {help_line[:1].upper()}{help_line[1:]}."
        )

    async def about_asker(
        self, scope: str, author_id: str, visible_channel: str | None, limit: int = 5, listing: str = ""
    ) -> tuple[str, tuple[MemoryItem, ...]]:
        """What the bot holds from what a person said, told to them in their own words: the messages of theirs
        that the current facts it holds come from (a message whose every fact a newer one corrected is not among
        them), most recent first, those this audience may see (a restricted channel's only there), each a memory
        with its source. In their words, not the facts' ("your sister marries at pm" is what the parse made of
        "My sister Maria is getting married next Friday at 3pm"). The layers say which messages (``told_by``); with
        nothing held, it says so. The console's user is the history's person of their name
        (``bot.console.console_person``)."""
        told = await asyncio.gather(
            *(
                layer.told_by(scope, author_id, self.clock.now(), visible_channel=visible_channel)
                for layer in self.layers
            )
        )
        found = await self.conversations.many(scope, sorted({i for ids in told for i in ids}))
        said = sorted(
            (m for m in found.values() if m.author_id == author_id and not m.is_bot),
            key=lambda m: (m.created_at, m.id),
            reverse=True,
        )
        if not said:
            return "You haven't told me anything about yourself that I remember.", ()
        refs = await self.conversations.sources([m.id for m in said[:limit]])
        drawn = tuple(
            MemoryItem(
                "message",
                None,
                m.content,
                m.content,
                (m.id,),
                m.created_at,
                sources=(refs[m.id],) if m.id in refs else (),
            )
            for m in said[:limit]
        )
        more = f" (and {len(said) - limit} more{'; ' + listing if listing else ''})" if len(said) > limit else ""
        quoted = " ".join(f'"{dated(m.content.strip(), m.created_at)}"' for m in said[:limit])
        return f"You told me: {quoted}{more}", drawn

    def _guard(self, message: StoredMessage, bundle: ContextBundle, prompt: Prompt) -> Guard:
        return guard(
            message.content,
            evidence_in(bundle, prompt),
            ignore=(self.bot_name, message.author_name),
            people=self._people_in(message.content),
        )

    def _people_in(self, text: str) -> list[str]:
        """The names ``text`` uses for people, as the layers' parses find them (the facts layer's, recall's,
        cached); none when no layer parses (the guard then goes by first person and remembered names alone)."""
        if not is_question(text):
            return []
        return list(dict.fromkeys(name for layer in self.layers for name in layer.people_in(text)))

    def _generate(self, bundle: ContextBundle, prompt: Prompt, checks: Guard) -> Generation:
        assert self.llm is not None
        if checks.refusal is not None:  # the memory cannot hold the answer: say so, without the model
            return Generation.fixed(checks.refusal, reason="not in memory")
        boosts = dict(bundle.boosts or {})
        bias = self.abstain_bias if checks.about_memory else self.chat_decline_bias
        if bias:
            for token in self._abstain_tokens():
                boosts[token] = boosts.get(token, 0.0) + bias
        # An answer read from memory is decoded greedily, as bench/memory_eval.py measures it: sampled, a name
        # in the prompt comes out as a near miss ("Milo." for Miso) that the grounding check must then refuse.
        return self.llm.generate(
            prompt.text,
            stop=prompt.stop,
            stop_pattern=prompt.stop_pattern,
            boosts=boosts or None,
            adapter=bundle.adapter,
            greedy=checks.about_memory,
        )

    def _abstain_tokens(self) -> tuple[int, ...]:
        """The engine's token for " don" (the reader says it does not know as "I don't know..." or "I don't
        remember...", docs/reader.md), without " Don" (a name). A reply that answers a question about memory
        rarely needs the word; one that declines always opens with it. What the bias does is measured in
        bench/memory_eval.py --abstain-bias; an answer it tips the model into that no memory holds is still
        replaced by the grounding check (Reply._stream)."""
        assert self.llm is not None
        key = id(self.llm)
        if key not in self._abstain_ids:
            both = set(self.llm.word_token_ids(["don"]).get("don", ()))
            name = set(self.llm.word_token_ids(["Don"]).get("Don", ()))
            self._abstain_ids = {key: tuple(sorted(both - name))}
        return self._abstain_ids[key]

    async def source_lines(self, scope: str, grounding: Grounding) -> list[SourceLine]:
        """Who said each source of ``grounding``, and when (from the message log): the messages that hold the
        reply's answer words themselves, not the neighbouring turns an episode was shown with."""
        refs = grounding.sources
        found = await self.conversations.many(scope, [r.id for r in refs])
        return [
            SourceLine(found[r.id].author_name, found[r.id].created_at, r)
            for r in refs
            if r.id in found
            and not found[r.id].is_bot
            and grounding.words & held_words(found[r.id].content, found[r.id].created_at)
        ]

    async def context(
        self,
        text: str,
        scope: str,
        *,
        channel_id: str | None = None,
        k: int | None = None,
        author_id: str | None = None,
        visible_channel: str | None = None,
    ) -> ContextBundle:
        """The context the Brain would assemble for ``text`` (read-only; nothing is logged).

        The audience is ``visible_channel`` (default: ``channel_id``); with
        neither, a public audience that sees only what everyone may see.
        """
        return (
            await self.contexts(
                [(text, scope)], channel_id=channel_id, k=k, author_id=author_id, visible_channel=visible_channel
            )
        )[0]

    async def contexts(
        self,
        queries: Sequence[tuple[str, str]],
        *,
        channel_id: str | None = None,
        k: int | None = None,
        author_id: str | None = None,
        visible_channel: str | None = None,
    ) -> list[ContextBundle]:
        """``context`` for many (text, scope) pairs, embedded in one batch."""
        texts = [self.validate(t) for t, _ in queries]
        for _, scope in queries:
            require_scope(scope)
        vectors: np.ndarray | list[np.ndarray] = await self.embedder.embed_many(texts) if texts else []
        if len(texts) > 1:
            await self.recall.prepare(texts, timeout=BATCH_LAYER_TIMEOUT_S)
        slots = asyncio.Semaphore(CONTEXTS_IN_FLIGHT)  # the layers' database and thread work overlaps

        async def one(text: str, scope: str, vector: np.ndarray) -> ContextBundle:
            plan = self.archetypes.classify(vector, scope, asks=asks_of_memory(text))
            if k is not None:
                plan = replace(plan, vectors=max(0, k))
            async with slots:
                return await self.recall.gather(
                    recall_query(
                        scope,
                        text,
                        vector,
                        plan,
                        self.clock.now(),
                        channel_id=channel_id,
                        visible_channel=visible_channel or channel_id,
                        author_id=author_id,
                    ),
                    timeout=BATCH_LAYER_TIMEOUT_S,
                )

        return list(await asyncio.gather(*(one(t, s, v) for t, (_, s), v in zip(texts, queries, vectors))))

    # --- after the reply ------------------------------------------------------------

    def _after_reply(self, reply: Reply, vector: np.ndarray) -> None:
        self._active.discard(reply)
        text = reply.text.strip()
        # The transport's own time where it gave one: the transcript's order is the transport's, whatever
        # this process's clock says (a simulated or skewed clock would date the reply before its question).
        now = reply.posted_at or self.clock.now()
        pending = None
        if text:
            pending = StoredMessage(
                id=next(self._temp_ids),
                scope=reply.turn.scope,
                source=reply.turn.source,
                external_id=reply.external_id,
                channel_id=reply.turn.channel_id,
                author_id=self.bot_id,
                author_name=self.bot_name,
                is_bot=True,
                content=text,
                derived_from_id=reply.message.id,
                created_at=now,
                visible_in=reply.message.visible_in,
                thread_parent_id=reply.message.thread_parent_id,
                channel_name=reply.message.channel_name,
            )
            self._unsaved[pending.external_id] = pending
        hints = AbsorbHints(
            reply.message.content, vector, reply.mean_surprise, reply.prompt.used, reply.mean_entropy, reply.novelty
        )

        async def write() -> None:
            started = time.perf_counter()
            try:
                if pending is not None:
                    await self.conversations.add(
                        NewMessage(
                            scope=pending.scope,
                            source=pending.source,
                            external_id=pending.external_id,
                            channel_id=pending.channel_id,
                            author_id=pending.author_id,
                            author_name=pending.author_name,
                            content=pending.content,
                            created_at=now,
                            is_bot=True,
                            derived_from_id=reply.message.id,
                            visible_in=pending.visible_in,
                            thread_parent_id=pending.thread_parent_id,
                            channel_name=pending.channel_name,
                        )
                    )
                await self.absorber.absorb(reply.message.id, hints)
            finally:
                if pending is not None:
                    self._unsaved.pop(pending.external_id, None)
            reply.trace.write_s = time.perf_counter() - started

        try:
            self.writer.submit(f"turn message={reply.message.id}", write)
        except Busy:  # the message stays unabsorbed in the store and is absorbed at the next start
            if pending is not None:
                self._unsaved.pop(pending.external_id, None)
            log.warning("memory writes backed up; message %s will be absorbed later", reply.message.id)

    async def _absorb_quietly(self, message_id: int) -> None:
        await self.absorber.absorb(message_id)

    async def edit(self, source: str, channel_id: str, external_id: str, new_text: str) -> bool:
        """A person edited a message: store the new text now; every layer follows after the queued writes.

        False when the message is unknown or the bot's own. An edit that lands
        before the turn's queued write wins, since the write re-reads the text.
        """
        stored = await self.conversations.find_transport(source, channel_id, external_id)
        if stored is None or stored.is_bot:
            return False
        text = self.validate(new_text)
        await self.conversations.set_content(stored.id, text, self.clock.now())
        self.writer.submit(f"edit message={stored.id}", lambda: self._follow_edit(stored.id))
        return True

    async def _follow_edit(self, message_id: int) -> None:
        await self.absorber.edited(message_id)

    async def absorb_backlog(self, *, limit: int = 10_000, progress: Callable[[int, int], None] | None = None) -> int:
        """At start-up: absorb what a crash or a kill left unabsorbed (oldest first)."""
        return await self.absorber.backlog(limit=limit, progress=progress)

    async def shutdown(self, *, timeout: float = 30.0) -> bool:
        """Stop taking messages, cancel generations (their turns are still absorbed), drain the writes.

        True when every write finished within ``timeout``; what did not is
        still in the store and is absorbed at the next start.
        """
        self.accepting = False
        for reply in list(self._active):
            reply.cancel()
        return await self.writer.drain(timeout)

    async def drain(self) -> None:
        await self.writer.drain()
