"""The OpenAI-compatible engine against a real server process: llama-cpp-python's server on the bundled GGUF."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import simcord

from bot.app import App
from bot.brain import IncomingTurn
from bot.config import Settings
from bot.discord.chat import UNAVAILABLE
from bot.discord.client import SingleShardHippoBot
from bot.llm import LLMUnavailable
from bot.llm_llamacpp import ensure_bundled_gguf
from bot.llm_openai import OpenAICompatibleLLM
from memory.embed import MiniLMEmbedder
from tests.conftest import make_settings
from tests.simcord_support import SimBase

pytestmark = pytest.mark.model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a free port; its base URL."""
    model = ensure_bundled_gguf(Settings(_env_file=None).model_cache_dir)
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llm-server") / "server.log"  # a file: a full pipe would stall it
    log_file = log_path.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot.llama_server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            "2",
            "--model_alias",
            "gemma",
        ],
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start: {log_path.read_text()[-2000:]}") from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log_file.close()


def dead_url() -> str:
    return f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there


async def test_a_completion_streams_stops_and_reports_surprise(server: str) -> None:
    llm = OpenAICompatibleLLM(server, model="gemma", api="completions", temperature=0.0, max_new_tokens=24)
    try:
        prompt = "ana: what is the capital of France?\nhippobot: The capital of France is"
        generation = llm.generate(prompt, stop=["\n"])
        deltas = [d async for d in generation]
        assert generation.text and "".join(deltas).strip() == generation.text
        assert "\n" not in generation.text
        stats = generation.stats
        assert 1 <= stats.tokens <= 24 and stats.stopped_by in ("stop", "length")
        assert stats.mean_surprise is not None and stats.mean_surprise >= 0, "from the server's logprobs"
        assert stats.first_token_s is not None
    finally:
        await llm.aclose()


def test_greedy_asks_the_server_for_temperature_zero() -> None:
    llm = OpenAICompatibleLLM("http://127.0.0.1:9/v1", api="completions", temperature=0.8)
    assert llm._body("hi", (), None, None)[1]["temperature"] == 0.8
    assert llm._body("hi", (), None, None, greedy=True)[1]["temperature"] == 0.0


async def test_boosts_reach_the_server_as_logit_bias(server: str) -> None:
    llm = OpenAICompatibleLLM(server, model="gemma", api="completions", temperature=0.0)
    try:
        ids = await llm.aword_token_ids(["banana", "ana"], exclude=[" ana", " Ana"])
        assert set(ids) == {"banana"} and 2 not in ids["banana"], "no BOS, no stop-label tokens"
        assert llm.word_token_ids(["banana"]) == {"banana": ids["banana"]}, "remembered for the sync path"
        prompt = "The capital of France is"
        plain = await llm.generate(prompt, max_new_tokens=1).complete()
        boosted = llm.generate(prompt, max_new_tokens=1, boosts={i: 100.0 for i in ids["banana"]})
        assert plain.lower() != "banana" and (await boosted.complete()).lower() == "banana"
    finally:
        await llm.aclose()


async def test_the_chat_endpoint_takes_the_prompt_builders_messages(server: str) -> None:
    llm = OpenAICompatibleLLM(server, model="gemma", api="chat", temperature=0.0, max_new_tokens=8)
    try:
        assert llm.uses_chat_template
        prompt = llm.render_chat(
            [{"role": "system", "content": "You are hippobot."}, {"role": "user", "content": "Say hello."}]
        )
        generation = llm.generate(prompt)
        await generation.complete()
        assert generation.stats.stopped_by in ("stop", "length", "eos") and generation.stats.tokens <= 8
    finally:
        await llm.aclose()


async def test_a_down_server_is_retried_then_reported(caplog: pytest.LogCaptureFixture) -> None:
    llm = OpenAICompatibleLLM(dead_url(), retries=2, backoff=0.01, timeout=5)
    try:
        with caplog.at_level(logging.WARNING, logger="bot.llm_openai"):
            with pytest.raises(LLMUnavailable, match="not answering"):
                await llm.generate("hello").complete()
        assert sum("attempt" in r.getMessage() for r in caplog.records) == 3
        assert await llm.aword_token_ids(["banana"]) == {}, "no tokenizer: no boosts, no error"
    finally:
        await llm.aclose()


async def test_the_brain_answers_through_the_server(
    db_url: str, tmp_path: Path, embedder: MiniLMEmbedder, server: str
) -> None:
    settings = make_settings(
        db_url,
        tmp_path,
        llm_url=server,
        llm_model="gemma",
        prompt_style="transcript",
        max_new_tokens=16,
        temperature=0.0,
    )
    app = await App.open(settings, with_llm=True, embedder=embedder)
    try:
        assert isinstance(app.llm, OpenAICompatibleLLM) and app.llm.api == "completions"
        reply = await app.brain.respond(
            IncomingTurn(
                scope="g1",
                source="console",
                channel_id="c1",
                author_id="u1",
                author_name="ana",
                text="Hi! I adopted a cat called Miso last spring.",
            )
        )
        await reply.complete()
        assert reply.text.strip() and "\nana:" not in reply.text
        assert reply.mean_surprise is not None
        await app.brain.drain()
        assert await app.db.pool.fetchval("SELECT count(*) FROM episodes WHERE surprise > 0") == 1
    finally:
        await app.close()


async def test_with_the_server_down_the_message_is_kept_and_absorbed(
    db_url: str, tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    settings = make_settings(db_url, tmp_path, llm_url=dead_url(), llm_retries=1, llm_timeout=5)
    app = await App.open(settings, with_llm=True, embedder=embedder)
    try:
        reply = await app.brain.respond(
            IncomingTurn(
                scope="g1",
                source="console",
                channel_id="c1",
                author_id="u1",
                author_name="ana",
                text="My sister Lena moved to Porto in May.",
            )
        )
        with pytest.raises(LLMUnavailable):
            await reply.complete()
        await app.brain.drain()
        pool = app.db.pool
        assert await pool.fetchval("SELECT count(*) FROM messages WHERE content LIKE 'My sister Lena%'") == 1
        assert await pool.fetchval("SELECT count(*) FROM messages WHERE is_bot") == 0
        assert await pool.fetchval("SELECT count(*) FROM messages WHERE absorbed_at IS NULL") == 0, "absorbed"
    finally:
        await app.close()


@pytest.fixture
def llm() -> OpenAICompatibleLLM:  # the app fixture's engine, for the Discord test below
    return OpenAICompatibleLLM(dead_url(), retries=0, timeout=5)


@pytest.mark.simcord(settle_timeout=60)
async def test_discord_says_the_model_is_down_and_keeps_the_message(
    simcord_env: simcord.Env, simcord_bot: SingleShardHippoBot, app: App
) -> None:
    sim = SimBase(simcord_env, simcord_bot, app)
    guild = sim.env.create_guild("Hippo Hall")
    general = guild.create_text_channel("general")
    ana = guild.add_member(sim.env.create_user("ana"))
    await ana.send(general, f"{sim.me.mention} remember that the demo is on Friday")
    await sim.settle()
    assert [m.content for m in sim.bot_messages(general)] == [UNAVAILABLE]
    assert (
        await sim.pool.fetchval("SELECT count(*) FROM messages WHERE content = 'remember that the demo is on Friday'")
        == 1
    )
