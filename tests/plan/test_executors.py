"""Sweeps on Ray and Dask (local clusters and attached ones), `--max-workers` honoured, and
the sweep command line: results outside the checkout, resume shows every row, --plot."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clients.cli import app
from clients.plan_cli import build_plan_input
from solver.errors import InputError
from solver.plan import PlanOptions
from solver.plan._executors import _reachable, _Throttled, make_executor
from solver.plan.sweep import load_sweep, read_results, results_path, run_sweep
from tests.plan.test_sweep import _spec

COMPARED = ("scenario", "status", "cost", "add", "placed_pods")
ROOT = Path(__file__).resolve().parents[2]
GANGPLAN = [sys.executable, "-c", "from clients.cli import main; main()"]  # its own process
NAP = lambda seconds: time.sleep(seconds)  # noqa: E731 (pickled by value: workers need no import)


def _plan(tmp_path: Path) -> tuple[Any, Any, PlanOptions]:
    spec = load_sweep(_spec(tmp_path))
    base = build_plan_input(spec.workload, spec.catalog, spec.cluster, None, None)
    return spec, base, PlanOptions(time_limit=spec.time_limit, workers=1, seed=0)


def _same(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(json.dumps(r[k], sort_keys=True) for k in COMPARED) for r in rows)


@pytest.fixture(scope="module")
def serial_rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("serial")
    spec, base, options = _plan(tmp)
    return run_sweep(base, spec.scenarios, options, tmp / "serial.jsonl", max_workers=2)


@pytest.fixture(scope="module")
def ray_session() -> Iterator[Any]:
    ray = pytest.importorskip("ray")  # the `ray` extra, which CI installs
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


def test_ray_sweep_matches_the_process_pool(
    tmp_path: Path, ray_session: Any, serial_rows: list[dict[str, Any]]
) -> None:
    spec, base, options = _plan(tmp_path)
    rows = run_sweep(base, spec.scenarios, options, tmp_path / "r.jsonl", executor="ray")
    assert _same(rows) == _same(serial_rows)
    assert ray_session.is_initialized()  # attached to the session it found: left running


def test_ray_max_workers_caps_the_tasks_in_flight(tmp_path: Path, ray_session: Any) -> None:
    pool = make_executor("ray", 1, max_workers=1)
    assert isinstance(pool, _Throttled)
    futures = [pool.submit(NAP, 0.2) for _ in range(3)]
    assert [f.result(timeout=60) for f in futures] == [None] * 3
    assert pool.peak == 1
    pool.shutdown()


def test_dask_local_cluster_and_attached_scheduler(
    tmp_path: Path, serial_rows: list[dict[str, Any]]
) -> None:
    distributed = pytest.importorskip("distributed")
    spec, base, options = _plan(tmp_path)
    rows = run_sweep(
        base, spec.scenarios, options, tmp_path / "d.jsonl", executor="dask", max_workers=2
    )
    assert _same(rows) == _same(serial_rows)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        pool = make_executor("dask", 1, max_workers=1, address=cluster.scheduler_address)
        futures = [pool.submit(NAP, 0.2) for _ in range(3)]
        assert [f.result(timeout=60) for f in futures] == [None] * 3
        assert pool.peak == 1  # the cluster has 2 workers; --max-workers 1 still holds
        pool.shutdown()
        # the command line, attached to the same scheduler
        args = ["plan", "--sweep", str(_spec(tmp_path)), "--executor", "dask", "-q", "-o", "json"]
        args += ["--address", cluster.scheduler_address, "--max-workers", "1"]
        result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "cli")])
        assert result.exit_code == 0, result.output
        assert _same(json.loads(result.stdout)["rows"]) == _same(serial_rows)
        # attached, not owned: the scheduler still serves others
        with distributed.Client(cluster.scheduler_address) as other:
            assert other.submit(sum, [1, 2]).result(timeout=30) == 3
            assert len(other.scheduler_info()["workers"]) == 2


def test_dask_local_cluster_has_max_workers_workers() -> None:
    distributed = pytest.importorskip("distributed")
    pool = make_executor("dask", 1, max_workers=3)
    client = distributed.default_client()  # the executor's: the newest client is the default
    try:
        assert len(client.scheduler_info()["workers"]) == 3
        assert {w["nthreads"] for w in client.scheduler_info()["workers"].values()} == {1}
    finally:
        pool.shutdown()
    assert client.status == "closed"  # started by the executor: stopped with it


def test_ray_attach_from_the_command_line_is_quiet_and_leaves_the_cluster(
    tmp_path: Path, ray_session: Any, serial_rows: list[dict[str, Any]]
) -> None:
    # a second driver (the CLI, in its own process) attaches to the session's cluster
    gcs = ray_session.get_runtime_context().gcs_address
    args = ["plan", "--sweep", str(_spec(tmp_path)), "--executor", "ray", "--address", gcs]
    args += ["--max-workers", "1", "-q", "-o", "json", "--out", str(tmp_path / "out")]
    done = subprocess.run(
        [*GANGPLAN, *args], cwd=ROOT, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # -q: no Ray banner, no worker logs, no warnings
    assert _same(json.loads(done.stdout)["rows"]) == _same(serial_rows)
    assert ray_session.get(ray_session.put(7)) == 7  # attached, not owned: still running
    assert ray_session.cluster_resources()["CPU"] == 2


RAY_OWNED = """
import ray
from solver.plan._executors import make_executor
pool = make_executor("ray", 2, max_workers=1)
print(ray.cluster_resources()["CPU"], pool.submit(lambda xs: sum(xs), [1, 2]).result(timeout=60))
pool.shutdown()
print(ray.is_initialized())
"""


def test_ray_local_instance_sized_by_max_workers_and_stopped() -> None:
    pytest.importorskip("ray")
    # in a process of its own: this module's Ray session would be reused, not started
    done = subprocess.run(
        [sys.executable, "-c", RAY_OWNED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2.0", "3", "False"]  # 1 scenario x 2 CP-SAT workers
    assert done.stderr == ""


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(("executor", "package"), [("ray", "ray"), ("dask", "distributed")])
def test_unreachable_address_fails_fast_with_a_message(
    executor: str, package: str, tmp_path: Path
) -> None:
    pytest.importorskip(package)
    address = f"127.0.0.1:{_unused_port()}"
    args = ["plan", "--sweep", str(_spec(tmp_path)), "--executor", executor, "-q"]
    started = time.monotonic()
    result = CliRunner().invoke(app, [*args, "--address", address, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert f"--address {address}: cannot reach the" in result.output
    assert "Traceback" not in result.output and result.stdout == ""
    assert time.monotonic() - started < 30  # Ray alone retries for minutes


def test_malformed_and_unreachable_addresses() -> None:
    for bad in ("", "tcp://", "host:port", "ray://:10001"):
        with pytest.raises(InputError, match="expected host:port or a URL"):
            _reachable(bad, "Dask scheduler", 8786)
    with pytest.raises(InputError, match=r"cannot reach the Dask scheduler at 127.0.0.1:\d+"):
        _reachable(f"tcp://127.0.0.1:{_unused_port()}", "Dask scheduler", 8786)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        _reachable(f"ray://127.0.0.1:{port}", "Ray cluster", 6379)  # answers: no error
        _reachable(f"127.0.0.1:{port}", "Ray cluster", 6379)


def test_throttled_cancels_the_waiting_on_shutdown() -> None:
    started: list[Future[Any]] = []

    def launch(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Future[Any]:
        started.append(Future())
        return started[-1]

    closed: list[bool] = []
    pool = _Throttled(launch, 1, lambda: closed.append(True))
    first, second = pool.submit(print), pool.submit(print)
    assert len(started) == 1 and first.running() and not second.running()
    pool.shutdown(cancel_futures=True)
    assert second.cancelled() and closed == [True]
    started[0].set_result(7)
    assert first.result() == 7 and len(started) == 1


def test_sweep_cli_writes_outside_the_checkout_resumes_whole_and_plots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "250")  # one table row per line
    sweep = _spec(tmp_path)
    spec = load_sweep(sweep)
    assert results_path(spec) == tmp_path / "cache" / "gangplan" / "sweeps" / "out.jsonl"
    base = build_plan_input(spec.workload, spec.catalog, spec.cluster, None, None)
    options = PlanOptions(time_limit=spec.time_limit, workers=1, seed=0)
    run_sweep(base, spec.scenarios[:1], options, results_path(spec))  # an interrupted run
    png = tmp_path / "sweep.png"
    args = ["plan", "--sweep", str(sweep), "-q", "--max-workers", "2", "--plot", str(png)]
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.output
    for name in ("base", "no-h100", "prices.a100x8=20", "prices.a100x8=40"):
        assert name in table.stdout  # the resumed row too
    assert "1 scenario(s) already in" in table.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = CliRunner().invoke(app, [*args[:3], "--out", str(tmp_path / "elsewhere"), "-o", "json"])
    summary = json.loads(again.stdout)
    assert summary["results"] == str(tmp_path / "elsewhere" / "out.jsonl")
    assert summary["solved"] == 4 and summary["skipped"] == 0
    assert [r["scenario"] for r in summary["rows"]] == [s.name for s in spec.scenarios]
    assert len(read_results(results_path(spec), spec.scenarios)) == 4


def test_address_needs_ray_or_dask() -> None:
    result = CliRunner().invoke(
        app, ["plan", "--sweep", "examples/plan/sweep.yaml", "--address", "tcp://x:1"]
    )
    assert result.exit_code == 2
    assert "--address is for --executor ray or dask" in result.output
