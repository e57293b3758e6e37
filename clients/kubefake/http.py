"""The fake API server's HTTP face: the Kubernetes REST paths a scheduler uses.

    GET  /api, /apis, /api/v1, /apis/G/V                     discovery
    GET  .../[namespaces/NS/]PLURAL[?watch=true&resourceVersion=R&allowWatchBookmarks=true
                                     &timeoutSeconds=S]      list, watch
    GET/PUT/PATCH/DELETE .../PLURAL/NAME[/status]             one object
    POST .../PLURAL                                           create
    POST /api/v1/namespaces/NS/pods/NAME/binding              bind
    POST /api/v1/namespaces/NS/pods/NAME/eviction             evict (PodDisruptionBudgets: 429)
    GET  /fake/stats[?count]                                  pod creation and bind times
                                                              (?count: how many created, bound)

Watches stream one JSON event per line (chunked), send a BOOKMARK about every second when
asked, and end with an ERROR event carrying a `410 Gone` Status for a resourceVersion older
than the retained history, as the real server does. Field and label selectors: equality
(`=`, `==`, `!=`) and, for labels, existence (`key`, `!key`), as kubectl's `describe` and
`-l` use them. Not implemented: set-based selectors (`in`, `notin`), paging
(`limit`/`continue`), server-side apply, JSON patch, Table output (kubectl prints names and
ages only), protobuf encoding, authentication and admission.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from clients.kubefake.store import ApiError, Resource, Store

__all__ = ["FakeApiServer"]

BOOKMARK_EVERY = 1.0
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
MAX_BODY = 64 << 20


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-request (a scheduler stopped) is not an error; any
        other exception still prints its traceback, as `socketserver` does."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeApiServer:
    """A fake API server on 127.0.0.1:`port` (0: any) serving `resources`."""

    def __init__(self, resources: list[Resource], port: int = 0) -> None:
        self.store = Store(resources)
        handler = type("Handler", (_Handler,), {"store": self.store})
        self.httpd = _Server(("127.0.0.1", port), handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> FakeApiServer:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.store.drop_watches()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def _discovery(store: Store, path: str) -> dict[str, Any] | None:
    served = list(store.resources.values())
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    if path == "/apis":
        groups: dict[str, list[str]] = {}
        for r in served:
            if r.kind.group:
                versions = groups.setdefault(r.kind.group, [])
                if r.version not in versions:
                    versions.append(r.version)
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                    "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
                }
                for g, vs in sorted(groups.items())
            ],
        }
    parts = path.strip("/").split("/")
    if (parts[0] == "api" and len(parts) == 2) or (parts[0] == "apis" and len(parts) == 3):
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        resources = [r for r in served if r.kind.group == group and r.version == version]
        if not resources:
            return None
        listed = [
            {
                "name": name,
                "namespaced": r.kind.namespaced,
                "kind": kind,
                "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
            }
            for r in resources
            for name, kind in (
                (r.kind.plural, r.kind.kind),
                (f"{r.kind.plural}/status", r.kind.kind),
                *([("pods/binding", "Binding")] if r.kind.plural == "pods" else []),
            )
        ]
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": listed,
        }
    return None


def _selector(query: dict[str, list[str]]) -> Any:
    """`fieldSelector` and `labelSelector` as a predicate: comma-separated `key=value`,
    `key==value` and `key!=value` requirements (fields as dotted paths, e.g.
    `involvedObject.name`, `spec.nodeName`), and for labels also `key` and `!key`."""
    checks: list[Any] = []
    for name in ("fieldSelector", "labelSelector"):
        for part in filter(None, (query.get(name, [""])[0] or "").split(",")):
            negate = "!=" in part
            key, _, want = part.replace("!=", "=").replace("==", "=").partition("=")
            key = key.strip()
            if name == "labelSelector" and not _:
                exists = not key.startswith("!")
                label = key.lstrip("!")
                checks.append(
                    lambda o, k=label, e=exists: (
                        (k in ((o.get("metadata") or {}).get("labels") or {})) == e
                    )
                )
                continue
            path = ["metadata", "labels", key] if name == "labelSelector" else key.split(".")
            value = want.strip()
            checks.append(lambda o, p=path, w=value, n=negate: (_dig(o, p) == w) != n)
    return lambda obj: all(check(obj) for check in checks)


def _dig(obj: Any, path: list[str]) -> str:
    for part in path:
        obj = obj.get(part) if isinstance(obj, dict) else None
    return "" if obj is None else str(obj)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as written, not 40 ms later
    store: Store

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # ---------------------------------------------------------------- plumbing

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ApiError(413, "RequestEntityTooLarge", "request body too large")
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw)
        except ValueError as err:
            raise ApiError(400, "BadRequest", f"invalid JSON: {err}") from None
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body must be a JSON object")
        return body

    def _route(self, method: str) -> None:
        store = self.store
        url = urlsplit(self.path)
        if url.path.endswith("/binding"):
            store.counts["BIND_STARTED"] = store.counts.get("BIND_STARTED", 0) + 1
        try:
            store.sleep_latency(url.path)
            injected = store.faults.take(method, url.path)
            if injected is not None:
                if method in ("POST", "PUT", "PATCH"):
                    self._body()
                raise ApiError(injected, "InternalError", "injected fault")
            if url.path == "/fake/stats" and method == "GET":  # the benchmark's measurements
                stats: dict[str, Any]
                with store.cond:
                    if url.query == "count":  # cheap enough to poll while the scheduler works
                        bound = sum(1 for b in store.binds if b[2] == 201)
                        stats = {"created": len(store.created_at), "bound": bound}
                    else:
                        stats = {
                            "created": dict(store.created_at),
                            "binds": list(store.binds),
                            "evictions": list(store.evictions),
                        }
                self._send(200, stats)
                return
            found = _discovery(store, url.path) if method == "GET" else None
            if found is not None:
                self._send(200, found)
                return
            self._resource(method, url.path, parse_qs(url.query))
        except ApiError as err:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(err.code, err.status())
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            verb = "BIND" if url.path.endswith("/binding") else method
            store.counts[verb] = store.counts.get(verb, 0) + 1

    def _resource(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", f"the server could not find {path}")
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        plural, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2:] or [""]
        self._audit(method, group, plural, name, sub[0], query)
        res = self.store.resource(group, plural)
        if res.version != version:
            raise ApiError(404, "NotFound", f"the server could not find {path}")
        ns = namespace or ""
        store = self.store
        if not name:
            if method == "GET" and query.get("watch", [""])[0] in ("true", "1"):
                self._watch(res, namespace, query)
            elif method == "GET":
                items, rv = store.list_objects(group, plural, namespace)
                selector = _selector(query)
                items = [o for o in items if selector(o)]
                self._send(
                    200,
                    {
                        "kind": f"{res.kind.kind}List",
                        "apiVersion": res.api_version,
                        "metadata": {"resourceVersion": str(rv)},
                        "items": items,
                    },
                )
            elif method == "POST":
                self._send(201, store.create(group, plural, ns, self._body()))
            else:
                raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on a list")
            return
        if sub[0] == "binding" and plural == "pods" and method == "POST":
            target = self._body().get("target") or {}
            if not target.get("name"):
                raise ApiError(422, "Invalid", "target.name: Required value")
            store.bind(ns, name, str(target["name"]))
            self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success"})
        elif sub[0] == "eviction" and plural == "pods" and method == "POST":
            self._body()
            store.evict(ns, name)
            self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success"})
        elif sub[0] not in ("", "status"):
            raise ApiError(404, "NotFound", f"the server could not find {path}")
        elif method == "GET":
            self._send(200, store.get(group, plural, ns, name))
        elif method == "PUT":
            self._send(200, store.update(group, plural, ns, name, self._body()))
        elif method == "PATCH":
            kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if kind not in (
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            ):
                raise ApiError(415, "UnsupportedMediaType", f"the fake does not take {kind!r}")
            patched = store.patch(group, plural, ns, name, self._body(), status=sub[0] == "status")
            self._send(200, patched)
        elif method == "DELETE":
            self._send(200, store.delete(group, plural, ns, name))
        else:
            raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed")

    def _audit(
        self, method: str, group: str, plural: str, name: str, sub: str, query: dict[str, list[str]]
    ) -> None:
        """Count the request as RBAC sees it: (user agent, verb, group, resource[/sub])."""
        if method == "GET":
            watch = query.get("watch", [""])[0] in ("true", "1")
            verb = "get" if name else ("watch" if watch else "list")
        else:
            verb = _VERBS.get(method, method.lower())
        resource = f"{plural}/{sub}" if sub else plural
        key = (self.headers.get("User-Agent") or "", verb, group, resource)
        with self.store.cond:
            self.store.audit[key] = self.store.audit.get(key, 0) + 1

    def _watch(self, res: Resource, namespace: str | None, query: dict[str, list[str]]) -> None:
        store = self.store
        try:
            since = int(query.get("resourceVersion", ["0"])[0] or 0)
        except ValueError:
            raise ApiError(400, "BadRequest", "resourceVersion must be an integer") from None
        timeout = float(query.get("timeoutSeconds", ["1800"])[0] or 1800)
        bookmarks = query.get("allowWatchBookmarks", [""])[0] == "true"
        selector = _selector(query)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        key = (res.kind.group, res.kind.plural)
        deadline = time.monotonic() + timeout
        last_mark = time.monotonic()
        with store.cond:
            generation = store.faults.watch_generation
            if since == 0:
                since = store.rv  # "0": start from now (the scheduler always lists first)
            if since + 1 < store.oldest:
                gone = ApiError(410, "Expired", f"too old resource version: {since}")
                self._chunk({"type": "ERROR", "object": gone.status()})
                self._chunk(None)
                return
        while True:
            with store.cond:
                events = store.events_after(key, since, namespace)
                if not events:
                    store.wait(key, 0.2)
                    events = store.events_after(key, since, namespace)
                dropped = store.faults.watch_generation != generation
                current = store.rv
            if dropped:  # the stream breaks without its closing chunk
                self.close_connection = True
                return
            for version, kind, obj in events:
                if selector(obj):
                    self._chunk({"type": kind, "object": obj})
                since = version
            now = time.monotonic()
            if bookmarks and now - last_mark >= BOOKMARK_EVERY:
                since = max(since, current)
                mark: dict[str, Any] = {"kind": res.kind.kind, "apiVersion": res.api_version}
                mark["metadata"] = {"resourceVersion": str(since)}
                self._chunk({"type": "BOOKMARK", "object": mark})
                last_mark = now
            if now >= deadline:
                self._chunk(None)
                return

    def _chunk(self, event: dict[str, Any] | None) -> None:
        if event is None:
            self.wfile.write(b"0\r\n\r\n")
            return
        data = json.dumps(event, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PUT(self) -> None:
        self._route("PUT")

    def do_PATCH(self) -> None:
        self._route("PATCH")

    def do_DELETE(self) -> None:
        self._route("DELETE")
