"""The wheel installs one import name, `gangplan`, with the protos inside, and works from a
fresh environment where a user's own `solver` package sits beside it."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "ganggroup-gpu.yaml"
SOURCE_PACKAGES = ("solver", "server", "clients", "gangplan")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--no-cache-dir", "-w", str(out), str(ROOT)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    (built,) = out.glob("gangplan-*.whl")
    return built


@pytest.fixture(scope="module")
def fresh_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv holding only the wheel; its dependencies come from this venv's
    site-packages through a .pth line (which, unlike an editable install's hook, adds a
    folder and nothing else: the checkout is not on the path)."""
    env = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-cache-dir", str(wheel)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return env


def run_in(env: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": str(env / "bin")},
    )


def test_the_wheel_holds_one_top_level_name_and_the_protos(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"gangplan", "gangplan-0.1.0.dist-info"}
    assert {n for n in names if n.endswith(".proto")} == {
        "gangplan/proto/gangplan/v1/cluster.proto",
        "gangplan/proto/gangplan/v1/placement_service.proto",
    }
    assert "gangplan/py.typed" in names and "gangplan/solver/py.typed" in names
    assert not [n for n in names if "/node/" in n or "__pycache__" in n]


def test_every_import_of_the_source_packages_is_rewritten(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    stale = re.compile(r"^\s*(from|import) (solver|server|clients)\b", re.MULTILINE)
    leftovers = [
        name
        for name in archive.namelist()
        if name.endswith(".py") and stale.search(archive.read(name).decode())
    ]
    assert leftovers == []


def test_the_source_imports_its_packages_only_in_the_form_the_build_rewrites() -> None:
    # hatch_build.py rewrites `from solver... import`; `import solver.x` would bind the name
    # `solver`, which the wheel does not have
    bare = re.compile(r"^\s*import (solver|server|clients)\b", re.MULTILINE)
    offenders = [
        str(path.relative_to(ROOT))
        for package in SOURCE_PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if bare.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_a_users_own_solver_package_does_not_clash(fresh_env: Path, tmp_path: Path) -> None:
    (tmp_path / "solver").mkdir()
    (tmp_path / "solver" / "__init__.py").write_text("raise SystemExit('the user solver ran')\n")
    program = (
        "import gangplan, gangplan.v1.cluster_pb2, sys\n"
        f"model = gangplan.load({str(EXAMPLE)!r})\n"
        "decision = gangplan.schedule(model, engine='greedy', workers=1)\n"
        "assert sorted(decision.placed) and gangplan.Client.__module__.startswith('gangplan.')\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('server', 'clients')]\n"
        "print(len(decision.placed))\n"
    )
    run = run_in(fresh_env, tmp_path, "python", "-c", program)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "9"


def test_the_source_folders_are_not_importable_from_the_wheel(
    fresh_env: Path, tmp_path: Path
) -> None:
    for package in ("solver", "server", "clients"):
        run = run_in(fresh_env, tmp_path, "python", "-c", f"import {package}")
        assert run.returncode == 1 and "ModuleNotFoundError" in run.stderr, package


def test_the_console_script_runs_from_the_wheel(fresh_env: Path, tmp_path: Path) -> None:
    run = run_in(fresh_env, tmp_path, "gangplan", "schedule", "-f", str(EXAMPLE), "-o", "json")
    assert run.returncode == 0, run.stderr
    assert '"default/train-big"' in run.stdout
