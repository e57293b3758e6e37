"""Pod affinity, anti-affinity and topology spread, re-derived from the pods themselves.

A pod placed (or nominated) this cycle is checked against the running pods (victims gone)
and the other pods placed with it, as kube-scheduler would see them once all are bound:

* anti-affinity, both ways: no other pod its required term selects in its domain, and no
  pod whose required anti-affinity term selects it in that pod's domain;
* affinity: its required terms (a pod counts if it matches all of them) are met by running
  pods or by placed pods that can be bound before it — pods without the same terms, or
  pods of the same terms already supported — with one exception, kube-scheduler's first
  pod of a self-affine series, allowed only where no running pod matches;
* spread (`DoNotSchedule`): in the domain of its node, matching pods − the minimum over
  the counted domains ≤ maxSkew, counting pods of its namespace that are not terminating
  on nodes with every key of its constraints that pass its inclusion policies.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property, partial

import numpy as np

from solver.model import LabelSelector, Node, Pod, PodAffinityTerm, TopologySpreadConstraint
from solver.snapshot import NONE, TERMINATING
from solver.verify._context import VerifyContext
from solver.verify._predicates import label_expression_holds

__all__ = ["interpod"]


def interpod(ctx: VerifyContext) -> list[str]:
    placed = [(ctx.pods[key], node) for key, node in sorted(ctx.target.items())]
    if not placed:
        return []
    world = _World(ctx)
    problems: list[str] = []
    for pod, node in placed:
        problems += world.anti(pod, node, placed)
        problems += world.spread(pod, node, placed)
    problems += world.affinity(placed)
    return problems


def _selects(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    return all(labels.get(k) == v for k, v in selector.match_labels) and all(
        label_expression_holds(dict(labels), r.key, r.operator, r.values)
        for r in selector.match_expressions
    )


def _in_term(term: PodAffinityTerm, pod: Pod) -> bool:
    return (term.namespaces is None or pod.namespace in term.namespaces) and _selects(
        term.selector, pod.labels
    )


class _World:
    """The running pods (less victims) as per-node counts, and the nodes by name."""

    def __init__(self, ctx: VerifyContext) -> None:
        self.ctx = ctx
        self.nodes = ctx.snapshot.nodes
        self.running = ctx.snapshot.running
        self._counts: dict[object, np.ndarray] = {}
        self._totals: dict[tuple[int, str], dict[str, int]] = {}
        self._spreads: dict[str, dict[str, int]] = {}
        self._by_domain: dict[object, dict[str, set[str]]] = {}
        self._owners: dict[PodAffinityTerm, dict[str, set[str]]] | None = None

    @cached_property
    def live(self) -> np.ndarray:
        """[rows] running pods on a node, victims left out (read when a term asks)."""
        running = self.running
        live = running.alive & (running.node >= 0)
        if self.ctx.evicted:
            rows = running.find_many(sorted(self.ctx.evicted))
            live[rows[rows != NONE]] = False
        return live

    @cached_property
    def anti_hosts(self) -> dict[int, set[str]]:
        """Running pods with anti-affinity: per term set, the names of their nodes (no scan
        when no running pod of the lineage ever had a term)."""
        running = self.running
        out: dict[int, set[str]] = {}
        if len(running.term_sets) == 0:
            return out
        rows = np.flatnonzero(self.live & (running.terms != NONE))
        for ident, node in zip(
            running.terms[rows].tolist(), running.node[rows].tolist(), strict=True
        ):
            out.setdefault(int(ident), set()).add(self.nodes.names[node])
        return out

    def labels(self, node: str) -> Mapping[str, str]:
        return self.ctx.node(node).labels

    def running_on(
        self, selector: LabelSelector | None, namespaces: tuple[str, ...] | None, spread: bool
    ) -> np.ndarray:
        """[N] running pods per node selected (spread: not terminating, empty selects none)."""
        key = (selector, namespaces, spread)
        if key not in self._counts:
            self._counts[key] = self._running_on(selector, namespaces, spread)
        return self._counts[key]

    def _running_on(
        self, selector: LabelSelector | None, namespaces: tuple[str, ...] | None, spread: bool
    ) -> np.ndarray:
        running = self.running
        if selector is None or running.length == 0 or (spread and selector.empty):
            return np.zeros(len(self.nodes), dtype=np.int64)
        verdict = self._verdicts(selector)
        label_set = running.label_set
        ok = self.live & (label_set >= 0)
        ok &= verdict[np.maximum(label_set, 0)] if verdict.size else False
        if namespaces is not None:
            ids = [running.namespace_names.get(ns) for ns in namespaces]
            ok &= np.isin(running.namespace, [i for i in ids if i != NONE])
        if spread:
            ok &= (running.flags & TERMINATING) == 0
        return np.bincount(running.node[ok], minlength=len(self.nodes))

    def _verdicts(self, selector: LabelSelector | None) -> np.ndarray:
        """This module's `_selects` per label set of the snapshot, evaluated once per set
        (the snapshot keeps the verdicts; the predicate is this verifier's own)."""
        return self.running.label_set_verdicts(("verify", selector), partial(_selects, selector))

    def _same(self, key: str, a: str, b_labels: Mapping[str, str]) -> bool:
        value = self.labels(a).get(key)
        return value is not None and b_labels.get(key) == value

    def _domain_count(self, per_node: np.ndarray, key: str, node: str) -> int:
        value = self.labels(node).get(key)
        if value is None:
            return 0
        totals = self._totals.get((id(per_node), key))
        if totals is None:
            totals = {}
            for i in np.flatnonzero(per_node).tolist():
                v = self.nodes.nodes[i].labels.get(key)
                if v is not None:
                    totals[v] = totals.get(v, 0) + int(per_node[i])
            self._totals[(id(per_node), key)] = totals
        return totals.get(value, 0)

    # ------------------------------------------------------------------ anti-affinity

    def _placed_in(
        self, term: PodAffinityTerm, placed: list[tuple[Pod, str]]
    ) -> dict[str, set[str]]:
        """Placed pods `term` selects, by the value of its key on their node."""
        cache_key = ("selected", term)
        if cache_key not in self._by_domain:
            out: dict[str, set[str]] = {}
            for other, where in placed:
                value = self.labels(where).get(term.topology_key)
                if value is not None and _in_term(term, other):
                    out.setdefault(value, set()).add(other.key)
            self._by_domain[cache_key] = out
        return self._by_domain[cache_key]

    def _owners_in(
        self, placed: list[tuple[Pod, str]]
    ) -> dict[PodAffinityTerm, dict[str, set[str]]]:
        """Placed pods per required anti-affinity term they carry, by domain value."""
        if self._owners is None:  # once per verify, even when no placed pod has such terms
            owners: dict[PodAffinityTerm, dict[str, set[str]]] = {}
            for other, where in placed:
                for term in other.inter_pod.anti_affinity if other.inter_pod else ():
                    value = self.labels(where).get(term.topology_key)
                    if value is not None:
                        owners.setdefault(term, {}).setdefault(value, set()).add(other.key)
            self._owners = owners
        return self._owners

    def anti(self, pod: Pod, node: str, placed: list[tuple[Pod, str]]) -> list[str]:
        out = []
        terms = pod.inter_pod.anti_affinity if pod.inter_pod else ()
        for term in terms:
            value = self.labels(node).get(term.topology_key)
            if value is None:
                continue
            near = self._domain_count(
                self.running_on(term.selector, term.namespaces, False), term.topology_key, node
            )
            near += len(self._placed_in(term, placed).get(value, set()) - {pod.key})
            if near:
                out.append(
                    f"{pod.key} on {node}: {near} pod(s) its anti-affinity term selects run in "
                    f"its {term.topology_key} domain"
                )
        for term, by_value in self._owners_in(placed).items():
            value = self.labels(node).get(term.topology_key)
            if value is None or not _in_term(term, pod):
                continue
            owners = by_value.get(value, set()) - {pod.key}
            if owners:
                out.append(f"{pod.key} on {node}: {min(owners)}'s anti-affinity term selects it")
        labels = self.labels(node)
        for ident, hosts in self.anti_hosts.items():
            for term in self.running.term_sets[ident].anti_affinity:
                if _in_term(term, pod) and any(
                    self._same(term.topology_key, host, labels) for host in hosts
                ):
                    out.append(
                        f"{pod.key} on {node}: a running pod's anti-affinity term selects it "
                        f"in its {term.topology_key} domain"
                    )
        return out

    # ------------------------------------------------------------------ spread

    def spread(self, pod: Pod, node: str, placed: list[tuple[Pod, str]]) -> list[str]:
        hard = [c for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"]
        if not hard:
            return []
        keys = frozenset(c.topology_key for c in hard)
        if not keys <= set(self.labels(node)):
            return [f"{pod.key} on {node}: node lacks a topology spread key of {sorted(keys)}"]
        out = []
        for c in hard:
            counts = self._spread_counts(pod, c, keys, placed)
            low = 0 if len(counts) < c.min_domains else min(counts.values(), default=0)
            mine = counts.get(self.labels(node)[c.topology_key], 0)
            if mine - low > c.max_skew:
                out.append(
                    f"{pod.key} on {node}: {mine} matching pod(s) in its {c.topology_key} "
                    f"domain, {low} in the emptiest: skew above maxSkew {c.max_skew}"
                )
        return out

    def _spread_counts(
        self,
        pod: Pod,
        c: TopologySpreadConstraint,
        keys: frozenset[str],
        placed: list[tuple[Pod, str]],
    ) -> dict[str, int]:
        """Matching pods per counted domain of `c` for pods like `pod` (same namespace,
        keys and inclusion inputs), running and placed; computed once per such pod kind."""
        ident = (
            c,
            pod.namespace,
            keys,
            pod.node_selector.items(),
            pod.required_affinity,
            pod.tolerations,
        )
        cache_key = repr(ident)
        found = self._spreads.get(cache_key)
        if found is not None:
            return found
        counted = [n for n in self.nodes.nodes if keys <= set(n.labels) and _included(pod, c, n)]
        per_node = self.running_on(c.selector, (pod.namespace,), True)
        index = self.nodes.index
        counts: dict[str, int] = {}
        for n in counted:
            value = n.labels[c.topology_key]
            counts[value] = counts.get(value, 0) + int(per_node[index[n.name]])
        counted_names = {n.name for n in counted}
        for other, where in placed:
            if (
                where in counted_names
                and other.namespace == pod.namespace
                and c.selector is not None
                and not c.selector.empty
                and _selects(c.selector, other.labels)
            ):
                value = self.labels(where)[c.topology_key]
                counts[value] = counts.get(value, 0) + 1
        self._spreads[cache_key] = counts
        return counts

    # ------------------------------------------------------------------ affinity

    def affinity(self, placed: list[tuple[Pod, str]]) -> list[str]:
        groups: dict[tuple[PodAffinityTerm, ...], list[tuple[Pod, str]]] = {}
        for pod, node in placed:
            if pod.inter_pod and pod.inter_pod.affinity:
                groups.setdefault(pod.inter_pod.affinity, []).append((pod, node))
        out = []
        for terms, owners in groups.items():
            out += self._group(terms, owners, placed)
        return out

    def _group(
        self,
        terms: tuple[PodAffinityTerm, ...],
        owners: list[tuple[Pod, str]],
        placed: list[tuple[Pod, str]],
    ) -> list[str]:
        names = {p.key for p, _ in owners}
        running = self.running_on_all(terms)
        supporters = [
            (p, n) for p, n in placed if p.key not in names and all(_in_term(t, p) for t in terms)
        ]

        def supported(node: str, ok: list[tuple[Pod, str]], me: str) -> bool:
            for term in terms:
                key = term.topology_key
                if key not in self.labels(node):
                    return False
                if self._domain_count(running, key, node):
                    continue
                labels = self.labels(node)
                if not any(
                    other.key != me and self._same(key, where, labels)
                    for other, where in (*supporters, *ok)
                ):
                    return False
            return True

        def closure(ok: list[tuple[Pod, str]]) -> list[tuple[Pod, str]]:
            left = [o for o in owners if o not in ok]
            grew = True
            while grew and left:
                grew = False
                for o in list(left):
                    if supported(o[1], ok, o[0].key):
                        matching = all(_in_term(t, o[0]) for t in terms)
                        if matching:
                            ok.append(o)
                        left.remove(o)
                        grew = True
            return left

        left = closure([])
        keyed = [n.name for n in self.nodes.nodes if any(t.topology_key in n.labels for t in terms)]
        seedable = sum(int(running[self.nodes.index[n]]) for n in keyed) == 0
        if left and seedable:
            for seed in {o[1]: o for o in left if all(_in_term(t, o[0]) for t in terms)}.values():
                if all(t.topology_key in self.labels(seed[1]) for t in terms):
                    rest = closure([seed])
                    if not [o for o in rest if o != seed]:
                        left = []
                        break
        return [
            f"{pod.key} on {node}: no pod its affinity terms select runs in its domain"
            for pod, node in left
        ]

    def running_on_all(self, terms: tuple[PodAffinityTerm, ...]) -> np.ndarray:
        """[N] running pods matching every term."""
        running = self.running
        label_set = running.label_set
        ok = self.live & (label_set >= 0)
        for term in terms:
            verdict = self._verdicts(term.selector)
            ok &= verdict[np.maximum(label_set, 0)] if verdict.size else False
            if term.namespaces is not None:
                ids = [running.namespace_names.get(ns) for ns in term.namespaces]
                ok &= np.isin(running.namespace, [i for i in ids if i != NONE])
        return np.bincount(running.node[ok], minlength=len(self.nodes))


def _included(pod: Pod, c: TopologySpreadConstraint, node: Node) -> bool:
    if c.node_affinity_policy == "Honor":
        if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
            return False
        if pod.required_affinity is not None and not any(
            (t.match_expressions or t.match_fields)
            and all(
                label_expression_holds(node.labels, r.key, r.operator, r.values)
                for r in t.match_expressions
            )
            and all(
                label_expression_holds({"metadata.name": node.name}, r.key, r.operator, r.values)
                for r in t.match_fields
            )
            for t in pod.required_affinity
        ):
            return False
    if c.node_taints_policy == "Honor":
        for taint in node.taints:
            if taint.effect == "PreferNoSchedule":
                continue
            if not any(
                (t.key == taint.key or (t.key == "" and t.operator == "Exists"))
                and t.effect in ("", taint.effect)
                and (t.operator == "Exists" or t.value == taint.value)
                for t in pod.tolerations
            ):
                return False
    return True
