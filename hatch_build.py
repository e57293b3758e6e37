"""Wheel build hook: ship one import name, `gangplan`.

The source tree keeps the layout the project documents (`solver/`, `server/`, `clients/`,
`proto/` at the top), but a wheel that installed those as top-level packages would clash
with a user's own `solver` or `server`. So the wheel maps them under the package:
`solver/x.py` becomes `gangplan/solver/x.py` with its absolute imports rewritten
(`from solver.x import y` -> `from gangplan.solver.x import y`), and the `.proto` files go to
`gangplan/proto/gangplan/v1/`. Every import in those folders is `from <package>... import`
(tests/test_wheel.py keeps it so), which is the one form this rewrite has to know.
Editable installs are untouched: they put the checkout itself on `sys.path`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGES = ("solver", "server", "clients")
# `from solver.x import y` / `from solver import y` at any indentation (TYPE_CHECKING blocks)
IMPORT = re.compile(rf"^(\s*)from ({'|'.join(PACKAGES)})([. ])", re.MULTILINE)
# Node and Go clients live beside the Python client but are not Python
SKIPPED_DIRS = {"__pycache__", "node", "go"}


def rewrite_imports(source: str) -> str:
    return IMPORT.sub(r"\1from gangplan.\2\3", source)


def copy_package(src: Path, dst: Path) -> None:
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if not path.is_file() or SKIPPED_DIRS.intersection(rel.parts):
            continue
        if path.suffix not in {".py", ".typed"}:
            continue
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".py":
            target.write_text(rewrite_imports(path.read_text(encoding="utf-8")), encoding="utf-8")
        else:
            shutil.copyfile(path, target)


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        self._staging = Path(tempfile.mkdtemp(prefix="gangplan-wheel-"))
        force_include: dict[str, str] = build_data["force_include"]
        for package in PACKAGES:
            copy_package(root / package, self._staging / package)
            force_include[str(self._staging / package)] = f"gangplan/{package}"
        force_include[str(root / "proto" / "gangplan")] = "gangplan/proto/gangplan"
        # the top-level `gangplan` package imports solver/server/clients too
        for module in sorted((root / "gangplan").glob("*.py")):
            staged = self._staging / "gangplan" / module.name
            staged.parent.mkdir(parents=True, exist_ok=True)
            staged.write_text(rewrite_imports(module.read_text(encoding="utf-8")), "utf-8")
            force_include[str(staged)] = f"gangplan/{module.name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        staging = getattr(self, "_staging", None)
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
