"""bench.proposal_eval's server histories: deterministic, and importable the way `hippobot import` imports them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.app import App
from bench.proposal_histories import (
    CYCLING,
    HELD_OUT,
    HISTORIES,
    SMALL_SLOTS,
    generate,
    needs,
    write_import_file,
)
from memory.importer import parse_import_file


def test_the_same_seed_writes_the_same_import_file_and_another_seed_a_different_one(tmp_path: Path) -> None:
    for history in HISTORIES.values():
        a = write_import_file(history, generate(history, seed=0, scale=0.2), tmp_path / "a.jsonl").read_bytes()
        b = write_import_file(history, generate(history, seed=0, scale=0.2), tmp_path / "b.jsonl").read_bytes()
        c = write_import_file(history, generate(history, seed=1, scale=0.2), tmp_path / "c.jsonl").read_bytes()
        assert a == b, history.name
        assert a != c, history.name


def test_a_history_spans_two_months_in_several_channels_with_its_people_and_needs() -> None:
    for history in HISTORIES.values():
        messages = generate(history)
        span = (messages[-1].at - messages[0].at).days
        assert span >= 60, history.name
        assert 8 <= len({m.author for m in messages}) <= 15, history.name
        assert {m.channel for m in messages} == set(history.channels), history.name
        for need in (k for k in history.kinds if k.label.startswith("need:")):
            said = [m for m in messages if m.label == need.label]
            assert len({m.author for m in said}) >= 6 and len({m.at.date() for m in said}) >= 30, need.label


@pytest.mark.parametrize(
    "name",
    [
        "kitchen",
        "indiedev",
        "photo",
        "homeowners",
        "tabletop",
        "brewing",
        "apiary",
        "joggers",
        "yarn",
        "fishkeeping",
        "voices",
        "mixdown",
    ],
)
def test_a_blind_history_is_the_same_each_time_spans_two_months_and_its_needs_recur_across_people_and_days(
    name: str,
) -> None:
    history = HISTORIES[name]
    messages = generate(history)
    assert name in HELD_OUT
    assert messages == generate(history)
    first, last = messages[0].at, messages[-1].at
    assert (last - first).days >= 60 and (last.year * 12 + last.month) - (first.year * 12 + first.month) >= 2
    assert len({m.author for m in messages}) >= 8
    assert len(needs(history)) == 2
    for need in needs(history):
        said = [m for m in messages if m.label == need]
        assert len({m.author for m in said}) >= 5 and len({m.at.date() for m in said}) >= 10, need


@pytest.mark.parametrize("name", ["voices", "mixdown"])
def test_a_round_8_history_asks_its_two_needs_about_the_same_things(name: str) -> None:
    history = HISTORIES[name]
    messages = generate(history)
    values = {v.lower() for k in history.kinds if k.label.startswith("need:") for vs in k.slots.values() for v in vs}
    named = [
        {v for v in values for m in messages if m.label == need and v in m.text.lower()} for need in needs(history)
    ]
    assert len(named) == 2 and len(named[0] & named[1]) >= 3, named[0] & named[1]


def test_every_frame_of_every_history_fills_all_its_slots() -> None:
    for history in HISTORIES.values():
        for kind in history.kinds:  # frames a seed never draws are checked too
            for frame in kind.frames:
                missing = set(re.findall(r"\{(\w+)\}", frame)) - set(kind.slots) - set(SMALL_SLOTS)
                assert not missing, (history.name, frame, missing)
        messages = generate(history, seed=7)
        assert not [m.text for m in messages if "{" in m.text or "}" in m.text], history.name


def test_no_two_histories_share_a_scope_a_person_or_a_message_id_prefix() -> None:
    histories = list(HISTORIES.values())
    assert len({h.scope for h in histories}) == len(histories)
    people = [p for h in histories for p in h.people]
    assert len(set(people)) == len(people)
    prefixes = [generate(h, scale=0.05)[0].id.rstrip("0123456789") for h in histories]
    assert len(set(prefixes)) == len(prefixes), prefixes


def test_the_import_file_holds_no_generator_label(tmp_path: Path) -> None:
    path = write_import_file(CYCLING, generate(CYCLING, scale=0.2), tmp_path / "c.jsonl")
    text = path.read_text()
    assert "need:" not in text and "label" not in text and "hobby" not in text


@pytest.mark.slow  # about 20 s: the importer's first absorb loads spaCy and the layers
async def test_a_history_imports_with_its_restricted_channel_restricted(app: App, tmp_path: Path) -> None:
    messages = generate(CYCLING, scale=0.15)
    path = write_import_file(CYCLING, messages, tmp_path / "cycling.jsonl")
    assert len(parse_import_file(path, max_chars=4000)[0]) == len(messages)
    report = await app.importer.run(path, CYCLING.scope, private_channels=[CYCLING.restricted])
    assert report.imported == len(messages)
    rows = await app.db.pool.fetch("SELECT channel_id, visible_in FROM messages WHERE scope = $1", CYCLING.scope)
    assert len(rows) == len(messages)
    assert all((r["visible_in"] is not None) == (r["channel_id"] == CYCLING.restricted) for r in rows)
