"""The archetype proposal kinds: what approving ``new_archetype`` and ``edit_archetype`` does.

Both run inside the transaction that records the deciding vote. A proposal
applies to its own scope: a guild's new archetype is that guild's own, and a
guild's edit of a global archetype creates the guild's own copy (which
shadows the global one there) instead of changing it for everyone. Examples
quoted from messages are recorded in ``archetype_example_sources``, so
forgetting such a message removes its example (and the centroid is
recomputed from what is left).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

import asyncpg

from dream.governance import EDIT_ARCHETYPE, NEW_ARCHETYPE, GovernanceError

if TYPE_CHECKING:
    from dream.governance import Governance


def register_archetype_kinds(governance: Governance) -> None:
    """Register ``new_archetype`` and ``edit_archetype`` with ``governance``."""
    governance.register_kind(NEW_ARCHETYPE, apply_new_archetype)
    governance.register_kind(EDIT_ARCHETYPE, apply_edit_archetype)


async def apply_new_archetype(conn: asyncpg.Connection, row: asyncpg.Record, approvers: str) -> UUID:
    """Create the proposed archetype in the proposal's scope (NULL: global)."""
    p, scope = row["payload"], row["scope"]
    examples = _examples(row)
    taken = await conn.fetchval(
        "SELECT 1 FROM context_archetypes WHERE archetype_name = $1 AND scope IS NOT DISTINCT FROM $2::text",
        p["name"],
        scope,
    )
    if taken:
        raise GovernanceError(f"proposal #{row['id']}: an archetype named {p['name']!r} already exists there")
    archetype_id = await conn.fetchval(
        """INSERT INTO context_archetypes (archetype_name, description, example_messages, context_turns,
               context_vectors, similarity_threshold, triple_depth, created_by, approved_by, scope)
           VALUES ($1, $2, $3, $4, $5, $6, $7, 'ai_dream_cycle', $8, $9) RETURNING id""",
        p["name"],
        p.get("description"),
        examples,
        p["context_turns"],
        p["context_vectors"],
        p["similarity_threshold"],
        p["triple_depth"],
        approvers,
        scope,
    )
    await _record_example_sources(conn, row["id"], archetype_id, examples)
    return archetype_id


async def apply_edit_archetype(conn: asyncpg.Connection, row: asyncpg.Record, approvers: str) -> UUID:
    """New examples for the archetype as the proposal's scope sees it.

    A global proposal edits the global archetype. A scope's proposal edits the
    scope's own archetype, or, when the name is a global one, creates the
    scope's own copy with the new examples: the global row is never changed
    from one guild's data.
    """
    p, scope = row["payload"], row["scope"]
    examples = _examples(row)
    own = await conn.fetchrow(
        "SELECT id FROM context_archetypes WHERE archetype_name = $1 AND scope IS NOT DISTINCT FROM $2::text",
        p["name"],
        scope,
    )
    if own is not None:
        archetype_id = await conn.fetchval(
            """UPDATE context_archetypes SET example_messages = $2, approved_by = $3, updated_at = now()
               WHERE id = $1 RETURNING id""",
            own["id"],
            examples,
            approvers,
        )
    else:
        if scope is None:
            raise GovernanceError(f"proposal #{row['id']}: there is no archetype named {p['name']!r} any more")
        archetype_id = await conn.fetchval(
            """INSERT INTO context_archetypes (archetype_name, description, example_messages, context_turns,
                   context_vectors, similarity_threshold, triple_depth, created_by, approved_by, scope)
               SELECT archetype_name, COALESCE($2, description), $3, context_turns, context_vectors,
                      similarity_threshold, triple_depth, 'ai_dream_cycle', $4, $5
               FROM context_archetypes WHERE archetype_name = $1 AND scope IS NULL
               RETURNING id""",
            p["name"],
            p.get("description"),
            examples,
            approvers,
            scope,
        )
        if archetype_id is None:
            raise GovernanceError(f"proposal #{row['id']}: there is no archetype named {p['name']!r} any more")
    await _record_example_sources(conn, row["id"], archetype_id, examples)
    return archetype_id


def _examples(row: asyncpg.Record) -> list[str]:
    examples: Any = row["payload"].get("examples")
    cleaned = [e.strip() for e in examples or [] if isinstance(e, str) and e.strip()]
    if not cleaned:  # every quoted message was forgotten since it was proposed
        raise GovernanceError(f"proposal #{row['id']} has no example messages left to apply")
    return cleaned


async def _record_example_sources(
    conn: asyncpg.Connection, proposal_id: int, archetype_id: UUID, examples: list[str]
) -> None:
    """The approved examples that were quoted from messages, with those messages."""
    await conn.execute(
        """INSERT INTO archetype_example_sources (archetype_id, message_id, example)
           SELECT $1, message_id, example FROM proposal_sources
           WHERE proposal_id = $2 AND example = ANY($3::text[])
           ON CONFLICT (archetype_id, message_id) DO UPDATE SET example = excluded.example""",
        archetype_id,
        proposal_id,
        examples,
    )
