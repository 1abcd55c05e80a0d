"""Keys that name a person or a message without holding their ids: SHA-256 digests.

The ``forgotten`` table (sql/017) keeps tombstones so an import never brings back what was forgotten; the
``memory_optouts`` table (sql/024) keeps who asked not to be remembered in a scope. Both hold only these
digests, so neither table names anybody.
"""

from __future__ import annotations

import hashlib

_SEP = "\x1f"  # ids never hold control characters (memory.fields.id_problem)


def forgotten_digest(kind: str, scope: str, *key: str) -> str:
    """The tombstone of a forgotten ``kind`` in ``scope`` ("message": its channel id and external id;
    "author": their id): a SHA-256, so the table keeps no id of what was forgotten."""
    return hashlib.sha256(_SEP.join((kind, scope, *key)).encode("utf-8")).hexdigest()


def optout_digest(scope: str, author_id: str) -> str:
    """The opt-out list's key (sql/024 ``memory_optouts``) for a person who asked not to be remembered in
    ``scope``: a SHA-256, never the id itself."""
    return forgotten_digest("optout", scope, author_id)
