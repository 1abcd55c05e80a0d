"""The proposal outbox: proposals are stored first, then posted, so none is lost while the channel is away.

A proposal is inserted with ``post_pending`` true (sql/006_trust.sql). The
outbox posts every such proposal to the dream channel; one already posted
whose ``post_pending`` was set again (a forgetting redacted its examples) is
edited in place where the channel can (``edit_proposal``) and posted again
where it cannot. A channel failure leaves ``post_pending`` true, so the next
flush tries again: proposals made while Discord was unreachable, or by
``hippobot dream`` with no bot running, are posted when the bot is back.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from collections.abc import Collection
from typing import Protocol

from dream.governance import Governance, Proposal
from memory.clock import Clock, SystemClock
from memory.db import session_lock

log = logging.getLogger(__name__)

OUTBOX_LOCK_KEY = 0x6F7574626F78  # "outbox": one poster at a time, even across processes


class ProposalChannel(Protocol):
    """Where proposals are posted (dream.cycle.DreamChannel's proposal half).

    A channel may also offer ``async edit_proposal(proposal, ref) -> str | None``
    to update a post in place; without it, an updated proposal is posted anew.
    """

    async def post_proposal(self, proposal: Proposal) -> str | None: ...  # a reference to the post, if any


class Outbox:
    """Posts what governance has queued; the queue itself (``post_pending``) is governance's."""

    def __init__(self, governance: Governance, clock: Clock | None = None) -> None:
        self._governance = governance
        self._clock = clock or SystemClock()  # when a post is recorded, unless the caller says
        self._lock = asyncio.Lock()

    async def pending(
        self, limit: int = 50, *, scope: str | None = None, scopes: Collection[str | None] | None = None
    ) -> list[int]:
        """Ids of the proposals waiting to be posted (``Governance.queued``)."""
        return await self._governance.queued(limit, scope=scope, scopes=scopes)

    async def waiting_scopes(self) -> list[str | None]:
        """The scopes with something waiting to be posted (None: global proposals)."""
        return await self._governance.queued_scopes()

    async def requeue(self, scope: str) -> int:
        """Post ``scope``'s pending proposals again (its dream channel changed: they go to the new one);
        returns how many."""
        return await self._governance.requeue(scope)

    async def flush(
        self,
        channel: ProposalChannel,
        *,
        now: datetime | None = None,
        limit: int = 50,
        scope: str | None = None,
        scopes: Collection[str | None] | None = None,
    ) -> int:
        """Post (or update) every proposal waiting in the outbox; returns how many went out.

        ``scope`` limits it to one scope's proposals (the console posts only its
        own, leaving the guilds' to the Discord bot); ``scopes`` to those of
        several (None in it: the global ones), e.g. the scopes that have
        somewhere to go. A failing post is logged and left pending for the
        next flush.
        """
        async with self._lock, session_lock(self._governance.pool, OUTBOX_LOCK_KEY) as taken:
            if not taken:
                return 0  # another process is posting right now
            return await self._flush(channel, now, limit, scope, scopes)

    async def _flush(
        self,
        channel: ProposalChannel,
        now: datetime | None,
        limit: int,
        scope: str | None,
        scopes: Collection[str | None] | None,
    ) -> int:
        posted = 0
        for proposal_id in await self.pending(limit, scope=scope, scopes=scopes):
            proposal = await self._governance.get(proposal_id)
            edit = getattr(channel, "edit_proposal", None)
            try:
                if proposal.posted_ref is not None and edit is not None:
                    ref = await edit(proposal, proposal.posted_ref)
                else:
                    ref = await channel.post_proposal(proposal)
            except Exception as exc:  # the channel is away or refused: try again at the next flush
                log.warning(
                    "could not post proposal %s (%s: %s); it stays in the outbox", proposal_id, type(exc).__name__, exc
                )
                continue
            await self._governance.mark_posted(proposal_id, ref, now or self._clock.now(), as_posted=proposal)
            posted += 1
            log.info("proposal %s posted (ref %s)", proposal_id, ref)
        return posted
