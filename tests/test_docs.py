"""The documentation holds: the README is a front door, every page's runnable blocks run as
written, the reference pages match the source, the site builds with `--strict`, and the
contributing guide's example diff still adds a working policy.

A runnable block is a ```bash block with `<!-- runnable -->` on the line above; it runs from
the checkout with this venv's `bin/` first on PATH (as after the README's install command)
and must exit 0. The README's two setup commands are not marked: `.ci/run` runs exactly
those on a fresh machine (the install, then the test command this suite is part of).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNNABLE = re.compile(r"^<!-- runnable -->\n```bash\n(.*?)^```$", re.MULTILINE | re.DOTALL)
BLOCKS = [
    (page.relative_to(ROOT), block)
    for page in PAGES
    for block in RUNNABLE.findall(page.read_text(encoding="utf-8"))
]
DIFF = re.compile(r"^```diff\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _run(
    command: list[str], cwd: Path = ROOT, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 200
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).is_file(), link


def test_every_marker_sits_above_a_bash_block() -> None:
    """A marker elsewhere would leave its block silently untested."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert text.count("<!-- runnable -->") == len(RUNNABLE.findall(text)), page
    assert len(BLOCKS) >= 10


def test_the_readme_test_command_is_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ".venv/bin/python -m pytest -q" in README
    assert ci.rstrip().endswith(".venv/bin/python -m pytest -q")


# Blocks that start servers or wait on them run one at a time; the others two at a time
# (each is a few `gangplan` processes, most of their time Python's and the solver's start-up).
ALONE = ("serve", "kube-fake", "scheduler", "--server")


def _run_block(block: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "TMPDIR": str(tmp),
    }
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def block_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    def one(i: int) -> tuple[int, subprocess.CompletedProcess[str]]:
        return i, _run_block(BLOCKS[i][1], tmp_path_factory.mktemp(f"block{i}"))

    alone = [i for i, (_, b) in enumerate(BLOCKS) if any(word in b for word in ALONE)]
    shared = [i for i in range(len(BLOCKS)) if i not in alone]
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(pool.map(one, shared))
    runs.update(one(i) for i in alone)
    return runs


@pytest.mark.parametrize(
    "index", range(len(BLOCKS)), ids=[f"{p}: {b.splitlines()[0][:50]}" for p, b in BLOCKS]
)
def test_a_runnable_block_runs_as_written(index: int, block_runs: dict[int, Any]) -> None:
    page, block = BLOCKS[index]
    run = block_runs[index]
    assert run.returncode == 0, (
        f"{page}:\n{block}\nstdout:\n{run.stdout[-2000:]}\nstderr:\n{run.stderr[-2000:]}"
    )


def test_the_reference_pages_match_the_source() -> None:
    run = _run([sys.executable, "scripts/gen_docs.py", "--check"])
    assert run.returncode == 0, run.stderr[-2000:]


def test_the_site_builds_with_no_warning(tmp_path: Path) -> None:
    run = _run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")])
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "grpc" / "index.html").is_file()


def test_the_contributing_example_adds_a_working_policy(tmp_path: Path) -> None:
    """The diff in docs/contributing.md, applied to a checkout of this commit, passes its
    own test and the layering rules there."""
    diffs = DIFF.findall((ROOT / "docs" / "contributing.md").read_text(encoding="utf-8"))
    assert len(diffs) == 1
    checkout = tmp_path / "checkout"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(checkout), "HEAD"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    try:
        # the working tree's own changes first (none on CI), then the example
        changes = subprocess.run(
            ["git", "diff", "HEAD"], cwd=ROOT, check=True, capture_output=True
        ).stdout
        if changes:
            subprocess.run(["git", "apply"], cwd=checkout, input=changes, check=True)
        subprocess.run(["git", "apply"], cwd=checkout, input=diffs[0].encode(), check=True)
        run = _run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests/features/drain",
                "tests/test_layering.py",
            ],
            cwd=checkout,
        )
        assert run.returncode == 0, run.stdout[-3000:]
        assert "passed" in run.stdout
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(checkout)], cwd=ROOT, check=False
        )
