"""The seam through which memory layers propose changes to the bot's own behaviour.

A layer never writes the proposals table: the kind check, the refusal of
a source from another scope, the redaction of a source already forgotten and
the record of every source (so that forgetting one later redacts it) live in
one place, governance (``dream.governance.Governance`` implements this), and
the composition root passes it in. ``memory`` cannot import ``dream``
(imports run bot -> dream -> memory), hence a Protocol here.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Protocol

import asyncpg
import numpy as np


class Proposed(Protocol):
    """What a layer gets back: the stored proposal, by id."""

    @property
    def id(self) -> int: ...


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
