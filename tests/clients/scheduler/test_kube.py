"""The request layer: the client's credentials on every request, asked of the client at
most every AUTH_SECONDS (a refreshed token is picked up within that); requests through the
client's own connection pool, or its REST layer behind a proxy."""

from __future__ import annotations

import io
import ssl
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import urllib3
import yaml

from clients.kubefake import FakeApiServer, default_resources, kubeconfig_for
from clients.scheduler import kube
from clients.scheduler.kube import KubeApi, connect
from tests.clients.scheduler.conftest import Harness, node, pod
from tests.server.conftest import Certs, certs  # noqa: F401 (the fixture)


def _connect(tmp_path: Path, config: dict[str, Any]) -> KubeApi:
    """The request layer over `config`, written as a kubeconfig file."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return connect(str(path))


def test_every_request_carries_the_client_s_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = kubeconfig_for("http://127.0.0.1:1")
    config["users"][0]["user"]["token"] = "s3cret"
    api = _connect(tmp_path, config)
    asked = 0
    original = api.api_client.update_params_for_auth

    def counting(*args: object, **kwargs: object) -> None:
        nonlocal asked
        asked += 1
        original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(api.api_client, "update_params_for_auth", counting)
    clock = [100.0]
    monkeypatch.setattr(kube.time, "monotonic", lambda: clock[0])
    assert api._headers()["authorization"] == "Bearer s3cret"
    assert "User-Agent" in api._headers()
    assert asked == 1  # cached
    # the kubeconfig loader's hook refreshes an expiring token when the client is asked
    api.api_client.configuration.refresh_api_key_hook = lambda conf: conf.api_key.update(
        {"BearerToken": "Bearer rotated"}
    )
    assert api._headers()["authorization"] == "Bearer s3cret"  # not asked again yet
    clock[0] += kube.AUTH_SECONDS
    assert api._headers()["authorization"] == "Bearer rotated" and asked == 2


def test_requests_go_through_the_client_s_own_connection_pool(
    cluster: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request skips the client's REST wrapper but not its transport: the pool is the one
    the client's PoolManager keeps for the API server (its TLS settings, size, retries)."""
    cluster.create(node("n1"), pod("p1"))
    api = cluster.kube()
    manager = api.api_client.rest_client.pool_manager
    assert api._pool is manager.connection_from_url(api.api_client.configuration.host)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the REST wrapper was used")

    monkeypatch.setattr(api.api_client.rest_client, "request", refuse)
    assert [n["metadata"]["name"] for n in api.request("GET", "/api/v1/nodes")["items"]] == ["n1"]
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p1", "namespace": "default"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }
    api.request("POST", "/api/v1/namespaces/default/pods/p1/binding", body=binding)
    assert cluster.bound() == {"p1": "n1"}
    with pytest.raises(kube.ApiException) as err:
        api.request("GET", "/api/v1/namespaces/default/pods/nope")
    assert err.value.status == 404
    rv = api.request("GET", "/api/v1/pods")["metadata"]["resourceVersion"]
    stream = api.watch("/api/v1/pods", rv, timeout_seconds=5)
    cluster.create(pod("p2"))
    event = next(e for e in stream if e["type"] != "BOOKMARK")
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "p2")
    stream.close()  # left mid-stream: its connection is closed, not put back dirty
    assert api.request("GET", "/api/v1/nodes")["items"]  # the pool still serves
    api.close()


def test_behind_a_proxy_the_client_s_rest_layer_sends_and_a_host_path_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = kubeconfig_for("http://127.0.0.1:1/k8s/clusters/c1")
    config["clusters"][0]["cluster"]["proxy-url"] = "http://127.0.0.1:2"
    api = _connect(tmp_path, config)
    assert api._pool is None  # a ProxyManager: the client sends each request whole
    sent: list[tuple[str, str, object]] = []

    def record(method: str, url: str, **kw: object) -> object:
        sent.append((method, url, kw["body"]))
        raw = urllib3.HTTPResponse(body=io.BytesIO(b'{"kind": "Pod"}'), status=200)
        return SimpleNamespace(response=raw)

    monkeypatch.setattr(api.api_client.rest_client, "request", record)
    assert api.request("PATCH", "/api/v1/namespaces/a b/pods/p", body={"x": 1}) == {"kind": "Pod"}
    assert sent == [
        ("PATCH", "http://127.0.0.1:1/k8s/clusters/c1/api/v1/namespaces/a%20b/pods/p", {"x": 1})
    ]
    # without a proxy, the pool gets the host's path before the API path
    api = _connect(tmp_path, kubeconfig_for("http://127.0.0.1:1/k8s/clusters/c1"))
    assert api._pool is not None
    seen: list[str] = []

    def urlopen(method: str, url: str, **kw: object) -> urllib3.HTTPResponse:
        seen.append(url)
        return urllib3.HTTPResponse(body=io.BytesIO(b"{}"), status=200, preload_content=False)

    monkeypatch.setattr(api._pool, "urlopen", urlopen)
    api.request("GET", "/api/v1/pods", query=[("watch", "true")])
    assert seen == ["/k8s/clusters/c1/api/v1/pods?watch=true"]


def test_mutual_tls_through_the_client_s_pool(
    tmp_path: Path,
    certs: Certs,  # noqa: F811 (the fixture)
) -> None:
    """Over TLS the pool is the client's HTTPS pool: the server is checked against the
    kubeconfig's CA and the client presents its certificate; a client certificate from
    another CA is refused by the server."""
    fake = FakeApiServer(default_resources())
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(certs.ca))
    tls.load_cert_chain(str(certs.server_cert), str(certs.server_key))
    tls.verify_mode = ssl.CERT_REQUIRED
    fake.httpd.socket = tls.wrap_socket(fake.httpd.socket, server_side=True)
    fake.start()
    try:
        fake.store.create("", "nodes", "", {"metadata": {"name": "n1"}})
        url = f"https://127.0.0.1:{fake.port}"

        def config(cert: Path, key: Path) -> dict[str, Any]:
            out = kubeconfig_for(url)
            out["clusters"][0]["cluster"]["certificate-authority"] = str(certs.ca)
            out["users"][0]["user"] = {"client-certificate": str(cert), "client-key": str(key)}
            return out

        api = _connect(tmp_path, config(certs.client_cert, certs.client_key))
        assert isinstance(api._pool, urllib3.HTTPSConnectionPool)
        nodes = api.request("GET", "/api/v1/nodes")["items"]
        assert [n["metadata"]["name"] for n in nodes] == ["n1"]
        api.close()
        rogue = _connect(tmp_path, config(certs.rogue_cert, certs.rogue_key))
        with pytest.raises(urllib3.exceptions.HTTPError):
            rogue.request("GET", "/api/v1/nodes", timeout=5.0)
        rogue.close()
    finally:
        fake.stop()
