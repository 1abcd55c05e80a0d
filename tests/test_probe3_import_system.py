"""Import: Discord's system notifications in an export (a pin, a join) are counted as such, not as "without text"
(found by the new-user probe: a pinned-message line was reported as a message without text)."""

from __future__ import annotations

import json
from pathlib import Path

from bot.app import App
from memory.importer import read_import_file

MESSAGES: list[dict[str, object]] = [
    {
        "id": "1001",
        "type": "Default",
        "timestamp": "2026-09-01T08:00:00+00:00",
        "content": "the flat viewing is on Tuesday at 6",
        "author": {"id": "11", "name": "ana", "isBot": False},
    },
    {
        "id": "1002",
        "type": "ChannelPinnedMessage",
        "timestamp": "2026-09-01T08:01:00+00:00",
        "content": "Pinned a message.",
        "author": {"id": "11", "name": "ana", "isBot": False},
        "reference": {"messageId": "1001"},
    },
    {
        "id": "1003",
        "type": "Default",
        "timestamp": "2026-09-01T08:02:00+00:00",
        "content": "",
        "author": {"id": "12", "name": "ben", "isBot": False},
    },  # an attachment only: no text
]
EXPORT = {"guild": {"id": "500", "name": "Friends"}, "channel": {"id": "600", "name": "general"}, "messages": MESSAGES}


def export_file(tmp_path: Path) -> Path:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(EXPORT), encoding="utf-8")
    return path


def test_a_pinned_message_notification_is_counted_as_a_system_message_not_as_one_without_text(tmp_path: Path) -> None:
    parsed = read_import_file(export_file(tmp_path), max_chars=8000)
    assert ([m.external_id for m in parsed.messages], parsed.without_text, parsed.system) == (["1001"], 1, 1)


async def test_the_import_report_names_the_system_message_apart_from_the_one_without_text(
    app: App, tmp_path: Path
) -> None:
    report = await app.importer.run(export_file(tmp_path), "500")
    assert (report.read, report.imported, report.skipped_empty, report.skipped_system) == (3, 1, 1, 1), (
        "read counts every record of the file (a new user read 'read 2' for a 4-message export)"
    )
    assert "skipped 1 without text, 1 system message(s)" in str(report)
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages WHERE external_id = '1002'") == 0


def test_a_system_kind_the_exporter_writes_as_its_number_is_a_system_message(tmp_path: Path) -> None:
    """DiscordChatExporter writes a kind it has no name for as its number; Discord's system kinds are 1-18."""
    export = {**EXPORT, "messages": [MESSAGES[0], {**MESSAGES[1], "type": "8"}]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    parsed = read_import_file(path, max_chars=8000)
    assert (len(parsed.messages), parsed.without_text, parsed.system) == (1, 0, 1)
