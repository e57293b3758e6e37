"""The API server through the official Kubernetes client (`kubernetes.client.ApiClient`):
its configuration (kubeconfig or in-cluster service account), authentication, TLS and
connection pool, used at its generic request layer (as client-go's dynamic client is) so
that one code path serves every kind, and bodies stay JSON dicts: the typed models cost
about a millisecond a pod to build, and gangplan's reader wants the dicts anyway.

A request goes straight to the client's own connection pool for the API server (the one
its `PoolManager` keeps for that host, with the client's TLS settings, pool size and
retries): the layers above it (`RESTClientObject.request`, the `PoolManager`'s URL parsing
and pool lookup, urllib3's body encoding) cost a third of a bind's CPU and do nothing for
a JSON request to one known host. Behind a proxy the client's own `request` takes each
request whole, as before.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from clients.scheduler.kinds import Kind
from gangplan import __version__

__all__ = ["ApiException", "KubeApi", "connect", "now_rfc3339", "path_of"]

Obj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
USER_AGENT = f"gangplan-scheduler/{__version__}"
AUTH_SECONDS = 10.0  # a refreshed credential (an exec plugin's token) is used within this


def now_rfc3339() -> str:
    """Now, as Kubernetes writes times (RFC 3339, seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def connect(kubeconfig: str | None, *, pool: int = 64, context: str | None = None) -> KubeApi:
    """`kubeconfig` (a file), else the in-cluster service account, else ~/.kube/config.
    `pool` connections: one per watched kind, plus the binds and reports in flight."""
    conf = k8s.Configuration()
    if kubeconfig:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            kubeconfig, context=context, client_configuration=conf
        )
    else:
        try:
            k8s_config.load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
        except k8s_config.ConfigException:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                context=context, client_configuration=conf
            )
    conf.connection_pool_maxsize = pool
    api = k8s.ApiClient(conf)
    api.user_agent = USER_AGENT  # what audit logs and the API server's metrics show
    return KubeApi(api)


def path_of(kind: Kind, version: str, namespace: str | None = None, name: str = "") -> str:
    base = f"/apis/{kind.group}/{version}" if kind.group else f"/api/{version}"
    if namespace is not None and kind.namespaced:
        base += f"/namespaces/{namespace}"
    base += f"/{kind.plural}"
    return f"{base}/{name}" if name else base


class KubeApi:
    """JSON requests and watch streams through one ApiClient."""

    def __init__(self, api_client: k8s.ApiClient) -> None:
        self.api_client = api_client
        self._auth: dict[str, str] = {}
        self._auth_until = 0.0
        self._timeouts: dict[float | tuple[float, float] | None, urllib3.Timeout] = {}
        host = api_client.configuration.host
        manager = api_client.rest_client.pool_manager
        # the client's pool for the API server, or None behind a proxy (a ProxyManager)
        self._pool: urllib3.HTTPConnectionPool | None = (
            manager.connection_from_url(host) if type(manager) is urllib3.PoolManager else None
        )
        # a host with a path (an API behind a gateway): before every request's path, as sent
        self._prefix = (urllib3.util.parse_url(host).path or "").rstrip("/")

    def close(self) -> None:
        self.api_client.close()  # type: ignore[no-untyped-call]

    def _headers(self) -> dict[str, str]:
        """The client's default and authentication headers, asked of the client at most
        every AUTH_SECONDS (its kubeconfig loader may refresh a token on each ask)."""
        now = time.monotonic()
        if now >= self._auth_until:
            headers: dict[str, str] = dict(self.api_client.default_headers)
            self.api_client.update_params_for_auth(headers, [], ["BearerToken"], "", "", None)
            self._auth, self._auth_until = headers, now + AUTH_SECONDS
        return self._auth

    def _send(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | tuple[float, float] | None = 30.0,
    ) -> urllib3.BaseHTTPResponse:
        """The request, its body unread: through the client's connection pool for the API
        server, or (behind a proxy) the client's REST layer. URL and headers are built here,
        not per call by `param_serialize` (a fifth of the client's cost per write)."""
        headers = {**self._headers(), "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        target = quote(path)
        if query:
            target += "?" + urlencode(query)
        if self._pool is None:
            rest = self.api_client.rest_client.request(  # type: ignore[no-untyped-call]
                method,
                self.api_client.configuration.host + target,
                headers=headers,
                body=body,
                _request_timeout=timeout,
            )
            out: urllib3.BaseHTTPResponse = rest.response
            return out
        if (limit := self._timeouts.get(timeout)) is None:
            limit = self._timeouts[timeout] = (
                urllib3.Timeout(total=timeout)
                if not isinstance(timeout, tuple)
                else urllib3.Timeout(connect=timeout[0], read=timeout[1])
            )
        return self._pool.urlopen(
            method,
            self._prefix + target,
            body=None if body is None else json.dumps(body).encode(),
            headers=headers,
            timeout=limit,
            preload_content=False,
            redirect=False,
        )

    def request(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> Obj:
        """The JSON answer; ApiException for a non-2xx status (its `status` the code)."""
        resp = self._send(method, path, query, body, content_type, timeout)
        try:
            data = resp.data
        finally:
            resp.release_conn()
        if not 200 <= resp.status < 300:
            raise ApiException(
                status=resp.status, reason=resp.reason, body=data.decode(errors="replace")
            )
        out: Obj = json.loads(data) if data else {}
        return out

    def watch(self, path: str, resource_version: str, timeout_seconds: int) -> Iterator[Obj]:
        """Watch events (dicts with `type` and `object`) from `resource_version`; ends when
        the server closes the stream."""
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        resp = self._send("GET", path, query, timeout=(10.0, timeout_seconds + 30.0))
        ended = False
        try:
            if not 200 <= resp.status < 300:
                raise ApiException(
                    status=resp.status, reason=resp.reason, body=resp.data.decode(errors="replace")
                )
            for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
                if line:
                    yield json.loads(line)
            ended = True
        finally:
            if not ended:  # left mid-stream: the connection has unread events, not reused
                resp.close()
            resp.release_conn()

    def discover(self) -> dict[str, list[str]]:
        """API group -> versions served (`""` -> ["v1"])."""
        groups = self.request("GET", "/apis").get("groups") or []
        out = {"": ["v1"]}
        for g in groups:
            out[str(g.get("name"))] = [str(v.get("version")) for v in g.get("versions") or []]
        return out
