"""A Kueue ClusterQueue's quota: the smallest raise of one flavor-resource's nominalQuota."""

from __future__ import annotations

from solver.changes._base import Change, Runs, Sized, _smallest
from solver.decision import Certificate
from solver.model import KueueQueue, Queue, cluster_queue_flavors, flavor_resource
from solver.quantity import PODS, format_quantity
from solver.snapshot import Delta, Snapshot


def _kueue_quota(
    snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs
) -> Sized | None:
    """A gang Kueue refused admission: for each resource it asks for, in its ClusterQueue's
    flavors in Kueue's order, the smallest raise of that flavor's nominalQuota (searched up
    to what the gang asks) after which it is admitted and runs."""
    if cert is None or cert.kind != "blocked" or cert.constraint != "enqueue":
        return None
    pods = [p for p in snapshot.pending.values() if p.gang == gang]
    if (
        not pods
        or cluster_queue_flavors(snapshot.queues, pods[0].labels, pods[0].namespace) is None
    ):
        return None
    local = snapshot.queues[
        f"{pods[0].namespace}/{pods[0].labels['kueue.x-k8s.io/queue-name'].strip()}"
    ]
    cq = snapshot.queues[local.parent or ""]
    assert cq.kueue is not None
    asked: dict[str, int] = {}
    for p in pods:
        for r, v in p.requests.items():
            if v > 0 and r != PODS:
                asked[r] = asked.get(r, 0) + v
    for r in sorted(asked):
        for group in cq.kueue.groups:
            if r not in group.covered:
                continue
            for flavor in group.flavors:
                found = _raise(cq, flavor.name, r, asked[r], runs)
                if found is not None:
                    return found
    return None


def _raise(cq: Queue, flavor: str, resource: str, top: int, runs: Runs) -> Sized | None:
    assert cq.kueue is not None
    spec: KueueQueue = cq.kueue

    def raised(by: int) -> Delta:
        groups = tuple(
            g.model_copy(update={"flavors": tuple(
                f.model_copy(update={"resources": {
                    **f.resources,
                    resource: f.resources[resource].model_copy(
                        update={"nominal": f.resources[resource].nominal + by}),
                }}) if f.name == flavor and resource in f.resources else f
                for f in g.flavors
            )})
            for g in spec.groups
        )  # fmt: skip
        return Delta(
            upsert_queues=(
                cq.model_copy(update={"kueue": spec.model_copy(update={"groups": groups})}),
            )
        )

    if not runs(raised(top)):
        return None
    by = _smallest(lambda x: runs(raised(x)), top)
    if by is None:
        return None
    dim = flavor_resource(flavor, resource)
    text = f"+{format_quantity(resource, by)} {resource} nominalQuota on ClusterQueue {cq.name} (flavor {flavor})"
    return Change("quota", text, by, cq.name, dim), raised(by)
