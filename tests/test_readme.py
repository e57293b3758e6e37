"""The README's commands run as written: every ```bash block the README marks with
`<!-- runnable -->` on the line above is run from the checkout, with this venv's `bin/` first
on PATH (as after the README's install command), and must exit 0.

The two setup commands at the top are not marked: `.ci/run` runs exactly those on a fresh
machine (the install, then the test command this suite is part of)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RUNNABLE = re.compile(r"^<!-- runnable -->\n```bash\n(.*?)^```$", re.MULTILINE | re.DOTALL)
BLOCKS = RUNNABLE.findall(README)


def test_the_readme_marks_its_runnable_blocks() -> None:
    assert len(BLOCKS) >= 4
    # a marker must sit right above a bash block, or the block would silently go untested
    assert README.count("<!-- runnable -->") == len(BLOCKS)


def test_the_readme_test_command_is_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ".venv/bin/python -m pytest -q" in README
    assert ci.rstrip().endswith(".venv/bin/python -m pytest -q")


@pytest.mark.parametrize("block", BLOCKS, ids=[b.splitlines()[0][:60] for b in BLOCKS])
def test_a_runnable_block_runs_as_written(block: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "TMPDIR": str(tmp_path),
    }
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, (
        f"{block}\nstdout:\n{run.stdout[-2000:]}\nstderr:\n{run.stderr[-2000:]}"
    )
