"""List + watch one kind into the mirror, as client-go's Reflector does.

1. List; the mirror's objects of that kind are replaced (gone ones deleted) and the list's
   resourceVersion remembered.
2. Watch from it with bookmarks; each event goes into the mirror and moves the version on
   (BOOKMARKs only move it). A stream that ends is watched again from the last version.
3. An ERROR event or answer `410 Gone` (the version is older than the server keeps) means
   events may be missing: list again (step 1).
4. Any other failure (connection refused, a 500, a broken stream) is retried after a
   backoff doubling from 0.2 s to 10 s, and reset by the first good answer.
5. A first list refused with `401`, `403` or `404` (no RBAC for that kind, or its CRD
   removed since discovery) drops the kind with a warning: the scheduler becomes ready
   without it instead of never.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from clients.scheduler.kinds import Kind
from clients.scheduler.kube import ApiException, KubeApi, path_of
from clients.scheduler.mirror import Mirror

__all__ = ["Reflector", "discover_kinds"]

log = logging.getLogger("gangplan.scheduler")
WATCH_SECONDS = 300
BACKOFF_START, BACKOFF_MAX = 0.2, 10.0


def discover_kinds(api: KubeApi, kinds: tuple[Kind, ...]) -> tuple[dict[Kind, str], list[str]]:
    """Kind -> served version, for every kind the cluster serves; notes for the others."""
    groups = api.discover()
    served: dict[Kind, str] = {}
    notes: list[str] = []
    listings: dict[str, set[str]] = {}
    for kind in kinds:
        for version in kind.versions:
            if version not in groups.get(kind.group, ()):
                continue
            gv = kind.api_version(version)
            if gv not in listings:
                path = f"/apis/{gv}" if kind.group else f"/api/{gv}"
                try:
                    body = api.request("GET", path)
                    listings[gv] = {str(r.get("name")) for r in body.get("resources") or []}
                except ApiException:
                    listings[gv] = set()
            if kind.plural in listings[gv]:
                served[kind] = version
                break
        else:
            notes.append(f"{kind.label} is not served by this cluster: not watched")
    return served, notes


@dataclass
class Reflector:
    """One kind's list + watch loop in its own thread."""

    api: KubeApi
    kind: Kind
    version: str
    mirror: Mirror
    stop: threading.Event
    on_restart: Callable[[str, str], None] = lambda kind, reason: None
    resource_version: str = ""
    thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> Reflector:
        self.thread = threading.Thread(
            target=self.run, name=f"watch-{self.kind.label}", daemon=True
        )
        self.thread.start()
        return self

    def run(self) -> None:
        backoff = BACKOFF_START
        path = path_of(self.kind, self.version)
        while not self.stop.is_set():
            try:
                if not self.resource_version:
                    self._list(path)
                self._watch(path)
                backoff = BACKOFF_START
            except ApiException as err:
                if err.status == 410:
                    self._restart("gone", relist=True)
                    continue
                if err.status in (401, 403, 404) and self.kind not in self.mirror.synced:
                    # not ours to read (RBAC), or gone since discovery: scheduling goes on
                    # without this kind, said once, rather than never becoming ready
                    log.warning(
                        "kind not readable: scheduling without it",
                        extra={"kind": self.kind.label, "status": err.status},
                    )
                    self._restart(f"http_{err.status}", relist=False)
                    self.mirror.replace(self.kind, [])
                    return
                self._restart(f"http_{err.status}", relist=False)
                self.stop.wait(backoff * (0.5 + random.random()))
                backoff = min(backoff * 2, BACKOFF_MAX)
            except Exception as err:
                if self.stop.is_set():
                    return
                log.warning(
                    "watch failed", extra={"kind": self.kind.label, "error": str(err)[:200]}
                )
                self._restart("error", relist=False)
                self.stop.wait(backoff * (0.5 + random.random()))
                backoff = min(backoff * 2, BACKOFF_MAX)

    def _restart(self, reason: str, *, relist: bool) -> None:
        if relist:
            self.resource_version = ""
        self.on_restart(self.kind.label, reason)

    def _list(self, path: str) -> None:
        body = self.api.request("GET", path, timeout=120.0)
        self.mirror.replace(self.kind, list(body.get("items") or []))
        self.resource_version = str((body.get("metadata") or {}).get("resourceVersion") or "0")

    def _watch(self, path: str) -> None:
        for event in self.api.watch(path, self.resource_version, WATCH_SECONDS):
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code") or 500)
                raise ApiException(status=code, reason=str(obj.get("message") or ""))
            version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self.mirror.apply(self.kind, str(kind), obj)
            if version:
                self.resource_version = version
            if self.stop.is_set():
                return
