"""`gangplan scheduler` as a function: flags in, exit status out (as `server.main.run`).
Invalid flags, files or ConfigMaps are one line on standard error and status 2."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from clients.scheduler.cycle import CycleOptions
from clients.scheduler.kube import ApiException, KubeApi, connect
from clients.scheduler.leader import LeaseOptions
from clients.scheduler.service import SchedulerService, setup_logging
from solver import GangplanError, conf_from_text, load_conf
from solver.errors import InputError

__all__ = ["run"]


SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def _conf_from_config_map(api: KubeApi, ref: str) -> str:
    """`NS/NAME[:KEY]` -> the conf text (KEY default: the map's only key)."""
    where, _, key = ref.partition(":")
    ns, _, name = where.rpartition("/")
    try:
        cm = api.request("GET", f"/api/v1/namespaces/{ns or 'default'}/configmaps/{name}")
    except ApiException as err:
        raise InputError(f"--config-map {ref}: cannot read it: HTTP {err.status}") from None
    data = cm.get("data") or {}
    if not key:
        if len(data) != 1:
            raise InputError(
                f"--config-map {ref}: name the key (NS/NAME:KEY), it has {sorted(data)}"
            )
        key = next(iter(data))
    if key not in data:
        raise InputError(f"--config-map {ref}: no key {key!r} (it has {sorted(data)})")
    return str(data[key])


def _checked_conf(text: str, where: str) -> str:
    """Validate a ConfigMap's conf as `--config` files are validated; returns the text."""
    conf_from_text(text, where)
    return text


def _lease_options(
    lease: tuple[str | None, str, float, float, float] | None, dry_run: bool
) -> LeaseOptions | None:
    if lease is None:
        return None
    if dry_run:
        raise InputError("--leader-elect writes a Lease; --dry-run writes nothing: give one")
    namespace, name, duration, deadline, retry = lease
    if namespace is None:
        found = Path(SERVICE_ACCOUNT_NAMESPACE)
        namespace = found.read_text().strip() if found.is_file() else "default"
    options = LeaseOptions(namespace, name, duration, deadline, retry)
    if why := options.check():
        raise InputError(why)
    return options


def run(
    *,
    kubeconfig: str | None,
    context: str | None,
    scheduler_name: list[str] | None,
    server: str | None,
    config: str | None,
    config_map: str | None,
    engine: str,
    time_limit: float,
    workers: int,
    seed: int,
    dry_run: bool,
    http_port: int,
    preempt: bool = False,
    bind_workers: int,
    http_host: str = "127.0.0.1",
    snapshot_id: str,
    log_level: str,
    lease: tuple[str | None, str, float, float, float] | None = None,
) -> int:
    """Schedule until SIGTERM; 0 after the drain, 2 for invalid input. `lease`:
    --leader-elect's (namespace, name, lease duration, renew deadline, retry period)."""
    setup_logging(log_level)
    try:
        if config and config_map:
            raise InputError("--config and --config-map: give one")
        lease_options = _lease_options(lease, dry_run)
        conf_text = ""
        if config:  # a local file: checked before anything reaches for the cluster
            load_conf(config)
            conf_text = Path(config).read_text(encoding="utf-8")
    except GangplanError as err:
        sys.stderr.write(f"error: {err}\n")
        return 2
    try:
        api = connect(kubeconfig, context=context)
    except Exception as err:  # kubeconfig errors come in many types
        where = f"--kubeconfig {kubeconfig}" if kubeconfig else "the cluster configuration"
        sys.stderr.write(f"error: {where}: cannot load it: {err}\n")
        return 2
    try:
        if config_map:
            conf_text = _checked_conf(
                _conf_from_config_map(api, config_map), f"--config-map {config_map}"
            )
    except GangplanError as err:
        sys.stderr.write(f"error: {err}\n")
        return 2
    options = CycleOptions(
        scheduler_names=frozenset(scheduler_name or ["gangplan"]),
        engine=engine,
        scheduler_conf=conf_text,
        time_limit=time_limit,
        workers=workers,
        seed=seed,
        dry_run=dry_run,
        preempt=preempt,
        snapshot_id=snapshot_id,
    )
    service = SchedulerService(
        api,
        options,
        server=server,
        token=os.environ.get("GANGPLAN_TOKEN") or None,
        http_port=http_port,
        http_host=http_host,
        bind_workers=bind_workers,
        lease=lease_options,
    )
    service.run()
    return 0
