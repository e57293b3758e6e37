"""The request layer: the client's credentials on every request, asked of the client at
most every AUTH_SECONDS (a refreshed token is picked up within that)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clients.kubefake import kubeconfig_for
from clients.scheduler import kube
from clients.scheduler.kube import connect


def test_every_request_carries_the_client_s_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = kubeconfig_for("http://127.0.0.1:1")
    config["users"][0]["user"]["token"] = "s3cret"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    api = connect(str(path))
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
