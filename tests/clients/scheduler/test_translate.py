"""What a delta reads: only what changed, plus what the reader needs beside it."""

from __future__ import annotations

from typing import Any

from clients.scheduler.kinds import KINDS
from clients.scheduler.mirror import Mirror
from clients.scheduler.translate import translate
from tests.clients.scheduler.conftest import node, pod, pod_group

KIND = {k.kind: k for k in KINDS if k.group in ("", "scheduling.sigs.k8s.io")}


def _mirror() -> Mirror:
    mirror = Mirror(KIND.values())
    mirror.replace(KIND["Node"], [node("a")])
    mirror.take_changes()
    return mirror


def test_a_gang_without_an_object_is_read_with_all_its_pods() -> None:
    mirror = _mirror()
    volcano = {"scheduling.k8s.io/group-name": "vc"}  # names a PodGroup that is not there
    mirror.apply(KIND["Pod"], "ADDED", pod("vc-0", annotations=volcano))
    first = translate(mirror, mirror.take_changes())
    assert [g.min_member for g in first.request.upsert_gangs] == [1]
    mirror.apply(KIND["Pod"], "ADDED", pod("vc-1", annotations=volcano))
    second = translate(mirror, mirror.take_changes())
    # the second pod re-reads the first: the gang now needs both
    assert sorted(p.name for p in second.request.upsert_pods) == ["vc-0", "vc-1"]
    assert [g.min_member for g in second.request.upsert_gangs] == [2]


def test_a_gang_with_its_object_reads_only_the_new_pod() -> None:
    mirror = _mirror()
    mirror.apply(KIND["PodGroup"], "ADDED", pod_group("g", 3))
    mirror.apply(KIND["Pod"], "ADDED", pod("g-0", gang="g"))
    translate(mirror, mirror.take_changes())
    mirror.apply(KIND["Pod"], "ADDED", pod("g-1", gang="g"))
    delta = translate(mirror, mirror.take_changes())
    assert [p.name for p in delta.request.upsert_pods] == ["g-1"]
    assert [(g.name, g.min_member) for g in delta.request.upsert_gangs] == [("g", 3)]


def test_a_changed_gang_object_re_reads_its_pods_and_a_deleted_one_is_removed() -> None:
    mirror = _mirror()
    mirror.apply(KIND["PodGroup"], "ADDED", pod_group("g", 2))
    for i in range(2):
        mirror.apply(KIND["Pod"], "ADDED", pod(f"g-{i}", gang="g"))
    translate(mirror, mirror.take_changes())
    mirror.apply(KIND["PodGroup"], "MODIFIED", pod_group("g", 1))
    delta = translate(mirror, mirror.take_changes())
    assert sorted(p.name for p in delta.request.upsert_pods) == ["g-0", "g-1"]
    for i in range(2):
        mirror.apply(KIND["Pod"], "DELETED", pod(f"g-{i}", gang="g"))
    mirror.apply(KIND["PodGroup"], "DELETED", pod_group("g", 1))
    delta = translate(mirror, mirror.take_changes())
    assert list(delta.request.remove_gangs) == ["default/g"]
    assert sorted(delta.request.remove_pods) == ["default/g-0", "default/g-1"]


def test_a_status_change_or_our_own_binding_sends_nothing() -> None:
    mirror = _mirror()
    mirror.apply(KIND["Pod"], "ADDED", pod("p"))
    translate(mirror, mirror.take_changes())
    mirror.assume([(("default", "p"), "a", {})])
    bound = pod("p")
    bound["spec"]["nodeName"] = "a"
    bound["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    mirror.apply(KIND["Pod"], "MODIFIED", bound)
    assert not mirror.take_changes()
    assert not mirror.assumed  # the watch confirmed it
    moved = pod("p")
    moved["spec"]["nodeName"] = "b"  # not where we bound it: read again
    mirror.apply(KIND["Pod"], "MODIFIED", moved)
    assert mirror.take_changes()


def test_a_gang_object_s_own_status_re_reads_at_most_the_object() -> None:
    """The scheduler writes a PodGroup's status itself: a condition sends nothing, a new
    phase (which Volcano's enqueue reads) sends the object without re-reading its pods."""
    mirror = _mirror()
    mirror.apply(KIND["PodGroup"], "ADDED", pod_group("g", 2))
    for i in range(2):
        mirror.apply(KIND["Pod"], "ADDED", pod(f"g-{i}", gang="g"))
    translate(mirror, mirror.take_changes())
    written = pod_group("g", 2)
    written["status"] = {"conditions": [{"type": "Unschedulable", "status": "True"}]}
    mirror.apply(KIND["PodGroup"], "MODIFIED", written)
    assert not mirror.take_changes()
    written = {**written, "status": {"phase": "Pending"}}
    mirror.apply(KIND["PodGroup"], "MODIFIED", written)
    delta = translate(mirror, mirror.take_changes())
    assert [p.name for p in delta.request.upsert_pods] == []
    assert [(g.name, g.min_member) for g in delta.request.upsert_gangs] == [("g", 2)]
    # a phase and a spec change together: the pods are read again
    written = {**written, "status": {"phase": "Scheduled"}}
    mirror.apply(KIND["PodGroup"], "MODIFIED", {**written, "spec": {"minMember": 1}})
    mirror.apply(KIND["PodGroup"], "MODIFIED", {**written, "spec": {"minMember": 1}})
    delta = translate(mirror, mirror.take_changes())
    assert sorted(p.name for p in delta.request.upsert_pods) == ["g-0", "g-1"]


def test_kueue_queues_reach_the_snapshot_and_leave_it() -> None:
    """A ClusterQueue (with its ResourceFlavor, read beside it whatever changed) and its
    LocalQueue are upserted as Kueue queues; deleting the LocalQueue removes
    `<namespace>/<name>`."""
    kinds = {k.kind: k for k in KINDS if k.group in ("", "kueue.x-k8s.io")}
    mirror = Mirror(kinds.values())
    mirror.replace(kinds["Node"], [node("a")])
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
              "metadata": {"name": "f"}, "spec": {"nodeLabels": {"pool": "a"}}}  # fmt: skip
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
          "metadata": {"name": "cq"}, "spec": {"resourceGroups": [{"coveredResources": ["cpu"],
          "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}}  # fmt: skip
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": "main", "namespace": "t"}, "spec": {"clusterQueue": "cq"}}  # fmt: skip
    mirror.replace(kinds["ResourceFlavor"], [flavor])
    mirror.take_changes()
    mirror.apply(kinds["ClusterQueue"], "ADDED", cq)
    mirror.apply(kinds["LocalQueue"], "ADDED", lq)
    delta = translate(mirror, mirror.take_changes())
    queues = {q.name: q for q in delta.request.upsert_queues}
    assert queues["cq"].kueue.resource_groups[0].flavors[0].node_labels == {"pool": "a"}
    assert queues["t/main"].parent == "cq"
    mirror.apply(kinds["LocalQueue"], "DELETED", lq)
    delta = translate(mirror, mirror.take_changes())
    assert list(delta.request.remove_queues) == ["t/main"]


def test_the_pending_version_moves_only_when_the_pending_set_does() -> None:
    """A cycle woken by the watch lists the pending pods only when this version moved: a
    pod created, bound by us (assumed), its binding seen, a status condition, an unassume
    and a deletion, each checked against the set itself."""
    mirror = _mirror()
    names = frozenset({"gangplan"})
    steps: list[tuple[str, bool]] = []

    def step(name: str, change: object) -> None:
        before, listed = mirror.pending_version, set(mirror.pending(names))
        if callable(change):
            change()
        moved = set(mirror.pending(names)) != listed
        assert (mirror.pending_version != before) == moved, name
        steps.append((name, moved))

    step("created", lambda: mirror.apply(KIND["Pod"], "ADDED", pod("p")))
    step("a condition", lambda: mirror.apply(KIND["Pod"], "MODIFIED", _with(pod("p"), cond=True)))
    step("assumed", lambda: mirror.assume([(("default", "p"), "a", {})]))
    step("unassumed", lambda: mirror.unassume([("default", "p")]))
    step("assumed again", lambda: mirror.assume([(("default", "p"), "a", {})]))
    step(
        "its binding seen", lambda: mirror.apply(KIND["Pod"], "MODIFIED", _with(pod("p"), node="a"))
    )
    step("second pod", lambda: mirror.apply(KIND["Pod"], "ADDED", pod("q")))
    step("deleted", lambda: mirror.apply(KIND["Pod"], "DELETED", pod("q")))
    assert [moved for _, moved in steps] == [True, False, True, True, True, False, True, True]


def _with(obj: dict[str, Any], *, node: str = "", cond: bool = False) -> dict[str, Any]:
    if node:
        obj["spec"]["nodeName"] = node
    if cond:
        obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]
    return obj
