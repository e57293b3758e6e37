"""Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection`
package does it for kube-scheduler (`--leader-elect`), so that of several replicas only one
writes.

Every replica watches the cluster and keeps its snapshot warm; only the one holding the
Lease decides, binds and reports (`Gate`). The rules, client-go's:

1. A candidate tries every `retry_period` (with up to 20 % jitter): it takes the Lease when
   there is none, when its holder is empty (released), or when the Lease has not changed
   for `lease_duration` **as this replica observed it** (its own clock, never the holder's
   `renewTime`: the replicas' clocks need not agree).
2. The leader renews every `retry_period`; when no renewal has succeeded for
   `renew_deadline`, it stops writing at once and becomes a candidate again.
3. Every write is a PUT (or a create) with the `resourceVersion` read: of two replicas
   racing for it, the API server lets one win (`409 Conflict` for the other).
4. On a graceful stop the leader releases the Lease (empty holder, as client-go's
   `ReleaseOnCancel`), so a follower takes over within a `retry_period`, not a
   `lease_duration`.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from clients.scheduler.kube import ApiException, KubeApi

__all__ = ["Gate", "LeaderElector", "LeaseOptions", "default_identity"]

log = logging.getLogger("gangplan.scheduler")
JITTER = 1.2  # client-go's JitterFactor for the retry period
Obj = dict[str, Any]


def default_identity() -> str:
    """`hostname_uuid`, as kube-scheduler's identity (a pod's hostname is its name)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _micro_now() -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Gate:
    """Whether this replica may write to the cluster now (always, without an election)."""

    def __init__(self, open_: bool = True) -> None:
        self._open = threading.Event()
        if open_:
            self._open.set()

    def is_open(self) -> bool:
        return self._open.is_set()

    def open(self) -> None:
        self._open.set()

    def close(self) -> None:
        self._open.clear()


@dataclass(frozen=True)
class LeaseOptions:
    namespace: str = "kube-system"
    name: str = "gangplan-scheduler"
    lease_duration: float = 15.0  # kube-scheduler's defaults
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def check(self) -> str:
        """Why these durations cannot work ("" when they can), client-go's rules."""
        if self.lease_duration <= self.renew_deadline:
            return "--leader-elect-lease-duration must be greater than the renew deadline"
        if self.renew_deadline <= JITTER * self.retry_period:
            return "--leader-elect-renew-deadline must be greater than 1.2 × the retry period"
        if self.retry_period <= 0:
            return "--leader-elect-retry-period must be positive"
        return ""


@dataclass
class LeaderElector:
    api: KubeApi
    options: LeaseOptions
    gate: Gate
    identity: str = field(default_factory=default_identity)
    on_change: Callable[[bool], None] = lambda leading: None
    clock: Callable[[], float] = time.monotonic
    _observed: tuple[str, float] = ("", 0.0)  # (the Lease's resourceVersion, when seen)
    _renewed: float = 0.0  # when this replica last renewed, as leader
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def path(self) -> str:
        o = self.options
        return f"/apis/coordination.k8s.io/v1/namespaces/{o.namespace}/leases/{o.name}"

    def start(self) -> LeaderElector:
        self.gate.close()
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop trying; a leader stops writing, then releases the Lease."""
        self._stop.set()
        leading = self.gate.is_open()
        self._lose(released=True)
        if self._thread is not None:
            self._thread.join(timeout)
        if leading:
            self._release()

    def _run(self) -> None:
        while not self._stop.is_set():
            ok = self._try()
            now = self.clock()
            if ok:
                self._renewed = now
                if not self.gate.is_open():
                    self.gate.open()
                    log.info("leader elected: writing", extra={"identity": self.identity})
                    self.on_change(True)
            elif self.gate.is_open() and now - self._renewed >= self.options.renew_deadline:
                self._lose(released=False)
            wait = self.options.retry_period
            if not self.gate.is_open():
                wait *= 1.0 + random.random() * (JITTER - 1.0)
            self._stop.wait(wait)

    def _lose(self, *, released: bool) -> None:
        if self.gate.is_open():
            self.gate.close()
            if not released:
                log.warning("leader lease lost: writing stopped", extra={"identity": self.identity})
            self.on_change(False)

    def _try(self) -> bool:
        """client-go's tryAcquireOrRenew: True when this replica holds the Lease now."""
        try:
            lease = self.api.request("GET", self.path)
        except ApiException as err:
            if err.status != 404:
                log.info("lease not read", extra={"status": err.status})
                return False
            return self._create()
        except Exception as err:  # the API server unreachable: not renewed
            log.info("lease not read", extra={"error": str(err)[:200]})
            return False
        spec = lease.get("spec") or {}
        version = str((lease.get("metadata") or {}).get("resourceVersion") or "")
        now = self.clock()
        if version != self._observed[0]:
            self._observed = (version, now)
        holder = str(spec.get("holderIdentity") or "")
        duration = float(spec.get("leaseDurationSeconds") or self.options.lease_duration)
        if holder and holder != self.identity and now < self._observed[1] + duration:
            return False  # held, and renewed within its duration as far as we have seen
        stamp = _micro_now()
        new_spec = dict(spec)
        new_spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=round(self.options.lease_duration),
            renewTime=stamp,
        )
        if holder != self.identity:
            new_spec["acquireTime"] = stamp
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        body = {**lease, "spec": new_spec}
        try:
            updated = self.api.request("PUT", self.path, body=body)
        except Exception as err:
            log.info("lease not renewed", extra={"error": str(err)[:200]})
            return False
        self._observed = (str((updated.get("metadata") or {}).get("resourceVersion")), now)
        return True

    def _create(self) -> bool:
        stamp = _micro_now()
        o = self.options
        body: Obj = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": o.name, "namespace": o.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": round(o.lease_duration),
                "acquireTime": stamp,
                "renewTime": stamp,
                "leaseTransitions": 0,
            },
        }
        path = self.path.rpartition("/")[0]
        try:
            created = self.api.request("POST", path, body=body)
        except Exception as err:  # 409: another replica created it first
            log.info("lease not created", extra={"error": str(err)[:200]})
            return False
        self._observed = (str((created.get("metadata") or {}).get("resourceVersion")), self.clock())
        return True

    def _release(self) -> None:
        """Give the Lease up (an empty holder), so a follower need not wait it out."""
        try:
            lease = self.api.request("GET", self.path)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            spec = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1}
            self.api.request("PUT", self.path, body={**lease, "spec": spec})
        except Exception as err:
            log.info("lease not released", extra={"error": str(err)[:200]})
