"""Migrations: ordered, recorded, idempotent, and safe from two processes at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import asyncpg
import pytest

from memory.db import load_migrations, migrate


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
        assert await conn.fetchval("SELECT count(*) FROM context_archetypes") == 6
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
