"""The compile step: pod (anti-)affinity and topology spread into filters and term rows.

Per pod type (its first pod speaks for all: pods of a type agree on namespace, terms and
the labels any selector in the call reads, `type_key`):

1. Running pods' required anti-affinity matching the pod: their domains are filtered out
   (`node(s) didn't satisfy existing pods anti-affinity rules`).
2. The pod's required anti-affinity: domains holding a matching running pod are filtered
   out; the term becomes a row when pods of the call match it.
3. The pod's required affinity: nodes without every term's key are filtered out; its
   terms become one group of rows (counts of pods matching all of them).
4. The pod's `DoNotSchedule` spread constraints: nodes without every constraint's key are
   filtered out; each constraint becomes a row over its counted nodes (the nodes with all
   keys that pass the inclusion policies).

A row nobody in the call matches moves no more: it is checked here once, as a filter.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from solver.features._base import CompileContext
from solver.features.interpod._match import (
    Selection,
    domains_of,
    forbidden_by_running,
    running_counts,
    selector_matches,
    term_matches,
)
from solver.features.interpod.block import (
    REASON_AFFINITY,
    REASON_ANTI,
    REASON_EXISTING_ANTI,
    REASON_SPREAD,
    REASON_SPREAD_LABEL,
    InterPodBlock,
    Kind,
    TermRow,
    at_nodes,
)
from solver.features.predicates import matches_term, tolerates
from solver.model import (
    InterPodTerms,
    LabelSelector,
    Pod,
    PodAffinityTerm,
    TopologySpreadConstraint,
)
from solver.problem import BoolArray, IntArray
from solver.snapshot import Snapshot, Workload

__all__ = ["compile_interpod", "included_nodes", "label_keys_read", "type_key_of_call"]


def label_keys_read(snapshot: Snapshot, workload: Workload) -> tuple[str, ...]:
    """Every label key a selector of the call reads: pending pods' terms and spread
    constraints, running pods' terms (their anti-affinity filters, all of them score)."""
    keys: set[str] = set()

    def add(selector: LabelSelector | None) -> None:
        if selector is not None:
            keys.update(k for k, _ in selector.match_labels)
            keys.update(r.key for r in selector.match_expressions)

    def add_all(terms: InterPodTerms) -> None:
        for term in (*terms.affinity, *terms.anti_affinity):
            add(term.selector)
        for weighted in (*terms.preferred_affinity, *terms.preferred_anti_affinity):
            add(weighted.term.selector)

    for pod in workload.pods:
        if pod.inter_pod is not None:
            add_all(pod.inter_pod)
        for c in pod.spread:
            add(c.selector)
    for terms in snapshot.running.term_sets:
        add_all(terms)
    return tuple(sorted(keys))


def type_key_of_call(snapshot: Snapshot, workload: Workload) -> Callable[[Pod], Hashable]:
    """Pods of one type agree on their terms and on every label a selector reads."""
    read = label_keys_read(snapshot, workload)

    def key(pod: Pod) -> Hashable:
        labels = tuple(pod.labels.get(k) for k in read)
        return (pod.namespace if read else "", pod.inter_pod, pod.spread, labels)

    return key


@dataclass
class _Spec:
    """A term row while the call's types are still being read."""

    kind: Kind
    key: int
    existing: IntArray
    text: str
    terms: tuple[PodAffinityTerm, ...] = ()  # affinity / anti: a pod counts if it matches all
    selector: LabelSelector | None = None  # spread
    namespace: str = ""  # spread: the owners' namespace, the only one counted
    group: int = -1
    seedable: bool = False
    max_skew: int = 0
    min_domains: int = 1
    counted: BoolArray | None = None
    owners: list[int] = field(default_factory=list)

    def counts(self, pod: Pod) -> bool:
        """Whether `pod`, once placed, counts in the row."""
        if self.kind == "spread":
            selector = self.selector
            return (
                selector is not None
                and not selector.empty
                and pod.namespace == self.namespace
                and selector_matches(selector, pod.labels)
            )
        return all(term_matches(term, pod) for term in self.terms)


class _Rows:
    """Term rows of the call, deduplicated: types sharing a term share its row."""

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}
        self.found: dict[Hashable, int] = {}
        self.specs: list[_Spec] = []
        self.groups: dict[Hashable, int] = {}  # an owner's required affinity terms -> group

    def key_index(self, key: str) -> int:
        return self.keys.setdefault(key, len(self.keys))

    def add(self, ident: Hashable, t: int, spec: _Spec) -> None:
        i = self.found.get(ident)
        if i is None:
            i = self.found[ident] = len(self.specs)
            self.specs.append(spec)
        self.specs[i].owners.append(t)


def compile_interpod(ctx: CompileContext) -> None:
    nodes = ctx.nodes
    rows = _Rows()
    pods = [ctx.first_pod(t) for t in range(ctx.num_types)]
    for t, pod in enumerate(pods):
        blocked = forbidden_by_running(ctx.snapshot, pod)
        if blocked.any():
            ctx.restrict([t], ~blocked, REASON_EXISTING_ANTI)
        if pod.inter_pod is not None:
            _own_terms(ctx, rows, t, pod)
        hard = [c for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"]
        if hard:
            _spread(ctx, rows, t, pod, hard)
    if not rows.specs:
        return
    keys = tuple(rows.keys)
    domains = [domains_of(nodes, k) for k in keys]
    built: list[TermRow] = []
    involved = np.zeros(ctx.num_types, dtype=bool)
    for spec in rows.specs:
        matchers = tuple(t for t, pod in enumerate(pods) if spec.counts(pod))
        owners = tuple(spec.owners)
        if not matchers:
            _static(ctx, spec, domains[spec.key].of_node)
            continue
        involved[list(owners)] = True
        involved[list(matchers)] = True
        built.append(
            TermRow(
                kind=spec.kind,
                key=spec.key,
                owners=owners,
                matchers=matchers,
                existing=spec.existing,
                text=spec.text,
                group=spec.group,
                seedable=spec.seedable and set(owners) <= set(matchers),
                max_skew=spec.max_skew,
                min_domains=spec.min_domains,
                counted=spec.counted,
                self_match=tuple(t for t in owners if spec.counts(pods[t])),
            )
        )
    if not built:
        return
    ctx.add_block(
        InterPodBlock(
            keys=keys,
            domain=tuple(d.of_node for d in domains),
            num_domains=tuple(len(d) for d in domains),
            rows=tuple(built),
            involved=involved,
            reason_codes=(
                ctx.code(REASON_SPREAD),
                ctx.code(REASON_AFFINITY),
                ctx.code(REASON_ANTI),
                ctx.code(REASON_EXISTING_ANTI),
            ),
        )
    )


def _describe(kind: str, term: PodAffinityTerm) -> str:
    selector = term.selector
    labels = ",".join(f"{k}={v}" for k, v in selector.match_labels) if selector else "<none>"
    if selector is not None and selector.match_expressions:
        labels += "".join(
            f",{r.key} {r.operator} {list(r.values)}" for r in selector.match_expressions
        )
    return f"{kind} {labels or '<all>'} by {term.topology_key}"


def _own_terms(ctx: CompileContext, rows: _Rows, t: int, pod: Pod) -> None:
    assert pod.inter_pod is not None
    for term in pod.inter_pod.anti_affinity:
        dom = domains_of(ctx.nodes, term.topology_key)
        per_node = running_counts(ctx.snapshot, ((term.selector, term.namespaces),))
        existing = dom.per_domain(per_node)
        busy = at_nodes(existing, dom.of_node) > 0
        if busy.any():
            ctx.restrict([t], ~busy, REASON_ANTI)
        rows.add(
            ("anti", term),
            t,
            _Spec(
                kind="anti",
                key=rows.key_index(term.topology_key),
                terms=(term,),
                existing=existing,
                text=_describe("anti-affinity", term),
            ),
        )
    terms = pod.inter_pod.affinity
    if not terms:
        return
    keyed = np.ones(len(ctx.nodes), dtype=bool)
    for term in terms:
        keyed &= domains_of(ctx.nodes, term.topology_key).of_node >= 0
    ctx.restrict([t], keyed, REASON_AFFINITY)
    selection: Selection = tuple((term.selector, term.namespaces) for term in terms)
    per_node = running_counts(ctx.snapshot, selection)
    anywhere = int(per_node[keyed_any(ctx, terms)].sum())
    group = rows.groups.setdefault((pod.namespace, terms), len(rows.groups))
    for term in terms:
        dom = domains_of(ctx.nodes, term.topology_key)
        rows.add(
            ("affinity", terms, term.topology_key, group),
            t,
            _Spec(
                kind="affinity",
                key=rows.key_index(term.topology_key),
                terms=terms,
                existing=dom.per_domain(per_node),
                group=group,
                seedable=anywhere == 0 and all(term_matches(x, pod) for x in terms),
                text=_describe("affinity", term),
            ),
        )


def keyed_any(ctx: CompileContext, terms: tuple[PodAffinityTerm, ...]) -> BoolArray:
    """Nodes carrying at least one of the terms' keys: where a match counts at all."""
    out = np.zeros(len(ctx.nodes), dtype=bool)
    for term in terms:
        out |= domains_of(ctx.nodes, term.topology_key).of_node >= 0
    return out


def _spread(
    ctx: CompileContext,
    rows: _Rows,
    t: int,
    pod: Pod,
    hard: list[TopologySpreadConstraint],
) -> None:
    all_keys = np.ones(len(ctx.nodes), dtype=bool)
    for c in hard:
        all_keys &= domains_of(ctx.nodes, c.topology_key).of_node >= 0
    ctx.restrict([t], all_keys, REASON_SPREAD_LABEL)
    for c in hard:
        counted = all_keys & included_nodes(ctx, pod, c)
        counted.flags.writeable = False
        dom = domains_of(ctx.nodes, c.topology_key)
        per_node = running_counts(ctx.snapshot, ((c.selector, (pod.namespace,)),), spread=True)
        rows.add(
            ("spread", c, pod.namespace, counted.tobytes()),
            t,
            _Spec(
                kind="spread",
                key=rows.key_index(c.topology_key),
                selector=c.selector,
                namespace=pod.namespace,
                existing=dom.per_domain(np.where(counted, per_node, 0)),
                max_skew=c.max_skew,
                min_domains=c.min_domains,
                counted=counted,
                text=f"spread {c.topology_key} maxSkew {c.max_skew}",
            ),
        )


def included_nodes(ctx: CompileContext, pod: Pod, c: TopologySpreadConstraint) -> BoolArray:
    """Nodes counted under the constraint's inclusion policies (NodeInclusionPolicy)."""
    nodes = ctx.nodes.nodes
    ok = np.ones(len(nodes), dtype=bool)
    if c.node_affinity_policy == "Honor":
        ok &= np.array(
            [
                all(node.labels.get(k) == v for k, v in pod.node_selector.items())
                and (
                    pod.required_affinity is None
                    or any(matches_term(term, node) for term in pod.required_affinity)
                )
                for node in nodes
            ],
            dtype=bool,
        )
    if c.node_taints_policy == "Honor":
        ok &= np.array(
            [
                all(
                    taint.effect not in ("NoSchedule", "NoExecute")
                    or any(tolerates(tol, taint) for tol in pod.tolerations)
                    for taint in node.taints
                )
                for node in nodes
            ],
            dtype=bool,
        )
    return ok


def _static(ctx: CompileContext, spec: _Spec, of_node: IntArray) -> None:
    """A row no pod of the call counts in: its verdict is final now."""
    owners, existing = spec.owners, spec.existing
    if spec.kind == "anti":
        return  # already filtered against the running pods
    if spec.kind == "affinity":
        # Without a pod of the call to start the series, a match must already run.
        ctx.restrict(owners, at_nodes(existing, of_node) > 0, REASON_AFFINITY)
        return
    assert spec.counted is not None
    domains = np.zeros(existing.size, dtype=bool)
    domains[of_node[spec.counted & (of_node >= 0)]] = True
    low = 0 if domains.sum() < spec.min_domains else int(existing[domains].min())
    ok = (of_node < 0) | (at_nodes(existing, of_node) - low <= spec.max_skew)
    ctx.restrict(owners, ok, REASON_SPREAD)
