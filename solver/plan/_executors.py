"""Where a sweep's scenarios run: `concurrent.futures` executors over a process pool, Ray or
Dask. Ray and Dask are optional extras, imported only when asked for.

`max_workers` is honoured by every executor: the process pool has that many processes; Ray
and Dask run behind `_Throttled`, which keeps at most that many tasks in flight (on a
cluster of any size, also one attached with `address`). An executor that started its own
Ray instance or Dask cluster shuts it down; one that attached to an existing one only
disconnects. An `address` nothing answers at is an InputError within seconds (Ray itself
would retry for minutes, Dask for 30 s). `quiet` (`-q`) keeps Ray's and Dask's own logging
to errors and does not echo Ray's worker output.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import os
import socket
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any
from urllib.parse import urlsplit

from solver.errors import InputError

__all__ = ["make_executor"]

Launch = Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], "Future[Any]"]


class _Throttled(Executor):
    """At most `slots` tasks of `launch` in flight; the others wait, in submission order.
    `peak` is the most that ever ran at once."""

    def __init__(self, launch: Launch, slots: int, close: Callable[[], None]) -> None:
        self._launch, self._slots, self._close = launch, slots, close
        self._lock = threading.Lock()
        self._waiting: deque[
            tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]
        ]
        self._waiting = deque()
        self._running = 0
        self.peak = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        outer: Future[Any] = Future()
        with self._lock:
            self._waiting.append((outer, fn, args, kwargs))
        self._pump()
        return outer

    def _pump(self) -> None:
        while True:
            with self._lock:
                if self._running >= self._slots or not self._waiting:
                    return
                outer, fn, args, kwargs = self._waiting.popleft()
                if not outer.set_running_or_notify_cancel():
                    continue
                self._running += 1
                self.peak = max(self.peak, self._running)
            try:
                inner = self._launch(fn, args, kwargs)
            except BaseException as err:
                self._settle(outer, None, err)
                continue
            inner.add_done_callback(functools.partial(self._finished, outer))

    def _finished(self, outer: Future[Any], inner: Future[Any]) -> None:
        if inner.cancelled():
            self._settle(outer, None, None, cancelled=True)
            return
        error = inner.exception()
        self._settle(outer, None if error else inner.result(), error)

    def _settle(
        self, outer: Future[Any], value: Any, error: BaseException | None, cancelled: bool = False
    ) -> None:
        with self._lock:
            self._running -= 1
        if cancelled:
            outer.cancel()
        elif error is not None:
            outer.set_exception(error)
        else:
            outer.set_result(value)
        self._pump()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            with self._lock:
                waiting, self._waiting = list(self._waiting), deque()
            for outer, *_ in waiting:
                outer.cancel()
        self._close()


_CONNECT_SECONDS = 5.0


def _reachable(address: str, what: str, default_port: int) -> None:
    """InputError unless something accepts a TCP connection at `address` (`host:port`, or a
    URL such as `ray://host:10001` / `tcp://host:8786`)."""
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        host, port = parts.hostname, parts.port or default_port
    except ValueError:  # a port that is not a number
        host, port = None, 0
    if not host:
        raise InputError(f"--address {address!r}: expected host:port or a URL ({what})")
    try:
        socket.create_connection((host, port), timeout=_CONNECT_SECONDS).close()
    except OSError as err:
        raise InputError(
            f"--address {address}: cannot reach the {what} at {host}:{port} ({err.strerror or err})"
        ) from None


def _ray(slots: int, cpus: int, address: str | None, quiet: bool) -> _Throttled:
    try:
        import ray  # optional extra
    except ImportError:
        raise InputError(
            "--executor ray needs the `ray` package: pip install 'gangplan[ray]'"
        ) from None
    attach = address not in (None, "", "local")  # Ray's `local`: start one here
    if attach and address != "auto":
        _reachable(str(address), "Ray cluster (GCS or ray:// client server)", 6379)
    started = not ray.is_initialized()  # else: the caller's session, left running
    if started:
        try:
            ray.init(
                address=address or None,
                num_cpus=None if attach else slots * cpus,
                include_dashboard=False,
                # -q: no worker output echoed, only errors from Ray's own logger
                log_to_driver=not quiet,
                logging_level=logging.ERROR if quiet else logging.WARNING,
            )
        except ConnectionError as err:
            raise InputError(f"--address {address}: {err}") from None
    tasks: dict[Callable[..., Any], Any] = {}

    def launch(
        fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Future[Any]:
        task = tasks.setdefault(fn, ray.remote(num_cpus=cpus)(fn))
        future: Future[Any] = task.remote(*args, **kwargs).future()
        return future

    return _Throttled(launch, slots, ray.shutdown if started else lambda: None)


def _dask(slots: int, address: str | None, quiet: bool) -> _Throttled:
    try:
        import distributed  # optional extra (untyped: held as Any)
    except ImportError:
        raise InputError(
            "--executor dask needs the `distributed` package: pip install 'gangplan[dask]'"
        ) from None
    dask: Any = distributed
    if address:
        _reachable(address, "Dask scheduler", 8786)
        try:
            client = dask.Client(address, timeout=f"{_CONNECT_SECONDS}s")
        except OSError as err:
            raise InputError(f"--address {address}: {err}") from None
    else:
        client = dask.Client(
            processes=True,
            n_workers=slots,
            threads_per_worker=1,
            dashboard_address=None,
            silence_logs=logging.ERROR if quiet else logging.WARNING,
        )
    # Dask's own ClientExecutor takes no `cancel_futures` and leaves its client running:
    # it is used only to turn Dask futures into concurrent ones
    executor = client.get_executor(pure=False)

    def launch(
        fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Future[Any]:
        future: Future[Any] = executor.submit(fn, *args, **kwargs)
        return future

    return _Throttled(launch, slots, client.close)


def make_executor(
    kind: str,
    workers: int,
    max_workers: int | None = None,
    address: str | None = None,
    *,
    quiet: bool = True,
) -> Executor:
    """`process` (forkserver pool), `dask` or `ray` (a local cluster, or the one at
    `address`); at most `max_workers` scenarios at once (default: cores // workers).
    A local Dask cluster has `max_workers` single-threaded workers; a local Ray instance
    `max_workers * workers` CPUs."""
    cores = os.cpu_count() or 1
    slots = max_workers or max(1, cores // max(1, workers))
    if kind == "process":
        if address:
            raise InputError("--address is for --executor ray or dask")
        method = (
            "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        )
        return ProcessPoolExecutor(
            max_workers=slots, mp_context=multiprocessing.get_context(method)
        )
    if kind == "dask":
        return _dask(slots, address, quiet)
    if kind == "ray":
        return _ray(slots, max(1, workers), address, quiet)
    raise InputError(f"unknown executor {kind!r} (process, dask, ray)")
