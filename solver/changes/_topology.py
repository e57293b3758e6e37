"""The job's required topology made a preference, in the words of the dialect that asked:

    Koordinator   gatherStrategy MustGather          -> PreferGather
    Volcano       networkTopology mode hard          -> soft
    KAI           requiredTopologyLevel L            -> preferredTopologyLevel L (its own
                                                        preferred level stays the finer one)
    Godel         podGroupAffinity required terms    -> preferred terms, ahead of its own
    Kueue         podset-required-topology: L        -> podset-preferred-topology: L
    Workload API  schedulingConstraints.topology     -> left out (the API has no preference)

A gang carries at most one of these (each dialect reads its own objects); the first that
applies is tried, and offered when the gang runs with it. Its size is 1: a rule relaxed,
not a quantity.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from solver.changes._base import SPEC, Change, Runs, Sized
from solver.decision import Certificate
from solver.model import KUEUE_ANNOTATIONS, Gang, parse_job_affinity
from solver.snapshot import Delta, Snapshot

Relax = Callable[[Snapshot, Gang], tuple[str, Delta] | None]
"""One dialect's relaxation of a gang's required topology: (the change's words, the delta),
None when the gang has no such rule."""


def _gang(g: Gang, **update: object) -> Delta:
    return Delta(upsert_gangs=(g.model_copy(update=update),))


def _koordinator(snapshot: Snapshot, g: Gang) -> tuple[str, Delta] | None:
    if "MustGather" not in g.annotations.get(SPEC, ""):
        return None
    try:
        spec = json.loads(g.annotations[SPEC])
    except ValueError:
        return None
    rules = spec.get("gatherStrategy") if isinstance(spec, dict) else None
    if not isinstance(rules, list):  # not acted on by the reader either (a note says so)
        return None
    for rule in rules:
        if isinstance(rule, dict) and rule.get("strategy") == "MustGather":
            rule["strategy"] = "PreferGather"
    annotations = {**g.annotations, SPEC: json.dumps(spec)}
    return "PreferGather instead of MustGather", _gang(g, annotations=annotations)


def _volcano(snapshot: Snapshot, g: Gang) -> tuple[str, Delta] | None:
    nt = g.network_topology
    if nt is None or nt.mode != "hard":
        return None
    soft = nt.model_copy(update={"mode": "soft"})
    return "networkTopology mode soft instead of hard", _gang(g, network_topology=soft)


def _required_level(snapshot: Snapshot, g: Gang) -> tuple[str, Delta] | None:
    """KAI's requiredTopologyLevel (a preference: coarsest first, ahead of its own), or the
    Workload API's topology constraint (left out: the API has no preferred form)."""
    key = g.topology_key
    if not key:
        return None
    if g.dialect == "scheduling.k8s.io":
        return f"without schedulingConstraints.topology {key}", _gang(g, topology_key=None)
    preferred = (key, *g.preferred_keys)
    text = f"preferredTopologyLevel {key} instead of requiredTopologyLevel"
    return text, _gang(g, topology_key=None, preferred_keys=preferred)


def _godel(snapshot: Snapshot, g: Gang) -> tuple[str, Delta] | None:
    try:
        affinity = parse_job_affinity(g.affinity)
    except ValueError:
        return None
    if affinity is None or not affinity.required or g.affinity is None:
        return None
    body = dict(g.affinity["podGroupAffinity"])
    required = body.pop("required", None) or []
    body["preferred"] = [*required, *(body.get("preferred") or [])]
    keys = ", ".join(affinity.required)
    text = f"podGroupAffinity preferred instead of required ({keys})"
    return text, _gang(g, affinity={**g.affinity, "podGroupAffinity": body})


def _kueue(snapshot: Snapshot, g: Gang) -> tuple[str, Delta] | None:
    required, preferred = KUEUE_ANNOTATIONS.REQUIRED, KUEUE_ANNOTATIONS.PREFERRED
    pods = [p for p in snapshot.pending.values() if p.gang == g.id and required in p.annotations]
    if not pods:
        return None
    relaxed = tuple(
        p.model_copy(update={"annotations": {
            **{k: v for k, v in p.annotations.items() if k != required},
            preferred: p.annotations[required],
        }})
        for p in pods
    )  # fmt: skip
    return "podset-preferred-topology instead of podset-required-topology", Delta(
        upsert_pods=relaxed
    )


RELAXATIONS: tuple[Relax, ...] = (_koordinator, _volcano, _required_level, _godel, _kueue)


def _topology(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    g = snapshot.gangs.get(gang)
    if g is None:
        return None
    for relax in RELAXATIONS:
        found = relax(snapshot, g)
        if found is None:
            continue
        text, delta = found
        return (Change("topology", text, 1, gang), delta) if runs(delta) else None
    return None
