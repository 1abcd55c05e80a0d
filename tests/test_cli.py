"""The command line in real subprocesses: chat with piped input, recall in a new process, errors."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import Settings


def run_cli(
    args: list[str], env: dict[str, str], stdin: str = "", timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args], input=stdin, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOBOT_")}
    e.update(
        HIPPOBOT_DATABASE_URL=db_url,
        HIPPOBOT_DATA_DIR=str(tmp_path / "data"),
        HIPPOBOT_MODELS_DIR=str(Settings(_env_file=None).model_cache_dir),
        HIPPOBOT_MAX_NEW_TOKENS="12",
        HIPPOBOT_SEED="3",
    )
    return e


@pytest.mark.model
@pytest.mark.slow
def test_chat_answers_piped_input_and_a_new_process_recalls_it(env: dict[str, str]) -> None:
    chat = run_cli(
        ["chat", "--user", "ana"], env, stdin="I adopted a grey cat called Miso last spring\nWhat a sunny day\n"
    )
    assert chat.returncode == 0, chat.stderr
    assert "llama_" not in chat.stderr, "llama.cpp's notes go to the debug log, not the person's terminal"
    replies = [line for line in chat.stdout.splitlines() if line.startswith("hippobot: ")]
    assert len(replies) == 2, chat.stdout
    recall = run_cli(["recall", "what is my cat called?", "--json", "--user", "ana"], env)
    assert recall.returncode == 0, recall.stderr
    result = json.loads(recall.stdout)
    episodes = [i for i in result["items"] if i["kind"] == "episode"]
    assert episodes and "Miso" in episodes[0]["text"]
    ids, sources = episodes[0]["message_ids"], [s["id"] for s in episodes[0]["sources"]]
    # the message and the reply it came with (provenance: forgetting either forgets the episode); the next turn
    # (the same person's, and the hit asks nothing) is not shown, so it is no source; the bot's reply never is
    assert len(ids) == 2 and sources == ids[:1]
    facts = [i["text"] for i in result["items"] if i["kind"] == "fact"]
    assert any("named Miso" in f for f in facts) and any("ana adopts cat" in f for f in facts), facts
    other = run_cli(["recall", "what is my cat called?", "--scope", "someone-else", "--json"], env)
    assert json.loads(other.stdout)["items"] == []


@pytest.mark.slow
def test_import_then_batch_recall_in_one_process(env: dict[str, str], tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "id": "1",
                    "channel": "c",
                    "author": "ana",
                    "timestamp": "2026-10-01T10:00:00Z",
                    "text": "My sister Lena is an architect in Lisbon",
                },
                {
                    "id": "2",
                    "channel": "c",
                    "author": "ben",
                    "timestamp": "2026-10-01T10:01:00Z",
                    "text": "I am learning to play the cello",
                },
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    imported = run_cli(["import", str(history), "--scope", "g1"], env)
    assert imported.returncode == 0, imported.stderr
    assert "imported 2" in imported.stdout
    again = run_cli(["import", str(history), "--scope", "g1"], env)
    assert "imported 0, already present 2" in again.stdout
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps({"text": "where does my sister work?", "scope": "g1"})
        + "\n"
        + json.dumps({"text": "what instrument am I learning?", "scope": "g1"})
        + "\n"
        + json.dumps({"text": "what instrument am I learning?", "scope": "g2"})
        + "\n",
        encoding="utf-8",
    )
    batch = run_cli(["recall", "--queries", str(queries), "--k", "1"], env)
    assert batch.returncode == 0, batch.stderr
    results = [json.loads(line) for line in batch.stdout.splitlines()]
    assert "Lisbon" in results[0]["items"][0]["text"] and "cello" in results[1]["items"][0]["text"]
    assert results[2]["items"] == []
    # forgetting a person of an imported history, from the command line
    forgot = run_cli(["forget", "--scope", "g1", "--person", "ana", "--yes"], env)
    assert forgot.returncode == 0 and "forgot person ana" in forgot.stdout, forgot.stderr
    after = run_cli(["recall", "where does my sister work?", "--scope", "g1", "--json"], env)
    assert after.returncode == 0 and "Lisbon" not in after.stdout and "cello" in after.stdout


def test_a_malformed_import_exits_nonzero_with_line_numbers(env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\nnot json\n', encoding="utf-8")
    result = run_cli(["import", str(bad), "--scope", "g1"], env)
    assert result.returncode == 1
    assert "line 1: missing field(s)" in result.stderr and "line 2: invalid JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(env: dict[str, str]) -> None:
    """`hippobot places --stats | head -0`: the pipe closes before anything is written."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "places", "--stats", "--scope", "g1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None  # stdout=PIPE
    proc.stdout.close()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err and "Broken pipe" not in err


def test_run_without_a_token_says_so(env: dict[str, str]) -> None:
    result = run_cli(["run"], env)
    assert result.returncode == 2
    assert "HIPPOBOT_DISCORD_TOKEN" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_dream_prints_a_report_with_a_proposal(env: dict[str, str], tmp_path: Path) -> None:
    from tests.dream_data import month_of_history

    history = month_of_history(tmp_path / "month.jsonl")
    assert run_cli(["import", str(history), "--scope", "g1"], env).returncode == 0
    env = {**env, "HIPPOBOT_DREAM_LOOKBACK_DAYS": "365"}  # the synthetic month ends yesterday
    result = run_cli(["dream"], env)
    assert result.returncode == 0, result.stderr
    assert re.search(r"dream run #\d+: ok", result.stdout)
    assert re.search(r"\*\*Proposal #\d+: new archetype '\w*(plan|project)\w*'", result.stdout), result.stdout
    assert "Dream digest" in result.stdout


@pytest.mark.slow
def test_a_simulated_clock_lives_a_year_of_forgetting_in_a_few_commands(env: dict[str, str], tmp_path: Path) -> None:
    """--now on import, recall and dream (GhostKG's set_time): a hedged fact fades and the dream prunes it a
    year later; a plain one stays."""
    history = tmp_path / "h.jsonl"
    history.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "id": "1",
                    "channel": "c",
                    "author": "ana",
                    "timestamp": "2026-01-05T10:00:00Z",
                    "text": "I think maybe I like jazz",
                },
                {
                    "id": "2",
                    "channel": "c",
                    "author": "ben",
                    "timestamp": "2026-01-05T10:01:00Z",
                    "text": "I love hiking in the mountains",
                },
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    assert run_cli(["import", str(history), "--now", "2026-01-05T12:00:00Z"], env).returncode == 0

    def facts(now: str) -> list[str]:
        out = run_cli(["recall", "jazz or hiking", "--json", "--user", "ana", "--now", now], env)
        assert out.returncode == 0, out.stderr
        return [i["text"] for i in json.loads(out.stdout)["items"] if i["kind"] == "fact"]

    def pruned(now: str) -> int:
        out = run_cli(["dream", "--now", now], env)
        assert out.returncode == 0, out.stderr
        pruned = re.search(r"pruned_edges=(\d+)", out.stdout)
        assert pruned is not None, out.stdout
        return int(pruned.group(1))

    assert any("jazz" in f for f in facts("2026-01-06T09:00:00Z"))
    assert pruned("2026-01-06T09:00:00Z") == 0, "a day later nothing has faded"
    assert pruned("2027-01-06T09:00:00+00:00") >= 1, "a year later the hedged claim has"
    later = facts("2027-01-06T10:00:00Z")
    assert not any("jazz" in f for f in later) and any("hiking" in f for f in later), later
    bad = run_cli(["dream", "--now", "next tuesday"], env)
    assert bad.returncode == 2 and "ISO 8601" in bad.stderr
