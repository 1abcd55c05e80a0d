"""Governance: proposals for changes to the bot's own behaviour, and human votes on them.

Independent of Discord: the Discord cog and the console both drive this
service. A proposal is pending until enough approvers vote one way (the
quorum, one by default); approval applies the change in the same
transaction that records the deciding vote. Rejections are remembered so the
dream cycle does not propose the same thing again. Only approvers may vote,
and the service checks that itself.

Proposals belong to a scope: one made from a guild's data applies to that
guild only (NULL: global, the owner's). The messages a proposal quotes or
draws on are recorded in ``proposal_sources``, so forgetting one redacts its
words: its example and evidence entry, and, where the proposal's wording
(name, title, description, rationale, evidence terms) is made of that
message's words, the wording too, with the applied archetype's name and the
dream reports that named it (sql/019).
What approval does is registered per kind (``register_kind``), not written
here: layers contribute their kinds, and the archetype kinds are registered
by default (``dream.archetype_kinds``).
"""

from __future__ import annotations

import builtins  # the builtin, in annotations after the method Governance.list shadows it
import logging
import re
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final
from uuid import UUID

import asyncpg
import numpy as np

from memory.fields import display_text
from memory.proposer import Withdrawn


log = logging.getLogger(__name__)

PENDING, APPROVED, REJECTED, EXPIRED, APPLIED = "pending", "approved", "rejected", "expired", "applied"
NEW_ARCHETYPE, EDIT_ARCHETYPE = "new_archetype", "edit_archetype"
_KIND_OK = re.compile(r"^[a-z][a-z0-9_]{1,62}$")  # as proposals_kind_check


class _AnyScope:
    def __repr__(self) -> str:
        return "ANY_SCOPE"


ANY_SCOPE: Final = _AnyScope()  # "do not filter on scope" (None means the global proposals)

# What approving a kind does: (connection in the deciding transaction, the proposals row, approvers' names)
# -> what it applied (an archetype id is recorded on the proposal).
KindHandler = Callable[[asyncpg.Connection, asyncpg.Record, str], Awaitable[Any]]
FORGOTTEN_NAME = "(forgotten)"
# A proposal's scope: the column (006), or for rows written before a store set it, its evidence.
_PROPOSAL_SCOPE = "COALESCE(scope, evidence ->> 'scope')"
# Where a decision names its voters, by display name: (table, column, the rows of proposal $1).
_DECISION_NAMES = (
    ("proposals", "decided_by", "id = $1"),
    ("context_archetypes", "approved_by", "id = (SELECT applied_archetype_id FROM proposals WHERE id = $1)"),
)


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


class UnknownKind(GovernanceError):
    def __init__(self, kind: str, proposal_id: int | None = None) -> None:
        where = f"proposal #{proposal_id} has" if proposal_id is not None else "there is"
        super().__init__(f"{where} a kind no handler is registered for: {kind!r}")
        self.kind = kind
        self.proposal_id = proposal_id


class OtherScope(GovernanceError):
    """A vote from a scope the proposal does not apply to (another guild, or a global proposal)."""

    def __init__(self, proposal_id: int, scope: str | None) -> None:
        super().__init__(
            f"proposal #{proposal_id} does not belong to this server"
            + ("" if scope else " (only the bot's owner decides global proposals)")
        )
        self.proposal_id = proposal_id
        self.scope = scope  # the proposal's (None: global), for a caller that may name it (the owner's console)


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
    target_scope: str | None = None  # proposals.scope: where it applies (None: global)
    post_pending: bool = False  # the outbox has yet to (re)post it

    @property
    def scope(self) -> str | None:
        """The scope it applies to, whose messages its examples are (None: global)."""
        return self.target_scope if self.target_scope is not None else self.evidence.get("scope")

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
            lines += [f'  - "{e}"' for e in p["examples"]]
        elif "examples" in p:
            lines.append(f"Example messages: {len(p['examples'])}, from another server (not shown here).")
        if "context_turns" in p:
            lines.append(
                f"Context: turns {p['context_turns']}, memories {p['context_vectors']}, "
                f"threshold {p['similarity_threshold']:.2f}, graph depth {p['triple_depth']}"
            )
        lines.append("Rationale:")
        lines += [f"  {line}" for line in self.rationale.splitlines()]
        if forgotten := int(self.evidence.get("forgotten_messages") or 0):
            many = forgotten != 1
            lines.append(
                f"  - Since then {forgotten} message{'s' if many else ''} it drew on {'were' if many else 'was'} "
                "forgotten (counted above)."
            )
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
            lines.append(
                f"Decision: {self.status} by {self.decided_by or '-'}"
                + (f" at {self.decided_at:%Y-%m-%d %H:%M %Z}" if self.decided_at else "")
            )
        return display_text("\n".join(lines))  # quotes people's words and names: no bidirectional overrides


@dataclass(frozen=True)
class VoteOutcome:
    proposal: Proposal
    counted: bool  # False when the proposal was no longer pending
    decided: bool  # this vote decided it


def _proposal(row: asyncpg.Record, votes: Sequence[asyncpg.Record] = ()) -> Proposal:
    return Proposal(
        id=row["id"],
        kind=row["kind"],
        status=row["status"],
        title=row["title"],
        payload=row["payload"],
        rationale=row["rationale"],
        evidence=row["evidence"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        decided_at=row["decided_at"],
        decided_by=row["decided_by"],
        posted_ref=row["posted_ref"],
        votes=tuple((v["voter_name"], v["vote"]) for v in votes),
        target_scope=row["scope"],
        post_pending=row["post_pending"],
    )


class Governance:
    def __init__(
        self, pool: asyncpg.Pool, policy: ApproverPolicy, *, ttl: timedelta, archetype_kinds: bool = True
    ) -> None:
        """``archetype_kinds``: register ``new_archetype`` and ``edit_archetype`` (the composition root
        registers the kinds its memory layers contribute with ``register_kind``)."""
        self._pool = pool
        self.policy = policy
        self._ttl = ttl
        self._kinds: dict[str, KindHandler] = {}
        self._on_reject: dict[str, KindHandler] = {}
        if archetype_kinds:
            from dream.archetype_kinds import register_archetype_kinds  # it imports this module

            register_archetype_kinds(self)

    @property
    def pool(self) -> asyncpg.Pool:
        return self._pool

    def register_kind(self, kind: str, apply: KindHandler) -> None:
        """What approving a proposal of ``kind`` does. Registering the same handler again is a no-op;
        a second, different handler for a kind is a GovernanceError."""
        if not _KIND_OK.match(kind):
            raise GovernanceError(f"a proposal kind is a lowercase identifier, not {kind!r}")
        if self._kinds.get(kind, apply) is not apply:
            raise GovernanceError(f"proposal kind {kind!r} is already registered")
        self._kinds[kind] = apply

    def register_rejection(self, kind: str, handler: KindHandler) -> None:
        """What rejecting (or expiring) a proposal of ``kind`` does besides recording it (e.g. deleting the
        candidate it offered); runs in the deciding transaction."""
        self._on_reject[kind] = handler

    def register_rejections(self, kinds: Mapping[str, KindHandler]) -> None:
        for kind, handler in kinds.items():
            self.register_rejection(kind, handler)

    def register_kinds(self, kinds: Mapping[str, KindHandler]) -> None:
        """Every kind of a mapping (a memory layer's ``proposal_kinds()``)."""
        for kind, apply in kinds.items():
            self.register_kind(kind, apply)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted(self._kinds))

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
    ) -> Proposal:
        """Store a pending proposal for ``scope`` (None: global), queued for the outbox to post.

        ``sources`` are (message id, the example quoted from it or None) for every message the
        proposal cites: forgetting one later redacts its words. ``worded_by``: the sources whose
        words the proposal's name, title, description, rationale or evidence terms hold; forgetting
        one of them redacts that wording. A source that is already gone is redacted now; one from
        another scope is a GovernanceError. ``conn``: store it in the caller's transaction (a memory
        layer's, beside the state that refers to it); None: in a transaction of its own.
        This is ``memory.proposer.Proposer``: the one way anything stores a proposal.
        """
        if kind not in self._kinds:
            raise UnknownKind(kind)
        cited: dict[int, str | None] = {}
        for message_id, example in sources:
            cited[int(message_id)] = cited.get(int(message_id)) or example
        worded = {int(i) for i in worded_by}
        for message_id in worded:  # a message the wording draws on is a source too
            cited.setdefault(message_id, None)
        if conn is None:
            async with self._pool.acquire() as own:
                return await self.propose(
                    kind,
                    title,
                    payload,
                    rationale,
                    evidence,
                    centroid=centroid,
                    now=now,
                    dream_run_id=dream_run_id,
                    scope=scope,
                    sources=sources,
                    worded_by=worded_by,
                    conn=own,
                )
        async with conn.transaction():  # a savepoint when it joins the caller's transaction
            if scope is not None:
                # An example quoted word for word from one of the scope's messages is cited even when
                # the caller did not say so: forgetting that message must redact it too.
                quoted = set(e for e in payload.get("examples") or () if isinstance(e, str)) - set(cited.values())
                for r in (
                    await conn.fetch(
                        "SELECT id, content FROM messages WHERE scope = $1 AND content = ANY($2::text[])",
                        scope,
                        sorted(quoted),
                    )
                    if quoted
                    else ()
                ):
                    cited.setdefault(r["id"], r["content"])
            # Lock the cited messages so none is forgotten between this check and the insert.
            rows = await conn.fetch(
                "SELECT id, scope FROM messages WHERE id = ANY($1::bigint[]) FOR KEY SHARE", list(cited)
            )
            present = {r["id"]: r["scope"] for r in rows}
            foreign = sorted(i for i, s in present.items() if scope is not None and s != scope)
            if foreign:
                raise GovernanceError(f"a proposal for {scope} cites messages of another scope: {foreign[:5]}")
            gone = [i for i in cited if i not in present]
            if gone:
                payload, evidence = _redacted(payload, evidence, {i: cited[i] for i in gone})
            row = await conn.fetchrow(
                """INSERT INTO proposals (kind, title, payload, rationale, evidence, centroid, dream_run_id,
                                          created_at, expires_at, scope)
                   VALUES ($1, $2, $3::jsonb, $4, $5::jsonb, $6, $7, $8, $9, $10) RETURNING *""",
                kind,
                title,
                payload,
                rationale,
                evidence,
                None if centroid is None else np.asarray(centroid, dtype=np.float32),
                dream_run_id,
                now,
                now + self._ttl,
                scope,
            )
            await conn.executemany(
                "INSERT INTO proposal_sources (proposal_id, message_id, example, wording) VALUES ($1, $2, $3, $4)",
                [(row["id"], i, cited[i], i in worded) for i in cited if i in present],
            )
            if worded & set(gone):  # its wording came (in part) from a message already forgotten
                await conn.execute("SELECT redact_proposal_wording($1)", row["id"])
                row = await conn.fetchrow("SELECT * FROM proposals WHERE id = $1", row["id"])
        log.info("proposal %s (%s) stored for %s with %d source(s)", row["id"], kind, scope or "global", len(present))
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

    async def list(
        self,
        statuses: Sequence[str] = (PENDING,),
        *,
        scope: str | None | _AnyScope = ANY_SCOPE,
        now: datetime | None = None,
    ) -> list[Proposal]:
        """Proposals with these statuses, oldest first; only ``scope``'s when given (None: the global ones).
        With ``now``, pending proposals past their time are expired first, so a list and a vote agree."""
        if now is not None:
            async with self._pool.acquire() as conn, conn.transaction():
                if scope is ANY_SCOPE:
                    await self._expire_rows(conn, "true OR $2::text IS NULL", now, None)
                else:
                    await self._expire_rows(conn, "scope IS NOT DISTINCT FROM $2::text", now, scope)
        if scope is ANY_SCOPE:
            rows = await self._pool.fetch(
                "SELECT * FROM proposals WHERE status = ANY($1::text[]) ORDER BY id", list(statuses)
            )
        else:
            rows = await self._pool.fetch(
                """SELECT * FROM proposals WHERE status = ANY($1::text[]) AND scope IS NOT DISTINCT FROM $2::text
                   ORDER BY id""",
                list(statuses),
                scope,
            )
        return [_proposal(r) for r in rows]

    async def pending_counts(self, scopes: Collection[str] | None = None) -> dict[str, int]:
        """How many pending proposals each scope has (only ``scopes``, if given); a scope with none is left
        out. A proposal stored before proposals had a scope column (sql/006) counts by its evidence's."""
        rows = await self._pool.fetch(
            f"""SELECT {_PROPOSAL_SCOPE} AS scope, count(*) AS n FROM proposals
                WHERE status = 'pending' AND {_PROPOSAL_SCOPE} IS NOT NULL
                  AND ($1::text[] IS NULL OR {_PROPOSAL_SCOPE} = ANY($1::text[]))
                GROUP BY 1""",
            None if scopes is None else sorted(scopes),
        )
        return {r["scope"]: int(r["n"]) for r in rows}

    async def similar_decided_or_open(
        self, centroid: np.ndarray, threshold: float, *, scope: str | None | _AnyScope = ANY_SCOPE
    ) -> Proposal | None:
        """A pending, approved, applied or rejected proposal whose centroid is this close (same idea).

        With ``scope``: only that scope's proposals and the global ones count (another guild's
        rejection does not decide for this one).
        """
        row = await self._pool.fetchrow(
            """SELECT *, 1 - (centroid <=> $1) / 2 AS similarity FROM proposals
               WHERE centroid IS NOT NULL AND status IN ('pending', 'approved', 'applied', 'rejected')
                 AND ($2 OR scope IS NULL OR scope = $3::text)
               ORDER BY centroid <=> $1 LIMIT 1""",
            np.asarray(centroid, dtype=np.float32),
            scope is ANY_SCOPE,
            None if scope is ANY_SCOPE else scope,
        )
        if row is None or row["similarity"] < threshold:
            return None
        return _proposal(row)

    async def vote(
        self,
        proposal_id: int,
        voter: Voter,
        approve: bool,
        *,
        now: datetime,
        scope: str | None | _AnyScope = ANY_SCOPE,
        also_global: bool = False,
    ) -> VoteOutcome:
        """Record a vote; decide and apply once the quorum is reached. Non-approvers are refused.

        ``scope``: where the vote was cast (a guild); a proposal of another scope, or a global
        one, is refused there with OtherScope. Left out: the owner's vote, anywhere.
        ``also_global``: the vote is the owner's in their own ``scope`` (the console), which decides the
        global proposals too, but not another scope's.
        A proposal of a kind with no registered handler is refused with UnknownKind.
        """
        if not self.policy.allows(voter):
            raise NotAnApprover(voter.id)
        async with self._pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow("SELECT * FROM proposals WHERE id = $1 FOR UPDATE", proposal_id)
            if row is None:
                raise UnknownProposal(proposal_id)
            if scope is not ANY_SCOPE and row["scope"] != scope and not (also_global and row["scope"] is None):
                raise OtherScope(proposal_id, row["scope"])
            if row["kind"] not in self._kinds:
                raise UnknownKind(row["kind"], proposal_id)
            if row["status"] == PENDING and row["expires_at"] <= now:  # past its time: say so, as /proposals does
                await self._expire_rows(conn, "id = $2", now, proposal_id)
            if row["status"] != PENDING or row["expires_at"] <= now:
                return VoteOutcome(await self._get(conn, proposal_id), counted=False, decided=False)
            await conn.execute(
                """INSERT INTO proposal_votes (proposal_id, voter_id, voter_name, vote, voted_at)
                   VALUES ($1, $2, $3, $4, $5)
                   ON CONFLICT (proposal_id, voter_id) DO UPDATE SET vote = excluded.vote, voted_at = excluded.voted_at""",
                proposal_id,
                voter.id,
                voter.name,
                "approve" if approve else "reject",
                now,
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
                applied = await self._kinds[row["kind"]](conn, row, approvers)
                archetype_id = applied if isinstance(applied, UUID) else None
                await conn.execute(
                    """UPDATE proposals SET status = 'applied', decided_at = $2, decided_by = $3,
                           applied_archetype_id = $4 WHERE id = $1""",
                    proposal_id,
                    now,
                    approvers,
                    archetype_id,
                )
                decided = True
                log.info("proposal %s approved and applied by %s", proposal_id, approvers)
            elif len(names.get("reject", [])) >= self.policy.quorum:
                await conn.execute(
                    "UPDATE proposals SET status = 'rejected', decided_at = $2, decided_by = $3 WHERE id = $1",
                    proposal_id,
                    now,
                    ", ".join(names["reject"]),
                )
                if (on_reject := self._on_reject.get(row["kind"])) is not None:
                    await on_reject(conn, row, ", ".join(names["reject"]))
                decided = True
                log.info("proposal %s rejected", proposal_id)
            return VoteOutcome(await self._get(conn, proposal_id), counted=True, decided=decided)

    async def expire(self, now: datetime, *, scope: str | None = None) -> int:
        """Expire pending proposals past their time (only ``scope``'s when given); returns how many."""
        async with self._pool.acquire() as conn, conn.transaction():
            return await self._expire_rows(conn, "($2::text IS NULL OR scope = $2::text)", now, scope)

    async def statuses(
        self, proposal_ids: Collection[int], *, conn: asyncpg.Connection | None = None
    ) -> dict[int, str]:
        """The status of each of these proposals that exists (``memory.proposer.Proposer``)."""
        rows = await (conn or self._pool).fetch(
            "SELECT id, status FROM proposals WHERE id = ANY($1::bigint[])", sorted({int(i) for i in proposal_ids})
        )
        return {int(r["id"]): r["status"] for r in rows}

    async def citing(self, kind: str, message_ids: Collection[int], *, conn: asyncpg.Connection) -> builtins.list[int]:
        """The proposals of ``kind`` citing one of these messages in ``proposal_sources``, by id."""
        rows = await conn.fetch(
            """SELECT DISTINCT p.id FROM proposals p JOIN proposal_sources s ON s.proposal_id = p.id
               WHERE p.kind = $1 AND s.message_id = ANY($2::bigint[]) ORDER BY p.id""",
            kind,
            sorted({int(i) for i in message_ids}),
        )
        return [int(r["id"]) for r in rows]

    async def withdraw(
        self, proposal_ids: Collection[int], *, reason: str, conn: asyncpg.Connection, rewrite: Withdrawn | None = None
    ) -> int:
        """Withdraw proposals inside a layer's forgetting transaction (``memory.proposer.Proposer``): each
        pending one expires, decided by ``reason``, and its kind's rejection handler runs (as for one past its
        time); with ``rewrite``, each one's title, payload and rationale are replaced whatever its status.
        The time is the database's: forgetting has no clock of its own. Returns how many expired."""
        ids = sorted({int(i) for i in proposal_ids})
        if not ids:
            return 0
        rows = await conn.fetch("SELECT * FROM proposals WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE", ids)
        pending = [r for r in rows if r["status"] == PENDING]
        if pending:
            await conn.execute(
                """UPDATE proposals SET status = 'expired', decided_at = clock_timestamp(), decided_by = $2
                   WHERE id = ANY($1::bigint[])""",
                [r["id"] for r in pending],
                reason,
            )
            for row in pending:  # with the row as it was: a handler reads the payload it offered
                if (on_reject := self._on_reject.get(row["kind"])) is not None:
                    await on_reject(conn, row, reason)
        if rewrite is not None and rows:
            await conn.execute(
                "UPDATE proposals SET title = $2, payload = $3::jsonb, rationale = $4 WHERE id = ANY($1::bigint[])",
                [r["id"] for r in rows],
                rewrite.title,
                dict(rewrite.payload),
                rewrite.rationale,
            )
        for row in pending:
            log.info("proposal %s withdrawn: %s", row["id"], reason)
        return len(pending)

    # --- forgetting (memory.proposer.ProposalRecords, for memory.provenance.Provenance) --------------------

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> dict[str, int]:
        """Inside the forgetting transaction, before the messages go: how many proposals cite them (their
        deletion's trigger redacts those words, sql/019) and how many of those are worded by them alone (no
        message that stays holds the wording, sql/031)."""
        ids = list(message_ids)
        cited = await conn.fetchval(
            "SELECT count(DISTINCT proposal_id) FROM proposal_sources WHERE message_id = ANY($1::bigint[])", ids
        )
        # The rationale's counts ("20 messages from 4 people") are of the day it was made; how many of those
        # messages were forgotten since is kept beside them, for ``Proposal.render`` to say (P8).
        await conn.execute(
            """UPDATE proposals p
               SET evidence = p.evidence || jsonb_build_object(
                   'forgotten_messages', COALESCE((p.evidence ->> 'forgotten_messages')::int, 0) + f.n)
               FROM (SELECT proposal_id, count(DISTINCT message_id) AS n FROM proposal_sources
                     WHERE message_id = ANY($1::bigint[]) GROUP BY proposal_id) f
               WHERE p.id = f.proposal_id""",
            ids,
        )
        worded = await conn.fetchval(  # worded by them, and by no message that stays (sql/031)
            """SELECT count(DISTINCT s.proposal_id)
               FROM proposal_sources s JOIN proposals p ON p.id = s.proposal_id
               WHERE s.message_id = ANY($1::bigint[]) AND s.wording
                 AND NOT COALESCE(p.evidence ->> 'wording_redacted', '') = 'true'
                 AND NOT proposal_wording_kept(p.id, $1::bigint[])""",
            ids,
        )
        return {"proposals_redacted": int(cited), "proposal_names_redacted": int(worded)}

    async def forget_voter(self, conn: asyncpg.Connection, scope: str, voter_id: str) -> int:
        """Votes are the record of a decision: keep the vote, drop who cast it. The decisions their votes made
        named them too (a proposal's ``decided_by``, an approved archetype's ``approved_by``): those read
        "(forgotten)" where their name was. Only ``scope``'s proposals and the global ones; returns how many
        votes."""
        cast = await conn.fetch(
            """SELECT DISTINCT v.proposal_id, v.voter_name FROM proposal_votes v
               JOIN proposals p ON p.id = v.proposal_id
               WHERE v.voter_id = $2 AND (p.scope = $1 OR p.scope IS NULL)""",
            scope,
            voter_id,
        )
        for row in cast:
            for table, column, key in _DECISION_NAMES:
                await conn.execute(
                    f"""UPDATE {table} SET {column} = array_to_string(
                            array_replace(string_to_array({column}, ', '), $2, '{FORGOTTEN_NAME}'), ', ')
                        WHERE {key} AND {column} IS NOT NULL""",
                    row["proposal_id"],
                    row["voter_name"],
                )
        status = await conn.execute(
            f"""UPDATE proposal_votes v SET voter_id = 'forgotten:' || md5(v.voter_id || v.proposal_id::text),
                                           voter_name = '{FORGOTTEN_NAME}'
               FROM proposals p WHERE p.id = v.proposal_id AND v.voter_id = $2
                 AND (p.scope = $1 OR p.scope IS NULL)""",
            scope,
            voter_id,
        )
        return int(status.split()[-1])

    # --- the posting queue (dream.outbox.Outbox posts from it) ---------------------------------------------

    async def queued(
        self, limit: int = 50, *, scope: str | None = None, scopes: Collection[str | None] | None = None
    ) -> builtins.list[int]:
        """Ids of the proposals waiting to be posted or re-posted, oldest first (only ``scope``'s, if given;
        only those of ``scopes``, if given, where None stands for the global ones)."""
        named = None if scopes is None else sorted(s for s in scopes if s is not None)
        rows = await self._pool.fetch(
            """SELECT id FROM proposals WHERE post_pending AND ($2::text IS NULL OR scope = $2)
                 AND ($3::text[] IS NULL OR scope = ANY($3::text[]) OR ($4 AND scope IS NULL))
               ORDER BY id LIMIT $1""",
            limit,
            scope,
            named,
            scopes is not None and None in scopes,
        )
        return [r["id"] for r in rows]

    async def queued_scopes(self) -> builtins.list[str | None]:
        """The scopes with a proposal waiting to be posted (None: global proposals)."""
        rows = await self._pool.fetch("SELECT DISTINCT scope FROM proposals WHERE post_pending")
        return [r["scope"] for r in rows]

    async def requeue(self, scope: str) -> int:
        """Queue ``scope``'s pending proposals that were posted to be posted again; returns how many."""
        status = await self._pool.execute(
            """UPDATE proposals SET post_pending = true
               WHERE scope = $1 AND status = 'pending' AND posted_ref IS NOT NULL AND NOT post_pending""",
            scope,
        )
        return int(status.split()[-1])

    async def mark_posted(
        self, proposal_id: int, ref: str | None, at: datetime, *, as_posted: Proposal | None = None
    ) -> bool:
        """Record a post: its reference (None keeps the old one), when, and that nothing is left to post.

        With ``as_posted``, ``post_pending`` is cleared only if the proposal
        still reads as it was posted: a redaction that landed during the post
        is posted at the next flush. True when nothing is left to post.
        """
        if as_posted is None:
            status = await self._pool.execute(
                """UPDATE proposals SET posted_ref = COALESCE($2, posted_ref), posted_at = $3, post_pending = false
                   WHERE id = $1""",
                proposal_id,
                ref,
                at,
            )
            return status.split()[-1] != "0"
        cleared = await self._pool.fetchval(
            """UPDATE proposals SET posted_ref = COALESCE($2, posted_ref), posted_at = $3,
                   post_pending = post_pending AND NOT (payload = $4::jsonb AND evidence = $5::jsonb AND status = $6)
               WHERE id = $1 RETURNING NOT post_pending""",
            proposal_id,
            ref,
            at,
            as_posted.payload,
            as_posted.evidence,
            as_posted.status,
        )
        return bool(cleared)

    async def _expire_rows(self, conn: asyncpg.Connection, where: str, now: datetime, arg: object) -> int:
        rows = await conn.fetch(
            f"""UPDATE proposals SET status = 'expired', decided_at = $1
                WHERE status = 'pending' AND expires_at <= $1 AND {where} RETURNING *""",
            now,
            arg,
        )
        for row in rows:
            if (on_reject := self._on_reject.get(row["kind"])) is not None:
                await on_reject(conn, row, "(expired)")
        return len(rows)

    async def _get(self, conn: asyncpg.Connection, proposal_id: int) -> Proposal:
        row = await conn.fetchrow("SELECT * FROM proposals WHERE id = $1", proposal_id)
        votes = await conn.fetch(
            "SELECT voter_name, vote FROM proposal_votes WHERE proposal_id = $1 ORDER BY voted_at", proposal_id
        )
        return _proposal(row, votes)


def _redacted(
    payload: dict[str, Any], evidence: dict[str, Any], gone: Mapping[int, str | None]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Payload and evidence without the words and entries of messages that no longer exist
    (what the proposal_source_removed trigger does for a message forgotten later)."""
    words = {e for e in gone.values() if e is not None}
    payload = dict(payload)
    if isinstance(payload.get("examples"), list):
        payload["examples"] = [e for e in payload["examples"] if e not in words]
    evidence = dict(evidence)
    if isinstance(evidence.get("messages"), list):
        evidence["messages"] = [
            m for m in evidence["messages"] if not (isinstance(m, dict) and m.get("message_id") in gone)
        ]
    return payload, evidence
