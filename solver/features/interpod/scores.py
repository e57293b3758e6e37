"""kube-scheduler's InterPodAffinity and PodTopologySpread scores, against the running pods.

InterPodAffinity (interpodaffinity/scoring.go): per topology pair, the sum over running
pods in that domain of the incoming pod's preferred affinity weights (+) and preferred
anti-affinity weights (−) whose terms select them, plus, for running pods whose terms
select the incoming pod, their required affinity terms (hardPodAffinityWeight, 1), their
preferred affinity weights (+) and preferred anti-affinity weights (−); a node scores the
sum over its labels' pairs; NormalizeScore maps [min, max] over the nodes to [0, 100].

PodTopologySpread (podtopologyspread/scoring.go): per `ScheduleAnyway` constraint, the
matching pods of the domain (of the pod's namespace, not terminating, on counted nodes)
× log(domains + 2) + maxSkew − 1, summed and rounded; nodes without every key are
ignored (0); NormalizeScore gives 100 · (max + min − s) / max, 100 when max is 0.

Only running pods count here: the call's own pods do not score each other (a preference,
never a violation).
"""

from __future__ import annotations

import math

import numpy as np

from solver.features._base import CompileContext
from solver.features.interpod._compile import included_nodes
from solver.features.interpod._match import (
    domains_of,
    nodes_with_terms,
    running_counts,
    term_matches,
)
from solver.model import Pod, PodAffinityTerm
from solver.problem import BoolArray, IntArray

__all__ = ["HARD_POD_AFFINITY_WEIGHT", "inter_pod_affinity_scores", "spread_scores"]

HARD_POD_AFFINITY_WEIGHT = 1  # InterPodAffinityArgs default


def _per_node(ctx: CompileContext, term: PodAffinityTerm, per_node: IntArray) -> IntArray:
    """A per-node count summed over each node's domain of `term`'s key, read at every node."""
    dom = domains_of(ctx.nodes, term.topology_key)
    totals = np.append(dom.per_domain(per_node), 0)
    return totals[np.where(dom.of_node >= 0, dom.of_node, len(dom))]


def inter_pod_affinity_scores(ctx: CompileContext, pod: Pod, usable: BoolArray) -> IntArray | None:
    """[N] normalised InterPodAffinity score of `pod`, None when nothing scores."""
    raw = np.zeros(len(ctx.nodes), dtype=np.int64)
    touched = False
    terms = pod.inter_pod
    if terms is not None:
        for sign, weighted in ((1, terms.preferred_affinity), (-1, terms.preferred_anti_affinity)):
            for w in weighted:
                counts = running_counts(ctx.snapshot, ((w.term.selector, w.term.namespaces),))
                raw += sign * w.weight * _per_node(ctx, w.term, counts)
                touched = True
    hosts, term_ids = nodes_with_terms(ctx.snapshot)
    sets = ctx.snapshot.running.term_sets
    for ident in np.unique(term_ids).tolist():
        theirs = sets[ident]
        pods_per_node = np.bincount(hosts[term_ids == ident], minlength=len(ctx.nodes))
        scored = [
            *((HARD_POD_AFFINITY_WEIGHT, t) for t in theirs.affinity),
            *((w.weight, w.term) for w in theirs.preferred_affinity),
            *((-w.weight, w.term) for w in theirs.preferred_anti_affinity),
        ]
        for weight, term in scored:
            if term_matches(term, pod):
                raw += weight * _per_node(ctx, term, pods_per_node)
                touched = True
    if not touched or not usable.any():
        return None
    low, high = int(raw[usable].min()), int(raw[usable].max())
    if high == low:
        return None
    out: IntArray = (100 * (raw - low) // (high - low)).astype(np.int64)
    return out


def spread_scores(ctx: CompileContext, pod: Pod, usable: BoolArray) -> IntArray | None:
    """[N] normalised PodTopologySpread score of `pod`'s ScheduleAnyway constraints."""
    soft = [c for c in pod.spread if c.when_unsatisfiable == "ScheduleAnyway"]
    if not soft:
        return None
    keyed = np.ones(len(ctx.nodes), dtype=bool)
    for c in soft:
        keyed &= domains_of(ctx.nodes, c.topology_key).of_node >= 0
    considered = keyed & usable
    if not considered.any():
        return None
    raw = np.zeros(len(ctx.nodes), dtype=np.float64)
    for c in soft:
        dom = domains_of(ctx.nodes, c.topology_key)
        counted = keyed & included_nodes(ctx, pod, c)
        per_node = running_counts(ctx.snapshot, ((c.selector, (pod.namespace,)),), spread=True)
        per_domain = np.append(dom.per_domain(np.where(counted, per_node, 0)), 0)
        at_node = per_domain[np.where(dom.of_node >= 0, dom.of_node, len(dom))]
        if c.topology_key == "kubernetes.io/hostname":
            size = int(considered.sum())
            at_node = np.where(counted, per_node, 0)
        else:
            size = len(np.unique(dom.of_node[considered]))
        raw += at_node * math.log(size + 2) + (c.max_skew - 1)
    score = np.round(raw).astype(np.int64)
    high, low = int(score[considered].max()), int(score[considered].min())
    if high == 0:
        return None  # every node scores 100: a constant
    out: IntArray = np.where(considered, 100 * (high + low - score) // high, 0).astype(np.int64)
    return out
