"""Benchmarks cannot rot: every benchmark script runs its `--smoke` (seconds) against the
code as it is, and writes nothing into the tree (results, plots and READMEs stay as
measured)."""

from __future__ import annotations

import subprocess
import sys
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


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(p.relative_to(ROOT)) for p in SCRIPTS])
def test_smoke_runs_and_writes_nothing(script: Path) -> None:
    before = _stamps(script.parent)
    out = subprocess.run(
        [sys.executable, str(script), "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    after = _stamps(script.parent)
    assert {p for p in after if after[p] != before.get(p)} == set()
