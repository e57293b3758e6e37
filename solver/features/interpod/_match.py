"""Which pods a term selects, and how many of them run in each topology domain.

Matching is kube-scheduler's `PodMatchesTermsNamespaceAndSelector` (affinity terms:
namespace in the term's set, label selector matches) and `countPodsMatchSelector`
(spread: the incoming pod's namespace, terminating pods skipped, an empty selector
counting nothing). Running pods are columns: a selector is evaluated once per distinct
label set of the snapshot's lineage (`RunningPods.label_set_verdicts`), a term's count per
node once per snapshot generation (`Snapshot.memo`), so a call pays numpy over the rows
at most once per distinct term and generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np

from solver.model import LabelSelector, Pod, PodAffinityTerm
from solver.problem import BoolArray, IntArray
from solver.snapshot import NONE, TERMINATING, NodeTable, Snapshot

__all__ = [
    "Domains",
    "Selection",
    "domains_of",
    "forbidden_by_running",
    "running_counts",
    "selector_matches",
    "term_matches",
]


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """A missing selector matches no pod."""
    return selector is not None and selector.matches(labels)


def term_matches(term: PodAffinityTerm, pod: Pod) -> bool:
    in_namespace = term.namespaces is None or pod.namespace in term.namespaces
    return in_namespace and selector_matches(term.selector, pod.labels)


class Domains:
    """The domains of one topology key: a domain index per node (-1: the node lacks the
    key) and the label value of each domain, in order of first appearance by node name."""

    def __init__(self, nodes: NodeTable, key: str) -> None:
        index: dict[str, int] = {}
        of_node = np.full(len(nodes), -1, dtype=np.int64)
        for n, node in enumerate(nodes.nodes):
            value = node.labels.get(key)
            if value is not None:
                of_node[n] = index.setdefault(value, len(index))
        of_node.flags.writeable = False
        self.key = key
        self.of_node: IntArray = of_node
        self.values: tuple[str, ...] = tuple(index)

    def __len__(self) -> int:
        return len(self.values)

    def per_domain(self, per_node: IntArray) -> IntArray:
        """Sum a per-node column over each domain (nodes without the key drop out)."""
        has = self.of_node >= 0
        return np.bincount(
            self.of_node[has], weights=per_node[has], minlength=len(self.values)
        ).astype(np.int64)


def domains_of(nodes: NodeTable, key: str) -> Domains:
    return nodes.memo(("interpod", "domains", key), partial(Domains, nodes, key))


Selection = tuple[tuple[LabelSelector | None, tuple[str, ...] | None], ...]
"""(selector, namespaces or None for any) pairs a pod must all match."""


def running_counts(snapshot: Snapshot, selection: Selection, *, spread: bool = False) -> IntArray:
    """[N] running pods per node matching every (selector, namespaces) of `selection`.

    `spread`: kube-scheduler's spread counting — terminating pods do not count, and an
    empty selector counts nothing.
    """
    key = ("interpod", "count", selection, spread)
    return snapshot.memo(key, partial(_count, snapshot, selection, spread))


def _count(snapshot: Snapshot, selection: Selection, spread: bool) -> IntArray:
    num_nodes = len(snapshot.nodes)
    running = snapshot.running
    nothing = any(s is None or (spread and s.empty) for s, _ in selection)
    if nothing or not selection or running.length == 0:
        return np.zeros(num_nodes, dtype=np.int64)
    label_set = running.label_set
    ok = running.alive & (running.node >= 0) & (label_set >= 0)
    for selector, namespaces in selection:
        verdicts = running.label_set_verdicts(
            ("selector", selector), partial(selector_matches, selector)
        )
        ok &= verdicts[np.maximum(label_set, 0)]
        if namespaces is not None:
            names = running.namespace_names
            wanted = np.array([names.get(ns) for ns in namespaces], dtype=np.int64)
            ok &= np.isin(running.namespace, wanted[wanted != NONE])
    if spread:
        ok &= (running.flags & TERMINATING) == 0
    counts = np.bincount(running.node[ok], minlength=num_nodes).astype(np.int64)
    counts.flags.writeable = False
    return counts


def nodes_with_terms(snapshot: Snapshot) -> tuple[IntArray, IntArray]:
    """(node, term set id) of every running pod with pod (anti-)affinity, on a known node."""

    def compute() -> tuple[IntArray, IntArray]:
        running = snapshot.running
        ok = running.alive & (running.terms != NONE) & (running.node >= 0)
        nodes = running.node[ok].astype(np.int64)
        terms = running.terms[ok].astype(np.int64)
        nodes.flags.writeable = False
        terms.flags.writeable = False
        return nodes, terms

    return snapshot.memo(("interpod", "rows with terms"), compute)


def forbidden_by_running(snapshot: Snapshot, pod: Pod) -> BoolArray:
    """[N] nodes where a running pod's required anti-affinity term matches `pod` in the
    node's domain (kube-scheduler's `satisfyExistingPodsAntiAffinity`)."""
    nodes, term_ids = nodes_with_terms(snapshot)
    out = np.zeros(len(snapshot.nodes), dtype=bool)
    if nodes.size == 0:
        return out
    sets = snapshot.running.term_sets
    for ident in np.unique(term_ids).tolist():
        hosts = nodes[term_ids == ident]
        for term in sets[ident].anti_affinity:
            if not term_matches(term, pod):
                continue
            domains = domains_of(snapshot.nodes, term.topology_key)
            hit = domains.of_node[hosts]
            hit = hit[hit >= 0]
            if hit.size:
                taken = np.zeros(len(domains), dtype=bool)
                taken[hit] = True
                out |= (domains.of_node >= 0) & taken[np.maximum(domains.of_node, 0)]
    return out
