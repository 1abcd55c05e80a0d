"""The installable package carries the whole program: `pip install .` (the Dockerfile's install) must put
every module, migration and data file of bot/, memory/, dream/ and sql/ into the wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("bot", "memory", "dream", "sql")


def _tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *paths], cwd=ROOT, capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if line]


def test_the_wheel_holds_every_module_migration_and_data_file(tmp_path: Path) -> None:
    # Built from a copy of the tracked files: setuptools reuses an in-tree build/ directory, whose stale
    # files would hide a package the configuration leaves out.
    src = tmp_path / "src"
    for name in _tracked(*SHIPPED, "pyproject.toml", "README.md"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(tmp_path / "dist"),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("hippobot-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(n for n in _tracked(*SHIPPED) if not n.endswith(".md") and n not in names)
    assert not missing, f"not in the wheel: {missing[:20]}"
