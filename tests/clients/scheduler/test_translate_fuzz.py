"""Hostile objects from the cluster: whatever a watch delivers, the delta is built, a bad
object is refused with one line naming it and its field, and the good ones are read."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from clients.scheduler.kinds import KINDS
from clients.scheduler.mirror import Mirror
from clients.scheduler.translate import translate
from tests.clients.scheduler.conftest import node, pod, pod_group

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
PATHS = [
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("spec", "containers"),
    ("spec", "priority"),
    ("spec", "nodeSelector"),
    ("spec", "affinity"),
    ("spec", "tolerations"),
    ("spec", "topologySpreadConstraints"),
    ("spec", "overhead"),
    ("status", "phase"),
]
KIND = {k.kind: k for k in KINDS if k.group in ("", "scheduling.sigs.k8s.io")}


def _set(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        obj = obj.setdefault(part, {}) if isinstance(obj.get(part), dict | None) else obj
    obj[path[-1]] = value


@given(
    st.lists(st.tuples(st.sampled_from(PATHS), JSON), min_size=1, max_size=3),
    st.sampled_from(["ADDED", "MODIFIED"]),
)
def test_a_hostile_pod_is_refused_alone(
    edits: list[tuple[tuple[str, ...], Any]], event: str
) -> None:
    mirror = Mirror(KIND.values())
    mirror.replace(KIND["Node"], [node("a")])
    mirror.replace(KIND["PodGroup"], [pod_group("g", 2)])
    good = [pod("good-0", gang="g"), pod("good-1", gang="g")]
    hostile = pod("hostile", gang="g")
    for path, value in edits:
        _set(hostile, path, value)
    mirror.replace(KIND["Pod"], good)
    mirror.take_changes()
    mirror.apply(KIND["Pod"], event, hostile)
    touched = {**good[0], "metadata": {**good[0]["metadata"], "annotations": {"x": "1"}}}
    mirror.apply(KIND["Pod"], "MODIFIED", touched)
    delta = translate(mirror, mirror.take_changes())
    names = {p.name for p in delta.request.upsert_pods}
    assert "good-0" in names  # changed, and read though a bad pod names its gang
    for refused in delta.refused:
        assert refused.key == ("default", "hostile")
        assert "\n" not in refused.error and "Pod default/hostile" in refused.error
    assert ("hostile" in names) != bool(delta.refused)
