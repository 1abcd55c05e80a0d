"""Governance: proposals for changes to the bot's own behaviour, and human votes on them.

Independent of Discord: the Discord cog and the console both drive this
service. A proposal is pending until enough approvers vote one way (the
quorum, one by default); approval applies the change in the same
transaction that records the deciding vote. Rejections are remembered so the
dream cycle does not propose the same thing again. Only approvers may vote,
and the service checks that itself.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import numpy as np

from memory.embed import similarity

log = logging.getLogger(__name__)

PENDING, APPROVED, REJECTED, EXPIRED, APPLIED = "pending", "approved", "rejected", "expired", "applied"
NEW_ARCHETYPE, EDIT_ARCHETYPE = "new_archetype", "edit_archetype"


class GovernanceError(Exception):
    """Base of the governance errors."""


class NotAnApprover(GovernanceError):
    def __init__(self, voter_id: str) -> None:
        super().__init__(f"{voter_id} may not vote on proposals (needs the approver role or Manage Server)")
        self.voter_id = voter_id


class UnknownProposal(GovernanceError):
    def __init__(self, proposal_id: int) -> None:
        super().__init__(f"there is no proposal #{proposal_id}")
        self.proposal_id = proposal_id


@dataclass(frozen=True)
class Voter:
    id: str
    name: str
    roles: frozenset[str] = frozenset()
    can_manage_server: bool = False


@dataclass(frozen=True)
class ApproverPolicy:
    approver_roles: frozenset[str]
    quorum: int = 1

    def allows(self, voter: Voter) -> bool:
        return voter.can_manage_server or bool(voter.roles & self.approver_roles)


@dataclass(frozen=True)
class Proposal:
    id: int
    kind: str
    status: str
    title: str
    payload: dict[str, Any]
    rationale: str
    evidence: dict[str, Any]
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None
    decided_by: str | None
    posted_ref: str | None
    votes: tuple[tuple[str, str], ...] = field(default=())  # (voter name, vote)

    @property
    def scope(self) -> str | None:
        """The scope its evidence came from (examples are that scope's messages)."""
        return self.evidence.get("scope")

    def render(self, *, show_examples: bool = True) -> str:
        """The proposal as posted for humans (seed 003's format).

        ``show_examples=False`` when posting outside the scope the examples came
        from: they are other people's messages.
        """
        p = self.payload
        lines = [f"**Proposal #{self.id}: {self.title}**  ({self.kind.replace('_', ' ')}, {self.status})"]
        if "description" in p:
            lines.append(f"Description: {p['description']}")
        if "examples" in p and show_examples:
            lines.append("Example messages:")
            lines += [f"  - \"{e}\"" for e in p["examples"]]
        elif "examples" in p:
            lines.append(f"Example messages: {len(p['examples'])}, from another server (not shown here).")
        if "context_turns" in p:
            lines.append(
                f"Context: turns {p['context_turns']}, memories {p['context_vectors']}, "
                f"threshold {p['similarity_threshold']:.2f}, graph depth {p['triple_depth']}"
            )
        lines.append("Rationale:")
        lines += [f"  {line}" for line in self.rationale.splitlines()]
        sample = self.evidence.get("messages", [])[:5]
        if sample:
            lines.append("Evidence:")
            lines += [
                f"  - message {m['message_id']}: nearest archetype {m['nearest']} ({m['similarity']:.2f})"
                for m in sample
            ]
        if self.status == PENDING:
            lines.append(f"Expires {self.expires_at:%Y-%m-%d %H:%M %Z}.")
        else:
            lines.append(f"Decision: {self.status} by {self.decided_by or '-'}"
                         + (f" at {self.decided_at:%Y-%m-%d %H:%M %Z}" if self.decided_at else ""))
        return "\n".join(lines)


@dataclass(frozen=True)
class VoteOutcome:
    proposal: Proposal
    counted: bool  # False when the proposal was no longer pending
    decided: bool  # this vote decided it


def _proposal(row: asyncpg.Record, votes: Sequence[asyncpg.Record] = ()) -> Proposal:
    return Proposal(
        id=row["id"], kind=row["kind"], status=row["status"], title=row["title"], payload=row["payload"],
        rationale=row["rationale"], evidence=row["evidence"], created_at=row["created_at"],
        expires_at=row["expires_at"], decided_at=row["decided_at"], decided_by=row["decided_by"],
        posted_ref=row["posted_ref"], votes=tuple((v["voter_name"], v["vote"]) for v in votes),
    )


class Governance:
    def __init__(self, pool: asyncpg.Pool, policy: ApproverPolicy, *, ttl: timedelta) -> None:
        self._pool = pool
        self.policy = policy
        self._ttl = ttl

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
    ) -> Proposal:
        row = await self._pool.fetchrow(
            """INSERT INTO proposals (kind, title, payload, rationale, evidence, centroid, dream_run_id,
                                      created_at, expires_at)
               VALUES ($1, $2, $3::jsonb, $4, $5::jsonb, $6, $7, $8, $9) RETURNING *""",
            kind, title, payload, rationale, evidence,
            None if centroid is None else np.asarray(centroid, dtype=np.float32), dream_run_id, now, now + self._ttl,
        )
        return _proposal(row)

    async def get(self, proposal_id: int) -> Proposal:
        row = await self._pool.fetchrow("SELECT * FROM proposals WHERE id = $1", proposal_id)
        if row is None:
            raise UnknownProposal(proposal_id)
        votes = await self._pool.fetch(
            "SELECT voter_name, vote FROM proposal_votes WHERE proposal_id = $1 ORDER BY voted_at", proposal_id
        )
        return _proposal(row, votes)

    async def find_by_ref(self, posted_ref: str) -> Proposal | None:
        row = await self._pool.fetchrow("SELECT id FROM proposals WHERE posted_ref = $1", posted_ref)
        return None if row is None else await self.get(row["id"])

    async def list(self, statuses: Sequence[str] = (PENDING,)) -> list[Proposal]:
        rows = await self._pool.fetch(
            "SELECT * FROM proposals WHERE status = ANY($1::text[]) ORDER BY id", list(statuses)
        )
        return [_proposal(r) for r in rows]

    async def set_posted_ref(self, proposal_id: int, ref: str) -> None:
        await self._pool.execute("UPDATE proposals SET posted_ref = $2 WHERE id = $1", proposal_id, ref)

    async def similar_decided_or_open(self, centroid: np.ndarray, threshold: float) -> Proposal | None:
        """A pending, approved, applied or rejected proposal whose centroid is this close (same idea)."""
        row = await self._pool.fetchrow(
            """SELECT *, 1 - (centroid <=> $1) / 2 AS similarity FROM proposals
               WHERE centroid IS NOT NULL AND status IN ('pending', 'approved', 'applied', 'rejected')
               ORDER BY centroid <=> $1 LIMIT 1""",
            np.asarray(centroid, dtype=np.float32),
        )
        if row is None or row["similarity"] < threshold:
            return None
        return _proposal(row)

    async def vote(self, proposal_id: int, voter: Voter, approve: bool, *, now: datetime) -> VoteOutcome:
        """Record a vote; decide and apply once the quorum is reached. Non-approvers are refused."""
        if not self.policy.allows(voter):
            raise NotAnApprover(voter.id)
        async with self._pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow("SELECT * FROM proposals WHERE id = $1 FOR UPDATE", proposal_id)
            if row is None:
                raise UnknownProposal(proposal_id)
            if row["status"] != PENDING or row["expires_at"] <= now:
                return VoteOutcome(await self._get(conn, proposal_id), counted=False, decided=False)
            await conn.execute(
                """INSERT INTO proposal_votes (proposal_id, voter_id, voter_name, vote, voted_at)
                   VALUES ($1, $2, $3, $4, $5)
                   ON CONFLICT (proposal_id, voter_id) DO UPDATE SET vote = excluded.vote, voted_at = excluded.voted_at""",
                proposal_id, voter.id, voter.name, "approve" if approve else "reject", now,
            )
            tally = await conn.fetch(
                "SELECT vote, array_agg(voter_name ORDER BY voted_at) AS names FROM proposal_votes "
                "WHERE proposal_id = $1 GROUP BY vote",
                proposal_id,
            )
            names = {r["vote"]: list(r["names"]) for r in tally}
            decided = False
            if len(names.get("approve", [])) >= self.policy.quorum:
                approvers = ", ".join(names["approve"])
                archetype_id = await self._apply(conn, row, approvers)
                await conn.execute(
                    """UPDATE proposals SET status = 'applied', decided_at = $2, decided_by = $3,
                           applied_archetype_id = $4 WHERE id = $1""",
                    proposal_id, now, approvers, archetype_id,
                )
                decided = True
                log.info("proposal %s approved and applied by %s", proposal_id, approvers)
            elif len(names.get("reject", [])) >= self.policy.quorum:
                await conn.execute(
                    "UPDATE proposals SET status = 'rejected', decided_at = $2, decided_by = $3 WHERE id = $1",
                    proposal_id, now, ", ".join(names["reject"]),
                )
                decided = True
                log.info("proposal %s rejected", proposal_id)
            return VoteOutcome(await self._get(conn, proposal_id), counted=True, decided=decided)

    async def expire(self, now: datetime) -> int:
        status = await self._pool.execute(
            "UPDATE proposals SET status = 'expired', decided_at = $1 WHERE status = 'pending' AND expires_at <= $1",
            now,
        )
        return int(status.split()[-1])

    async def _get(self, conn: asyncpg.Connection, proposal_id: int) -> Proposal:
        row = await conn.fetchrow("SELECT * FROM proposals WHERE id = $1", proposal_id)
        votes = await conn.fetch(
            "SELECT voter_name, vote FROM proposal_votes WHERE proposal_id = $1 ORDER BY voted_at", proposal_id
        )
        return _proposal(row, votes)

    async def _apply(self, conn: asyncpg.Connection, row: asyncpg.Record, approvers: str) -> Any:
        p = row["payload"]
        if row["kind"] == NEW_ARCHETYPE:
            return await conn.fetchval(
                """INSERT INTO context_archetypes (archetype_name, description, example_messages, context_turns,
                       context_vectors, similarity_threshold, triple_depth, created_by, approved_by)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, 'ai_dream_cycle', $8) RETURNING id""",
                p["name"], p["description"], p["examples"], p["context_turns"], p["context_vectors"],
                p["similarity_threshold"], p["triple_depth"], approvers,
            )
        if row["kind"] == EDIT_ARCHETYPE:
            return await conn.fetchval(
                """UPDATE context_archetypes SET example_messages = $2, approved_by = $3, updated_at = now()
                   WHERE archetype_name = $1 RETURNING id""",
                p["name"], p["examples"], approvers,
            )
        raise GovernanceError(f"proposal #{row['id']} has an unknown kind {row['kind']!r}")
