"""One package per policy family; `FEATURES` is the order their compile steps run in.

    predicates/   kube-scheduler's node filters (cordon, readiness, taints, selector, affinity)
    interpod/     kube-scheduler's pod affinity, anti-affinity and topology spread
    gang/         PodGroups and GangGroups: minMember shares, match policies (core of the Problem)
    topology/     one network tree: Koordinator gather, Godel job affinity, Kueue TAS,
                  Volcano HyperNodes, the Workload API's topology constraint
    queues/       Volcano hierarchical queues (`capacity`) and the shared quota machinery
    proportion/   Volcano `proportion`: queues share the cluster by weight (deserved water-filled)
    kaishare/     KAI-Scheduler's `proportion`: fair share down a tree of KAI Queues, limits
    kueueshare/   Kueue's ClusterQueues, cohorts, flavors, borrowing and fair sharing
    drf/          Volcano `drf`: jobs in dominant-share order (before the queues order units)
    overcommit/   Volcano `overcommit`: a cluster-wide enqueue rule (overcommit-factor)
    nodegroup/    Volcano queue <-> node-group affinity
    cards/        Volcano GPU card types and their quotas (`capacity-card`)
    devices/      GPU devices shared by fractional pods (always on)
    binpack/      Volcano binpack scoring
    nodeorder/    Volcano nodeorder: kube-scheduler's NodeAffinity and TaintToleration scores
    pdb/          Volcano `pdb`: victims within the PodDisruptionBudgets
    preemption/   Koordinator job-level preemption and Volcano reclaim (after placement)

A feature package holds everything of its policy: the running-pod facts it keeps in the
snapshot (`Feature.facts`), its memoised snapshot state, its compile step into its Problem
block, and its parts of the greedy engine, the CP-SAT engine, the explanation and the
Decision, and a step on the engine's answer (`Feature.greedy`, `.cpsat`, `.explain`,
`.decide`, `.after`; see `_steps.py`). The engines, the explanation, `decide` and `schedule`
iterate over FEATURES and never import a feature by name: adding a policy is adding its
package and one line below (docs/contributing.md).

The order matters where a node fails several filters (the first one is its counted reason),
for the order scores are summed in (nodeorder last, so it normalises over the nodes every
earlier filter leaves), for the order trackers answer in (a node's reason is the first
involved tracker's), and it is the order the CP-SAT modules are built in.
"""

from __future__ import annotations

from solver.features import (
    binpack,
    cards,
    devices,
    drf,
    gang,
    interpod,
    kaishare,
    kueueshare,
    nodegroup,
    nodeorder,
    overcommit,
    pdb,
    predicates,
    preemption,
    proportion,
    queues,
    topology,
)
from solver.features._base import CompileContext, Feature, GangPlan
from solver.snapshot import Fact

__all__ = ["FACTS", "FEATURES", "CompileContext", "Feature", "GangPlan"]

FEATURES: tuple[Feature, ...] = (
    predicates.FEATURE,
    interpod.FEATURE,
    topology.FEATURE,
    drf.FEATURE,
    queues.FEATURE,
    proportion.FEATURE,
    kaishare.FEATURE,
    kueueshare.FEATURE,
    overcommit.FEATURE,
    nodegroup.FEATURE,
    cards.FEATURE,
    devices.FEATURE,
    gang.FEATURE,
    binpack.FEATURE,
    nodeorder.FEATURE,
    pdb.FEATURE,
    preemption.FEATURE,
)

FACTS: tuple[Fact, ...] = tuple(f for feature in FEATURES for f in feature.facts)
"""Every running-pod fact the features read: what a snapshot must keep per running pod."""
