"""`hippobot chat` survives an invalid UTF-8 line even where stdin decodes strictly.

Under a C or C.UTF-8 locale Python reads stdin with ``surrogateescape``, so
tests/test_hostile.py's invalid-UTF-8 case passes there with or without the
fix (``sys.stdin.reconfigure(errors="replace")`` in bot/cli.py). A terminal
with, say, LANG=en_US.UTF-8 decodes strictly; PYTHONIOENCODING=utf-8:strict
gives the same here, so this test fails without the fix on any machine.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.test_cli import env  # noqa: F401  (the fixture)


@pytest.mark.model
@pytest.mark.slow
def test_hippobot_chat_survives_invalid_utf8_under_a_strict_locale(env: dict[str, str]) -> None:  # noqa: F811
    stdin = b"\xff\xfe my cat is called Miso\nstill here?\n"
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "chat"],
        input=stdin,
        env={**env, "PYTHONIOENCODING": "utf-8:strict"},
        capture_output=True,
        timeout=300,
    )
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0 and "Traceback" not in err and "cannot read input" not in err, err
    assert out.count("hippobot: ") == 2, out  # both lines answered, the undecodable one included
