"""The seam through which memory layers propose changes to the bot's own behaviour.

A layer never writes the proposals table: the kind check, the refusal of
a source from another scope, the redaction of a source already forgotten and
the record of every source (so that forgetting one later redacts it) live in
one place, governance (``dream.governance.Governance`` implements this), and
the composition root passes it in. ``memory`` cannot import ``dream``
(imports run bot -> dream -> memory), hence a Protocol here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import asyncpg
import numpy as np


class Proposed(Protocol):
    """What a layer gets back: the stored proposal, by id."""

    @property
    def id(self) -> int: ...


@dataclass(frozen=True)
class Withdrawn:
    """What a withdrawn proposal says instead of what it said (``Proposer.withdraw``)."""

    title: str
    rationale: str
    payload: Mapping[str, Any]


class Proposer(Protocol):
    async def propose(
        self,
        kind: str,
        title: str,
        payload: dict[str, Any],
        rationale: str,
        evidence: dict[str, Any],
        *,
        centroid: np.ndarray | None,
        now: datetime,
        dream_run_id: int | None = None,
        scope: str | None = None,
        sources: Sequence[tuple[int, str | None]] = (),
        worded_by: Collection[int] = (),
        conn: asyncpg.Connection | None = None,
    ) -> Proposed:
        """Store a pending proposal of a registered ``kind`` for ``scope`` (None: global), queued for posting.

        ``sources``: (message id, the example quoted from it or None) for every message it cites;
        ``worded_by``: the sources its wording is made of. ``conn``: join the caller's transaction (the
        proposal is stored, or not, with what the caller writes beside it); None: its own transaction.
        """
        ...

    async def statuses(
        self, proposal_ids: Collection[int], *, conn: asyncpg.Connection | None = None
    ) -> Mapping[int, str]:
        """The status ('pending', 'applied', 'rejected', 'expired', ...) of each of these proposals that
        exists; a proposal gone (its scope forgotten) is missing from the answer."""
        ...

    async def citing(self, kind: str, message_ids: Collection[int], *, conn: asyncpg.Connection) -> list[int]:
        """The proposals of ``kind`` that cite one of these messages (as a source or as their wording)."""
        ...

    async def withdraw(
        self, proposal_ids: Collection[int], *, reason: str, conn: asyncpg.Connection, rewrite: Withdrawn | None = None
    ) -> int:
        """Withdraw these proposals in the caller's transaction (a layer's forgetting): a pending one expires
        (decided by ``reason``; what its kind does on rejection runs), and with ``rewrite`` every one of them,
        whatever its status, has its title, payload and rationale replaced (its words came from what is being
        forgotten). Returns how many pending proposals expired."""
        ...


class ProposalRecords(Protocol):
    """What forgetting (``memory.provenance.Provenance``) asks of governance, inside its transaction: the
    database's triggers redact a forgotten message's words in proposals (sql/019); governance counts them and
    anonymises a forgotten person's votes."""

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        """Count, before the messages are deleted, the proposals whose words their deletion redacts."""
        ...

    async def forget_voter(self, conn: asyncpg.Connection, scope: str, voter_id: str) -> int:
        """Keep the person's votes on ``scope``'s (and the global) proposals, drop who cast them, and their name
        from the decisions those votes made; returns how many votes."""
        ...
