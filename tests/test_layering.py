"""The tree keeps its shape: imports go one way, the verifier stands apart, the client is thin.

Layers, lowest first (a module may import its own layer and the ones below, never above):

    0  solver.errors, solver.quantity, solver.arrays, solver.yaml_limits, solver.collector,
       solver.json_limits, solver.gate, gangplan.v1 (generated messages)
    1  solver.config, solver.model                      the vocabulary
    2  solver.kube, solver.snapshot, solver.decision,   readers, cluster state, answers,
       solver.plan                                      the capacity planner
    3  solver.problem, solver.verify                    what engines read; the oracle
    4  solver.sat                                       CP-SAT vocabulary
    5  solver.features                                  one package per policy
    6  solver.compile, solver.engines
    7  solver.decide, solver.why                        the answer: names, certificates
    8  solver.schedule
    9  solver.explain, solver.views, solver.changes,     the library's answers beside a Decision,
       solver.start, solver.defrag                     and the defragmentation planner
    10 solver (the package), solver.codec               the library's front doors
    11 server
    12 clients, gangplan (the client facade)

Imports are read from the source (every `import`, at any depth), not from a running
interpreter, so a lazy import cannot hide an edge.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from dataclasses import fields
from functools import cache
from pathlib import Path

from solver.config import BUILTIN_PLUGINS, OPTIONAL_PLUGINS, Plugin
from solver.features import FEATURES
from solver.verify import RULES

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("solver", "server", "clients", "gangplan")
MAX_LINES = 600

LAYERS: dict[str, int] = {
    "solver.errors": 0,
    "solver.arrays": 0,
    "solver.quantity": 0,
    "solver.yaml_limits": 0,
    "solver.json_limits": 0,
    "solver.collector": 0,
    "solver.gate": 0,
    "gangplan.v1": 0,
    "solver.config": 1,
    "solver.conf_keys": 1,
    "solver.model": 1,
    "solver.kube": 2,
    "solver.snapshot": 2,
    "solver.decision": 2,
    "solver.plan": 2,
    "solver.problem": 3,
    "solver.verify": 3,
    "solver.sat": 4,
    "solver.features": 5,
    "solver.compile": 6,
    "solver.engines": 6,
    "solver.decide": 7,
    "solver.why": 7,
    "solver.schedule": 8,
    "solver.explain": 9,
    "solver.changes": 9,
    "solver.start": 9,
    "solver.consolidate": 9,
    "solver.defrag": 9,
    "solver.views": 9,
    "solver": 10,
    "solver.codec": 10,
    "server": 11,
    "clients": 12,
    "gangplan": 12,
}

# What the verifier must never reach, even through another module: it re-derives what
# it checks, so a policy bug cannot hide from the oracle the property tests rely on.
NOT_FOR_VERIFY = (
    "solver.features",
    "solver.engines",
    "solver.compile",
    "solver.problem",
    "solver.sat",
    "solver.decide",
    "solver.why",
    "solver.schedule",
)

# Function-local imports allowed, each for a reason (module, imported module prefix).
LAZY_OK = {
    ("gangplan", "clients"): "the facade must not import the client before it is asked for",
    ("clients.scheduler_cli", "clients.scheduler"): "the Kubernetes client only when asked for",
    ("clients.scheduler_cli", "clients.kubefake"): "the Kubernetes client only when asked for",
    ("solver.plan.plot", "matplotlib"): "optional extra",
    ("solver.plan._executors", "ray"): "optional extra",
    ("solver.plan._executors", "distributed"): "optional extra",
}


@cache
def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _resolve(name: str) -> str | None:
    mods = _modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _imports(tree: ast.AST) -> list[tuple[ast.stmt, str]]:
    """(statement, imported name) for every absolute import in `tree`."""
    out: list[tuple[ast.stmt, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from pkg import submodule` depends on the submodule, `from pkg import name`
            # on the package (every import also runs the parents' __init__, for all alike)
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.append((node, sub if sub in _modules() else node.module))
    return out


@cache
def _graph() -> dict[str, frozenset[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, path in _modules().items():
        for _, name in _imports(ast.parse(path.read_text())):
            target = _resolve(name)
            if target is not None and target != module:
                edges[module].add(target)
    return {m: frozenset(edges[m]) for m in _modules()}


def _layer(module: str) -> tuple[str, int]:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return best, LAYERS[best]


def test_every_module_has_a_layer() -> None:
    for module in _modules():
        assert any(module == p or module.startswith(p + ".") for p in LAYERS), module


def test_no_import_goes_up_a_layer() -> None:
    upward = []
    for module, targets in _graph().items():
        here, rank = _layer(module)
        for target in targets:
            there, other = _layer(target)
            if other > rank:
                upward.append(f"{module} ({here}, {rank}) imports {target} ({there}, {other})")
    assert upward == []


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components over modules; a package's __init__ counts as
    the module the package name resolves to."""
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert cycles == [], "\n".join(" <-> ".join(c) for c in cycles)


def test_verify_reaches_no_policy_and_no_engine() -> None:
    graph = _graph()
    seen: set[str] = set()
    todo = [m for m in graph if m == "solver.verify" or m.startswith("solver.verify.")]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    reached = sorted(m for m in seen if m.startswith(NOT_FOR_VERIFY))
    assert reached == []


def test_no_hidden_function_local_imports() -> None:
    hidden = []
    for module, path in _modules().items():
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for stmt, name in _imports(fn):
                if not any(module == m and name.startswith(p) for m, p in LAZY_OK):
                    hidden.append(f"{path.relative_to(ROOT)}:{stmt.lineno} {name}")
    assert sorted(set(hidden)) == []


def test_no_source_file_is_over_the_limit() -> None:
    generated = ROOT / "gangplan" / "v1"
    long = {
        str(path.relative_to(ROOT)): n
        for path in _modules().values()
        if generated not in path.parents and (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_thin_client_loads_no_solver() -> None:
    code = (
        "import sys\n"
        "from gangplan import Client\n"
        "heavy = ('numpy', 'ortools', 'solver', 'server', 'pydantic', 'yaml')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


FEATURE_PACKAGE = "solver.features"
CORE_OF_FEATURES = {"solver.features", "solver.features._base", "solver.features._steps"}
NAMES_NO_FEATURE = ("solver.engines", "solver.decide", "solver.codec")


def _feature_modules_imported(prefixes: tuple[str, ...]) -> list[str]:
    found = []
    for module, targets in _graph().items():
        if not any(module == p or module.startswith(p + ".") for p in prefixes):
            continue
        found += [
            f"{module} imports {t}"
            for t in targets
            if t.startswith(FEATURE_PACKAGE + ".") and t not in CORE_OF_FEATURES
        ]
    return sorted(found)


def test_engines_decide_and_codec_name_no_feature() -> None:
    """They iterate over the registry (`solver.features.FEATURES`): a new policy is its
    folder plus one registry line, with no engine to edit."""
    assert _feature_modules_imported(NAMES_NO_FEATURE) == []


def test_front_ends_import_no_feature_module() -> None:
    """The CLI, the service and the clients use the library's public API (`solver`,
    `solver.views`, ...), never a feature package."""
    found = [
        f"{module} imports {t}"
        for module, targets in _graph().items()
        if module.startswith(("server", "clients", "gangplan"))
        for t in targets
        if t == FEATURE_PACKAGE or t.startswith(FEATURE_PACKAGE + ".")
    ]
    assert sorted(found) == []


def test_every_registered_feature_lives_in_its_folder() -> None:
    """A feature's parts (compile step, keys, facts' readers, engine steps, decision steps)
    are all defined in its own package `solver/features/<name>/`."""

    def functions(value: object) -> list[object]:
        if callable(value):
            return [getattr(value, "func", value)]  # a partial: its function
        if isinstance(value, tuple):
            return [f for v in value for f in functions(v)]
        if hasattr(value, "__dataclass_fields__"):
            return [f for fld in fields(value) for f in functions(getattr(value, fld.name))]  # type: ignore[arg-type]
        return []

    outside, checked = [], 0
    for feature in FEATURES:
        home = f"{FEATURE_PACKAGE}.{feature.name}"
        assert (ROOT / "solver" / "features" / feature.name).is_dir(), feature.name
        parts = [feature.compile, feature.type_key, feature.call_type_key]
        parts += [feature.greedy, feature.cpsat, feature.explain, feature.decide, feature.after]
        for fn in (f for p in parts for f in functions(p)):
            checked += 1
            module = getattr(fn, "__module__", "") or ""
            if module != home and not module.startswith(home + "."):
                outside.append(f"{feature.name}: {getattr(fn, '__qualname__', fn)} in {module}")
    assert outside == []
    assert checked > 30  # the steps were found


def test_a_plugin_is_named_in_one_place() -> None:
    """Features, the verifier's rules and the conf name plugins through `Plugin` only."""
    named = [p for f in FEATURES for p in f.plugins] + [p for ps, _ in RULES for p in ps]
    assert [p for p in named if not isinstance(p, Plugin)] == []
    assert set(Plugin) == {*BUILTIN_PLUGINS, *OPTIONAL_PLUGINS}


CROSS_CUTTING = {"fuzz", "golden"}  # hostile inputs to every reader; the recorded answers


def test_tests_mirror_the_source_tree() -> None:
    """tests/<path> holds the tests of solver/<path> (or of server/, clients/ at the top)."""
    stray = []
    for folder in sorted(p for p in (ROOT / "tests").rglob("*") if p.is_dir()):
        rel = folder.relative_to(ROOT / "tests")
        if rel.parts[0] in CROSS_CUTTING or "__pycache__" in rel.parts:
            continue
        if not ((ROOT / "solver" / rel).is_dir() or (ROOT / rel).is_dir()):
            stray.append(str(rel))
    assert stray == []
