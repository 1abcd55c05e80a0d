"""The local console chat: the same Brain as Discord, one line a message.

Works interactively and with piped input (one message a line; it exits at
the end of input after the memory writes have finished).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from dataclasses import dataclass, replace
from datetime import datetime
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from pathlib import Path

from bot.brain import Brain, IncomingTurn
from bot.grounding import render_sources
from bot.llm import LLMError
from dream.cycle import DreamCycle
from dream.governance import Governance, GovernanceError, OtherScope, Proposal, Voter
from memory.archetypes import Archetype
from memory.clock import Clock
from memory.db import database_unreachable
from memory.errors import MemoryStoreError
from memory.fields import display_text
from memory.layers.weights import AdapterError, WeightsLayer
from memory.recall import ContextBundle
from memory.sources import SourceRef

log = logging.getLogger(__name__)

HELP = """Commands:
  /help             this help
  /recall <text>    show the context the bot would assemble for <text>
  /archetypes       list the active archetypes and their statistics
  /proposals        list the pending proposals of the dream cycle
  /approve N        approve proposal N (what a check-mark reaction does in Discord)
  /reject N         reject proposal N
  /dream            run a dream cycle now and print its report
  /adapter          the LoRA adapter in use here and the latest candidates
  /adapter rollback stop using the adapter in use; go back to the one it replaced
  /persona          the bot's persona here (what `hippobot persona` shows)
  /good, /bad       rate the bot's last reply (what a thumbs up or down does in Discord)
  /quit             leave (end of input does the same)
Anything else is a message to the bot."""


COMMANDS = (
    "/help",
    "/recall",
    "/archetypes",
    "/proposals",
    "/approve",
    "/reject",
    "/dream",
    "/adapter",
    "/persona",
    "/good",
    "/bad",
    "/quit",
)
_COMMAND_WORD = re.compile(r"/[A-Za-z][\w-]*")


def _misused(word: str, line: str) -> str:
    """A known command with words it does not take ("/adapter nonsense", "/dream now"): its lines of the help."""
    usage = [h.strip() for h in HELP.splitlines() if re.search(rf"(?<![\w/]){re.escape(word)}(?![\w-])", h)]
    return f"{word} does not take {line[len(word) :].strip()!r}; usage:\n" + "\n".join(f"  {u}" for u in usage)


def _command_word(line: str) -> str | None:
    """The command a line starts with ("/persona" of "/persona show"), or None for a message ("/usr/bin is ...",
    "a/b", "// note"): a slash, a letter, then word characters, as the whole first word."""
    first = line.split(maxsplit=1)[0] if line.strip() else ""
    return first if _COMMAND_WORD.fullmatch(first) else None


@dataclass(frozen=True)
class ConsoleIdentity:
    user: str
    channel: str
    scope: str
    stored_channel: str | None = None  # the channel's id when ``channel`` names one the scope holds (an import's)
    visible_in: str | None = None  # that channel's audience when it is restricted: what is said there stays there
    thread_parent_id: str | None = None  # when it is a thread, its parent channel
    person_id: str | None = None  # the history's person ``user`` names, when exactly one does (``console_person``)

    @property
    def author_id(self) -> str:
        return self.person_id or f"console:{self.user}"

    @property
    def channel_id(self) -> str:
        return self.stored_channel or f"console:{self.channel}"


async def console_channel_id(conversations: Any, scope: str, name: str) -> str:
    """The channel id the console speaks in for ``--channel NAME``: an imported channel of the scope that NAME
    names (its id, or its name as the history gave it, as ``recall --channel`` reads it), so a question asked
    there recalls what that channel may see; otherwise the console's own ``console:NAME``. A name that fits
    several imported channels is the console's own, never a guess."""
    ids = await conversations.channels_named(scope, name)
    return ids[0] if len(ids) == 1 else f"console:{name}"


async def console_person(conversations: Any, scope: str, user: str) -> str | None:
    """The person of the scope's history that ``--user NAME`` names (by id, display name or username), when exactly
    one does, or the one whose id it is (as `hippobot forget --person` matches by id first): the console speaks as
    them, so "where do I work?" is asked by the ana whose words were imported (P9: her own facts were another
    person's to `ask --user ana`, and an imported "ana" beside a Discord export's "Ana" made her nobody). None: the
    console's own ``console:NAME``."""
    people = [p for p in await conversations.authors_named(scope, user) if not p.startswith("console:")]
    if user in people:
        return user
    return people[0] if len(people) == 1 else None


async def console_identity(conversations: Any, identity: ConsoleIdentity) -> ConsoleIdentity:
    """``identity`` speaking in the channel its name resolves to (``console_channel_id``), with that channel's
    audience: a line typed into an imported restricted channel is as restricted as the channel's own messages,
    never stored for the whole scope to recall."""
    stored = await console_channel_id(conversations, identity.scope, identity.channel)
    visible_in, parent = await conversations.channel_audience(identity.scope, stored)
    person = await console_person(conversations, identity.scope, identity.user)
    return replace(identity, stored_channel=stored, visible_in=visible_in, thread_parent_id=parent, person_id=person)


_MENTION = re.compile(r"<#(\d+)>")


def channels_named(text: str, names: Mapping[str, str]) -> str:
    """``text`` with each Discord channel mention ("<#901>") of a channel ``names`` names as a terminal shows it:
    "#trips" (P9: `recall` printed a place of an imported export as "<#901>")."""
    return _MENTION.sub(lambda m: f"#{names[m.group(1)]}" if m.group(1) in names else m.group(0), text)


def format_bundle(bundle: ContextBundle, names: Mapping[str, str] | None = None) -> str:
    """What ``hippobot recall`` prints of a context bundle; ``names``: channel names by id
    (``ConversationStore.channel_names``), for mentions of numbered channels."""
    plan = bundle.plan
    name = plan.archetype or f"default plan (best: {plan.best_archetype or 'none'})"
    lines = [
        f"archetype: {name}  similarity {plan.similarity:.3f}",
        f"plan: turns={plan.turns} vectors={plan.vectors} threshold={plan.similarity_threshold:.2f} "
        f"triple_depth={plan.triple_depth}",
    ]
    items = bundle.items()
    if not items:
        lines.append("(no memories recalled)")
    for item in items:
        score = "     -" if item.score is None else f"{item.score:6.3f}"
        ids = ",".join(s.label() for s in item.sources) or ",".join(f"#{i}" for i in item.message_ids)
        text = channels_named(item.text.replace("\n", " / "), names or {})
        lines.append(f"  {item.kind:<7} {score}  [{ids}]  {text}")
    return "\n".join(lines)


def format_archetypes(archetypes: Sequence[Archetype], stats: Mapping[Any, tuple[int, float]]) -> str:
    """One line per archetype (``ArchetypeRouter.archetypes_in(scope)``: the ones the scope routes with, its own
    included), with ``stats`` (ArchetypeStore.match_stats: this scope's matches only)."""
    lines = []
    for a in archetypes:
        count, mean = stats.get(a.id, (0, None))
        avg = "-" if mean is None else f"{mean:.3f}"
        lines.append(
            f"{a.name:<24} turns={a.turns:<2} vectors={a.vectors:<2} threshold={a.similarity_threshold:.2f} "
            f"depth={a.triple_depth} matches={count} avg_sim={avg}"
        )
    return "\n".join(lines) or "(no active archetypes)"


class ConsoleDreamChannel:
    """The console's dream channel: proposals and digests are printed."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    async def post_proposal(self, proposal: Proposal) -> str | None:
        self._out.write("\n" + proposal.render() + f"\n(/approve {proposal.id} or /reject {proposal.id})\n")
        self._out.flush()
        return None

    async def post_digest(self, text: str, chart: Path | None) -> None:
        self._out.write("\n" + text + (f"\nchart: {chart}" if chart else "") + "\n")
        self._out.flush()


async def post_proposals(
    governance: Governance,
    out: TextIO,
    *,
    scope: str | None,
    only: str | None = None,
    clock: Clock | None = None,
    since: datetime | None = None,
) -> int:
    """Print what waits in the outbox after a dream run; returns how many were printed.

    ``scope``'s proposals (the console's own) are posted here: printed and
    marked posted. With ``only``, nothing but that scope's proposals is
    shown (a scope's commands show that scope's proposals only: the others
    quote other servers' messages). Without it (``hippobot dream`` over every
    scope, run by whoever runs the bot), other scopes' proposals are printed
    too but stay in the outbox, so the Discord bot posts them to their
    server's dream channel when it runs. ``scope=None`` leaves every proposal
    in the outbox. A post is recorded at ``clock``'s time (the app's: ``--now`` in a replay). With ``since``
    (the dream run's time), another scope's proposals made before it are counted in one line, not printed again
    each night (P8: every nightly dream reprinted the proposals already decided, as waiting).
    """
    from dream.outbox import Outbox

    outbox = Outbox(governance, clock)
    posted = 0
    if scope is not None and only in (None, scope):
        posted = await outbox.flush(ConsoleDreamChannel(out), scope=scope)
    earlier = 0
    for proposal_id in await outbox.pending(scope=only):
        proposal = await governance.get(proposal_id)
        if proposal.scope == scope and scope is not None:
            continue  # its post failed; the flush logged why
        if since is not None and proposal.created_at < since:
            earlier += 1
            continue
        out.write(
            "\n" + proposal.render() + f"\n(waits in the outbox for {proposal.scope or 'every'} server's "
            "dream channel; `hippobot run` posts it)\n"
        )
        posted += 1
    if earlier:
        out.write(
            f"\n({earlier} earlier proposal(s) wait in the outbox for their server's dream channel; `hippobot run` "
            "posts them; `/proposals` in `hippobot chat --scope S` lists the open ones)\n"
        )
    out.flush()
    return posted


class Console:
    def __init__(
        self,
        brain: Brain,
        identity: ConsoleIdentity,
        stdin: TextIO,
        stdout: TextIO,
        stderr: TextIO,
        *,
        interactive: bool,
        governance: Governance | None = None,
        dream: DreamCycle | None = None,
        approver: bool = True,
        approver_role: str = "",
    ) -> None:
        self._brain = brain
        self._governance = governance
        self._dream = dream
        roles = frozenset({approver_role}) if approver and approver_role else frozenset()
        self._voter = Voter(f"console:{identity.user}", identity.user, roles)  # votes stay the console's
        self._me = identity
        self._in, self._out, self._err = stdin, stdout, stderr
        self._interactive = interactive
        self._mid_reply = False
        self.unsaved = 0  # messages refused because the database could not be reached

    def _error(self, text: str) -> None:
        if self._mid_reply:  # end the half-written reply line first
            self._print()
            self._mid_reply = False
        self._err.write(f"error: {display_text(text)}\n")  # an exception's text may quote the message
        self._err.flush()

    def _print(self, text: str = "", *, end: str = "\n") -> None:
        """Everything the console says passes here: the reply as it streams, names, proposals, reports, made safe
        to show (no bidirectional overrides, no terminal escapes); what is stored keeps the original."""
        self._out.write(display_text(text) + end)
        self._out.flush()

    async def run(self) -> int:
        if self._interactive:
            self._print(
                f"hippobot console — you are {self._me.user} in #{self._me.channel} "
                f"(scope {self._me.scope}). /help for commands."
            )
        lines = self._reader()
        try:
            while True:
                if self._interactive:
                    self._print(f"{self._me.user}> ", end="")
                line = await lines.get()
                if not line:  # end of input
                    break
                line = line.rstrip("\r\n")
                if not line.strip():
                    continue
                if line.strip() == "/quit":
                    break
                await self._handle(line)
        finally:
            # The wait at the end (seconds, with a reply's memory writes queued) is said, not silent.
            self._err.write(
                "hippobot: leaving: finishing this chat's memory writes, then stopping the model and the database\n"
            )
            self._err.flush()
            await self._brain.drain()
        return 1 if self.unsaved else 0

    def _reader(self) -> asyncio.Queue[str]:
        """Lines of input, read on a daemon thread: a stop (SIGTERM) never waits for a line nobody types."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str] = asyncio.Queue()

        def read() -> None:
            while True:
                try:
                    line = self._in.readline()
                except (UnicodeDecodeError, ValueError, OSError) as exc:  # unreadable input ends the session
                    self._err.write(f"error: cannot read input ({exc})\n")
                    line = ""
                try:
                    loop.call_soon_threadsafe(queue.put_nowait, line)
                except RuntimeError:  # the loop is gone
                    return
                if not line:
                    return

        threading.Thread(target=read, name="console-input", daemon=True).start()
        return queue

    async def _handle(self, line: str) -> None:
        stripped = line.strip()
        try:
            if stripped == "/help":
                self._print(HELP)
            elif stripped == "/archetypes":
                router = self._brain.archetypes
                await router.refresh()
                stats = await router.store.match_stats(self._me.scope)
                self._print(format_archetypes(router.archetypes_in(self._me.scope), stats))
            elif stripped == "/recall" or stripped.startswith("/recall "):
                query = stripped[len("/recall") :].strip()
                if not query:
                    self._print("usage: /recall <text> (what the bot would recall for that text)")
                    return
                bundle = await self._brain.context(
                    query, self._me.scope, channel_id=self._me.channel_id, author_id=self._me.author_id
                )
                self._print(format_bundle(bundle))
            elif stripped in ("/good", "/bad"):
                from memory.layers.resonance import rate_last_reply

                self._print(
                    await rate_last_reply(
                        self._brain, self._me.scope, self._me.channel_id, self._me.author_id, stripped == "/good"
                    )
                )
            elif stripped in ("/adapter", "/adapter rollback", "/adapter status"):
                await self._adapter_command(stripped)
            elif stripped == "/persona":
                await self._persona_command()
            elif stripped in ("/proposals", "/dream") or stripped.split(" ")[0] in ("/approve", "/reject"):
                await self._governance_command(stripped)
            elif (word := _command_word(stripped)) is not None:  # "/persona show" is a command, not a message
                self._print(
                    _misused(word, stripped)
                    if word in COMMANDS
                    else f"unknown command {word}; the commands are {', '.join(COMMANDS)} (/help says more)"
                )
            else:
                await self._chat(line)
        except (MemoryStoreError, LLMError, GovernanceError, AdapterError) as exc:
            self._error(str(exc))
        except Exception as exc:
            if not database_unreachable(exc):
                raise
            log.debug("the database cannot be reached", exc_info=True)
            self._error("the database cannot be reached; try again once it is back")

    async def _adapter_command(self, command: str) -> None:
        weights = self._brain.layer("weights")
        if not isinstance(weights, WeightsLayer):
            self._print("adapters are not available here")
            return
        if command.endswith("rollback"):
            gone, back = await weights.rollback(self._me.scope)
            self._print(
                f"adapter #{gone} rolled back; replies now use "
                + (f"adapter #{back}" if back else "the base model")
                + " from the next message on"
            )
            return
        self._print(await weights.report(self._me.scope))

    async def _persona_command(self) -> None:
        """The persona this conversation's replies speak with: a restricted channel's own where it has one, else
        the scope's (as `hippobot persona --channel` and Discord's `/persona show`)."""
        from memory.layers.persona import PersonaLayer
        from memory.persona.view import render

        layer = self._brain.layer(PersonaLayer.name)
        if not isinstance(layer, PersonaLayer):
            self._print("the persona is not enabled here")
            return
        current = await layer.store.current(self._me.scope, self._me.visible_in) if self._me.visible_in else None
        if current is None:
            current = await layer.store.current(self._me.scope, None)
        self._print(render(current, core_identity=layer.core_identity, scope=self._me.scope))

    async def _governance_command(self, command: str) -> None:
        if self._governance is None or self._dream is None:
            self._print("the dream cycle is not available here")
            return
        now = self._brain.clock.now()
        if command == "/proposals":
            # this scope's and the global ones (persona, adapters): never another server's
            pending = sorted(
                [
                    *await self._governance.list(scope=self._me.scope, now=now),
                    *await self._governance.list(scope=None, now=now),
                ],
                key=lambda p: p.id,
            )
            self._print("\n\n".join(p.render() for p in pending) if pending else "(no pending proposals)")
            return
        if command == "/dream":
            report = await self._dream.run(now, scope=self._me.scope)
            self._print(report.render())
            await post_proposals(
                self._governance, self._out, scope=self._me.scope, only=self._me.scope, clock=self._brain.clock
            )
            return
        verb, _, arg = command.partition(" ")
        number = arg.strip().lstrip("#")
        if not re.fullmatch(r"[0-9]{1,18}", number):  # ASCII digits that fit a bigint ('²' is a digit too)
            self._print(f"usage: {verb} N (the proposal number; /proposals lists them)")
            return
        try:
            # the console is its owner's chat in its own scope: its proposals and the global ones (those
            # /proposals lists), never another server's, which that server's dream channel decides
            outcome = await self._governance.vote(
                int(number), self._voter, verb == "/approve", now=now, scope=self._me.scope, also_global=True
            )
        except OtherScope as exc:
            self._error(
                f"proposal #{exc.proposal_id} belongs to scope {exc.scope}, not to this console's "
                f"({self._me.scope}); nothing recorded. Vote on it in that scope's dream channel, or in "
                f"`hippobot chat --scope {exc.scope}`"
            )
            return
        p = outcome.proposal
        if not outcome.counted:
            self._print(f"proposal #{p.id} is {p.status}; the vote changes nothing")
        elif outcome.decided:
            extra = ""
            if p.status == "applied":
                extra = (
                    " The adapter is in use from the next message on."
                    if p.kind == "adapter"
                    else " The change is in effect now."
                )
            self._print(f"proposal #{p.id} {p.status} by {p.decided_by}.{extra}")
            await self._brain.archetypes.refresh()
        else:
            self._print(f"vote recorded on proposal #{p.id}; waiting for more votes")

    async def _chat(self, text: str) -> None:
        turn = IncomingTurn(
            scope=self._me.scope,
            source="console",
            channel_id=self._me.channel_id,
            author_id=self._me.author_id,
            author_name=self._me.user,
            text=text,
            visible_in=self._me.visible_in,
            thread_parent_id=self._me.thread_parent_id,
        )
        try:
            reply = await self._brain.respond(turn)  # stores the message first: nothing is answered unstored
        except Exception as exc:
            if not database_unreachable(exc):
                raise
            log.debug("message not stored: the database cannot be reached", exc_info=True)
            self.unsaved += 1
            self._error("your message was not saved: the database cannot be reached; send it again once it is back")
            return
        self._print(f"{self._brain.bot_name}: ", end="")
        self._mid_reply = True
        async for delta in reply:
            self._print(delta, end="")
        self._print()
        self._mid_reply = False
        log.debug("turn trace %s", json.dumps(reply.trace.__dict__))
        sources = await self._brain.source_lines(self._me.scope, reply.grounding())
        if sources:  # a reply that drew on a memory says where it came from
            self._print("  (" + render_sources(sources, link=SourceRef.label) + ")")
