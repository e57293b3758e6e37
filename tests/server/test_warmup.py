"""The server warms the whole pipeline before it serves: the first user call does not pay
for lazy initialisation, and warming touches no stored snapshot."""

from __future__ import annotations

from typing import Any

from server import Settings, create_server, warmup
from server.warmup import ENGINES, warm_up


def test_start_warms_the_pipeline_before_serving(monkeypatch: Any) -> None:
    order: list[str] = []
    monkeypatch.setattr("server.app.warm_up", lambda: order.append("warm"))
    srv, _ = create_server(Settings(host="127.0.0.1", port=0, metrics_port=None, grace=0.5))
    monkeypatch.setattr(srv.server, "start", lambda: order.append("serve"))
    srv.start()
    assert order == ["warm", "serve"]
    assert len(srv.store) == 0


def test_warming_runs_every_engine_on_its_own_cluster(monkeypatch: Any) -> None:
    engines: list[str] = []
    real = warmup.schedule

    def spy(snapshot: Any, **kw: Any) -> Any:
        engines.append(kw["engine"])
        decision = real(snapshot, **kw)
        assert all(o.placed for o in decision.podgroups.values())  # a real answer, verified
        return decision

    monkeypatch.setattr("server.warmup.schedule", spy)
    warm_up()
    assert tuple(engines) == ENGINES
