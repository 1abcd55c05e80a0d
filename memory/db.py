"""PostgreSQL: the embedded server, the connection pool, and migrations.

PostgreSQL with pgvector is the single source of truth. With no URL the
caller gets an embedded server (``pgserver``) whose data lives in the app's
data directory; ``Database.close()`` stops it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
from pgvector.asyncpg import register_vector

from memory.errors import MemoryStoreError

log = logging.getLogger(__name__)

MIGRATION_LOCK_KEY = 0x68697070  # "hipp": advisory lock held while migrating
_MIGRATION_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


class EmbeddedPostgres:
    """An embedded PostgreSQL 16 + pgvector under ``datadir`` (pgserver)."""

    def __init__(self, datadir: Path) -> None:
        self.datadir = datadir
        self._server: Any = None

    def start(self) -> str:
        import pgserver  # imported lazily: it is only needed without a URL

        self.datadir.mkdir(parents=True, exist_ok=True)
        self._server = pgserver.get_server(self.datadir, cleanup_mode="stop")
        log.info("embedded PostgreSQL running in %s", self.datadir)
        return self._server.get_uri()

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` instead (query string, e.g. a socket host, kept)."""
    return urlunsplit(urlsplit(url)._replace(path="/" + name))


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 8) -> asyncpg.Pool:
    """A pool whose connections speak pgvector and JSON. The extension must exist."""
    return await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size, init=_init_connection)


def load_migrations(directory: Path | None = None) -> list[Migration]:
    """The migrations shipped in the ``sql`` package (or ``directory``), in order."""
    if directory is None:
        files = [(f.name, f.read_text("utf-8")) for f in resources.files("sql").iterdir() if f.is_file()]
    else:
        files = [(p.name, p.read_text("utf-8")) for p in directory.iterdir()]
    migrations = []
    for name, text in files:
        match = _MIGRATION_NAME.match(name)
        if match:
            migrations.append(Migration(int(match.group(1)), name, text))
    migrations.sort(key=lambda m: m.version)
    versions = [m.version for m in migrations]
    if len(set(versions)) != len(versions):
        raise MemoryStoreError(f"two migrations share a version number: {versions}")
    return migrations


async def migrate(dsn: str, migrations: list[Migration] | None = None) -> list[str]:
    """Apply pending migrations; return the names applied (empty when up to date).

    Each migration runs in its own transaction and is recorded in
    ``schema_migrations``; an advisory lock makes concurrent callers wait, so
    two processes never migrate at once and re-running is a no-op.
    """
    migrations = load_migrations() if migrations is None else migrations
    conn = await asyncpg.connect(dsn)
    applied: list[str] = []
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_KEY)
        try:
            await conn.execute(
                """CREATE TABLE IF NOT EXISTS schema_migrations (
                       version    INT PRIMARY KEY,
                       name       TEXT NOT NULL,
                       applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"""
            )
            done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
            for migration in migrations:
                if migration.version in done:
                    continue
                async with conn.transaction():
                    await conn.execute(migration.sql)
                    await conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                        migration.version,
                        migration.name,
                    )
                log.info("applied migration %s", migration.name)
                applied.append(migration.name)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK_KEY)
    finally:
        await conn.close()
    return applied


class Database:
    """The running store: an embedded server when no URL is given, a pool, migrations applied."""

    def __init__(self, pool: asyncpg.Pool, dsn: str, embedded: EmbeddedPostgres | None,
                 applied: list[str] | None = None) -> None:
        self.pool = pool
        self.dsn = dsn
        self._embedded = embedded
        self.applied = applied or []  # migrations this open applied

    @classmethod
    async def open(cls, url: str | None, data_dir: Path, *, run_migrations: bool = True) -> Database:
        embedded = None
        if url is None:
            embedded = EmbeddedPostgres(data_dir / "pgdata")
            url = await asyncio.to_thread(embedded.start)
        try:
            applied = await migrate(url) if run_migrations else []
            pool = await create_pool(url)
        except BaseException:
            if embedded is not None:
                await asyncio.to_thread(embedded.stop)
            raise
        return cls(pool, url, embedded, applied)

    async def close(self) -> None:
        await self.pool.close()
        if self._embedded is not None:
            await asyncio.to_thread(self._embedded.stop)
            self._embedded = None
