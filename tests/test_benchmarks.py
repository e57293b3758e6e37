"""Benchmarks cannot rot: every benchmark script runs its `--smoke` (seconds) against the
code as it is, and writes nothing into the tree (results, plots and READMEs stay as
measured). The smokes run two at a time (each is one process, most of it Python's and the
solver's start-up), all of them before the first test reads its result."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(
    p
    for p in (ROOT / "benchmarks").rglob("*.py")
    if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8")
)


def _stamps(folder: Path) -> dict[Path, float]:
    return {
        p: p.stat().st_mtime
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_every_benchmark_folder_has_a_script() -> None:
    folders = {p.parent for p in SCRIPTS}
    assert len(folders) >= 10
    benchmarks = {
        d
        for d in (ROOT / "benchmarks").iterdir()
        if d.is_dir() and d.name not in ("data", "__pycache__")
    }
    assert benchmarks - folders == set()


@dataclass(frozen=True)
class Smokes:
    results: dict[Path, subprocess.CompletedProcess[str]]
    before: dict[Path, dict[Path, float]]  # per folder, its files' mtimes before any smoke
    after: dict[Path, dict[Path, float]]  # and after every smoke


def _smoke(script: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def smokes() -> Smokes:
    folders = sorted({s.parent for s in SCRIPTS})
    before = {folder: _stamps(folder) for folder in folders}
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(SCRIPTS, pool.map(_smoke, SCRIPTS), strict=True))
    return Smokes(results, before, {folder: _stamps(folder) for folder in folders})


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(p.relative_to(ROOT)) for p in SCRIPTS])
def test_smoke_runs_and_writes_nothing(script: Path, smokes: Smokes) -> None:
    out = smokes.results[script]
    assert out.returncode == 0, out.stderr[-3000:]
    before, after = smokes.before[script.parent], smokes.after[script.parent]
    assert {p for p in after if after[p] != before.get(p)} == set()
