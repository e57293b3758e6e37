"""What-if sweeps: many planning scenarios on a `concurrent.futures` executor.

A sweep file (YAML; paths are relative to it):

    workload: [workload.yaml]       # manifests (or `trace: pods.csv`, `traceMapping: ...`)
    cluster: []                     # current cluster: manifests or an openb node CSV
    catalog: catalog.yaml
    output: sweep.jsonl             # results, one JSON object per scenario: a name under
                                    # --out DIR (default: results_dir()), or an absolute path
    timeLimit: 5                    # seconds per scenario
    workers: 1                      # CP-SAT num_workers per scenario
    seed: 0
    value: pods                     # what a job is worth: pods (default) or gpu
    scenarios:                      # each overrides the catalogue
    - name: base
    - name: cheap-h100
      prices: {h100x8: 70}          # cost per node type
      maxCounts: {a100x8: 4}        # most nodes per type
      cardQuota: {H100: 32}         # most GPUs of a model
      budget: 400                   # most total cost
    grid:                           # optional: the cartesian product, names generated
      prices.h100x8: [70, 80, 90]
      cardQuota.A100: [16, 32]

Execution: the base `PlanInput` is built once in the parent; each scenario is a small
picklable override, solved by the module-level `solve_scenario` in a worker. Executors:
`process` (default: `ProcessPoolExecutor` with the `forkserver` start method -- forking a
parent that runs CP-SAT or gRPC threads is unsafe -- and `max_workers = cores //
workers`), `dask` and `ray` (tasks reserving `num_cpus=workers`), on a local cluster or the
one at `address`; see `_executors.py`.
Every result is appended to the JSONL file as it completes; a scenario whose name is
already there is skipped, so an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from solver.errors import InputError
from solver.plan._executors import make_executor
from solver.plan._files import field_error, read_yaml, reject_unknown
from solver.plan._input import VALUES
from solver.plan._model import PlanInput, PlanOptions
from solver.plan.planner import plan

__all__ = ["Scenario", "SweepSpec", "apply_scenario", "load_sweep", "run_sweep", "solve_scenario"]

_OVERRIDES = ("prices", "maxCounts", "cardQuota", "budget")
_SPEC_KEYS = {
    "workload",
    "trace",
    "traceMapping",
    "cluster",
    "catalog",
    "output",
    "timeLimit",
    "workers",
    "seed",
    "value",
    "scenarios",
    "grid",
}


@dataclass(frozen=True)
class Scenario:
    name: str
    prices: tuple[tuple[str, float], ...] = ()
    max_counts: tuple[tuple[str, int], ...] = ()
    card_quota: tuple[tuple[str, int], ...] = ()
    budget: float | None = None


@dataclass
class SweepSpec:
    source: str
    workload: list[str] = field(default_factory=list)
    trace: str | None = None
    trace_mapping: str | None = None
    cluster: list[str] = field(default_factory=list)
    catalog: str = ""
    output: str = "sweep.jsonl"
    time_limit: float = 5.0
    workers: int = 1
    seed: int = 0
    value: str = "pods"  # solver.plan.valued
    scenarios: list[Scenario] = field(default_factory=list)


def _non_negative(value: Any, source: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise field_error(source, where, f"must be a number >= 0, got {value!r}")
    return value


def _scenario(raw: Any, source: str, where: str) -> Scenario:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise field_error(source, where, "a scenario is a mapping with a non-empty `name`")
    reject_unknown(source, where, raw, {"name", *_OVERRIDES}, f"name, {', '.join(_OVERRIDES)}")
    out: dict[str, Any] = {"name": raw["name"]}
    for key, attr, kind in (
        ("prices", "prices", float),
        ("maxCounts", "max_counts", int),
        ("cardQuota", "card_quota", int),
    ):
        value = raw.get(key) or {}
        if not isinstance(value, dict):
            raise field_error(source, f"{where}.{key}", "must be a mapping")
        items = [
            (str(k), kind(_non_negative(v, source, f"{where}.{key}.{k}"))) for k, v in value.items()
        ]
        out[attr] = tuple(sorted(items))
    if raw.get("budget") is not None:
        out["budget"] = float(_non_negative(raw["budget"], source, f"{where}.budget"))
    return Scenario(**out)


def _grid(raw: Any, source: str) -> Iterator[dict[str, Any]]:
    if not isinstance(raw, dict):
        raise field_error(source, "grid", "must be a mapping `field.key: [values]`")
    axes = []
    for key, values in raw.items():
        head, _, tail = str(key).partition(".")
        if head not in _OVERRIDES or (head != "budget" and not tail):
            raise field_error(
                source, f"grid.{key}", f"expected one of {', '.join(_OVERRIDES)}(.name)"
            )
        if not isinstance(values, list) or not values:
            raise field_error(source, f"grid.{key}", "must be a non-empty list")
        axes.append([(head, tail, v) for v in values])
    for combo in itertools.product(*axes):
        spec: dict[str, Any] = {
            "name": ",".join(f"{h}{'.' + t if t else ''}={v}" for h, t, v in combo)
        }
        for head, tail, value in combo:
            if head == "budget":
                spec["budget"] = value
            else:
                spec.setdefault(head, {})[tail] = value
        yield spec


def results_dir() -> Path:
    """Where sweep results go without `--out`: `$XDG_CACHE_HOME/gangplan/sweeps`
    (`~/.cache/...` without it), outside any checkout."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "gangplan" / "sweeps"


def results_path(spec: SweepSpec, out_dir: str | Path | None = None) -> Path:
    """The JSONL file of a sweep: its `output` under `out_dir` (default `results_dir()`)."""
    name = Path(spec.output)
    return name if name.is_absolute() else Path(out_dir or results_dir()) / name


def read_results(output: str | Path, scenarios: list[Scenario]) -> list[dict[str, Any]]:
    """The rows of `scenarios` in the JSONL file (the last one per name), in their order:
    what a resumed sweep has, old rows and new."""
    rows = {str(row["scenario"]): row for row in _rows(output)}
    return [rows[s.name] for s in scenarios if s.name in rows]


def _output_name(value: Any, source: str) -> str:
    if not isinstance(value, str) or not value or ".." in Path(value).parts:
        raise field_error(source, "output", "must be a file name (or an absolute path)")
    return value


def load_sweep(path: str | Path) -> SweepSpec:
    """Read a sweep file (see the module docstring); InputError names the file and field."""
    source = str(path)
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise field_error(source, "(top level)", "expected a mapping")
    reject_unknown(source, "", data, _SPEC_KEYS)
    base = Path(path).parent

    def rel(p: Any, where: str) -> str:
        if not isinstance(p, str) or not p:
            raise field_error(source, where, "must be a path")
        return str(p if Path(p).is_absolute() else base / p)

    def rels(value: Any, where: str) -> list[str]:
        if value is None:
            return []
        items = value if isinstance(value, list) else [value]
        return [rel(v, f"{where}[{i}]") for i, v in enumerate(items)]

    if "catalog" not in data:
        raise field_error(source, "catalog", "required")
    spec = SweepSpec(
        source=source,
        workload=rels(data.get("workload"), "workload"),
        trace=rel(data["trace"], "trace") if data.get("trace") else None,
        trace_mapping=data.get("traceMapping"),
        cluster=rels(data.get("cluster"), "cluster"),
        catalog=rel(data["catalog"], "catalog"),
        output=_output_name(data.get("output", f"{Path(path).stem}.jsonl"), source),
    )
    for key, attr, kind in (
        ("timeLimit", "time_limit", float),
        ("workers", "workers", int),
        ("seed", "seed", int),
    ):
        if key in data:
            setattr(spec, attr, kind(_non_negative(data[key], source, key)))
    if "value" in data:
        if data["value"] not in VALUES:
            raise field_error(
                source, "value", f"must be one of {', '.join(VALUES)}, got {data['value']!r}"
            )
        spec.value = data["value"]
    if not spec.workload and not spec.trace:
        raise field_error(
            source, "workload", "name manifests (`workload`) or a trace CSV (`trace`)"
        )
    raw = data.get("scenarios") or []
    if not isinstance(raw, list):
        raise field_error(source, "scenarios", "must be a list")
    spec.scenarios = [_scenario(s, source, f"scenarios[{i}]") for i, s in enumerate(raw)]
    if data.get("grid"):
        spec.scenarios += [_scenario(s, source, "grid") for s in _grid(data["grid"], source)]
    if not spec.scenarios:
        spec.scenarios = [Scenario(name="base")]
    names = [s.name for s in spec.scenarios]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise field_error(source, "scenarios", f"duplicate scenario name {dup!r}")
    return spec


def apply_scenario(inp: PlanInput, scenario: Scenario) -> PlanInput:
    """The base input with the scenario's catalogue overrides; InputError for unknown names."""
    names = {t.name for t in inp.types if not t.existing}
    for kind, items in (("prices", scenario.prices), ("maxCounts", scenario.max_counts)):
        for name, _ in items:
            if name not in names:
                raise InputError(f"scenario {scenario.name}: {kind}.{name}: no such node type")
    prices = dict(scenario.prices)
    counts = dict(scenario.max_counts)
    types = tuple(
        dataclasses.replace(
            t,
            cost=prices.get(t.name, t.cost),
            max_count=counts.get(t.name, t.max_count),
        )
        if not t.existing
        else t
        for t in inp.types
    )
    quota = dict(inp.card_quota)
    quota.update(scenario.card_quota)
    return dataclasses.replace(
        inp,
        types=types,
        card_quota=tuple(sorted(quota.items())),
        budget=scenario.budget if scenario.budget is not None else inp.budget,
    )


def solve_scenario(name: str, inp: PlanInput, options: PlanOptions) -> dict[str, Any]:
    """Runs in a worker: one plan, returned as a JSON-ready dict."""
    result = plan(inp, options)
    return {"scenario": name, **result.to_dict()}


def done_scenarios(output: str | Path) -> set[str]:
    """Names already in the JSONL file."""
    return {str(row["scenario"]) for row in _rows(output)}


def _rows(output: str | Path) -> Iterator[dict[str, Any]]:
    """The result rows of a JSONL file (a torn last line from a crash is skipped)."""
    path = Path(output)
    if not path.exists():
        return
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read the sweep results: {err}") from None
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("scenario"), str):
            yield row


def _git_sha() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).parent,
        )
    except OSError:
        return ""
    return out.stdout.strip()


def run_sweep(
    base: PlanInput,
    scenarios: list[Scenario],
    options: PlanOptions,
    output: str | Path,
    *,
    executor: str = "process",
    max_workers: int | None = None,
    address: str | None = None,
    quiet: bool = True,
    on_result: Callable[[dict[str, Any], int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Solve every scenario not yet in `output`; append each result as it completes.
    `quiet` keeps Ray's and Dask's own logging to errors (see `make_executor`)."""
    done = done_scenarios(output)
    todo = [s for s in scenarios if s.name not in done]
    inputs = [(s.name, apply_scenario(base, s)) for s in todo]  # bad overrides fail early
    results: list[dict[str, Any]] = []
    if not inputs:
        return results
    sha = _git_sha()
    with _results_file(output) as out:  # before any work: a path that cannot be written fails now
        if out.tell() > 0:  # a crash may have torn the last line: start a fresh one
            out.seek(out.tell() - 1)
            if out.read(1) != "\n":
                out.write("\n")
        pool = make_executor(executor, options.workers, max_workers, address, quiet=quiet)
        try:
            futures = {
                pool.submit(solve_scenario, name, inp, options): name for name, inp in inputs
            }
            for n, future in enumerate(as_completed(futures), start=1):
                row = future.result()
                row["git_sha"] = sha
                row["time_limit"] = options.time_limit
                row["workers"] = options.workers
                row["seed"] = options.seed
                out.write(json.dumps(row, sort_keys=True) + "\n")
                out.flush()
                results.append(row)
                if on_result is not None:
                    on_result(row, n, len(inputs))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return results


def _results_file(output: str | Path) -> TextIO:
    """The results file, opened to append (its folder made); InputError naming it when it
    cannot be."""
    path = Path(output)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("a+", encoding="utf-8")
    except OSError as err:
        raise InputError(f"{path}: cannot write the sweep results: {err.strerror}") from None
