"""Network topology: Koordinator's gather tree and spec, Godel's job-level affinity.

Koordinator (`reference/koordinator.md` §3)
-------------------------------------------
**The tree** (`build_tree`) is built from `ClusterNetworkTopology/default` as Koordinator's
`networktopology/tree.go` does:

1. Layers are ordered by walking `parentTopologyLayer` up from `NodeTopologyLayer`; every
   declared layer must be on that chain (otherwise: `topology layer "X" not found in spec`,
   and there is no tree). `ClusterTopologyLayer` is the implicit root (one domain named
   ``""``), `NodeTopologyLayer` the leaves (one domain per node, named after it).
2. Nodes are added in name order. A node's domain in a layer is the first non-empty value
   among the layer's `labelKey`s. A node missing the layer directly above the nodes gets a
   virtual domain named after itself; a node missing any other layer is **left out of the
   tree** (it never receives offer slots, so topology-aware gangs cannot use it).
3. Domains are indexed by (layer, name) globally: two blocks with the same label value under
   different spines are one block, attached to the spine of the first node (by name) that
   created it. Domain names must be unique per layer.

Arrays (`TopologyTree`): `layers[l]` top→down; per layer the domain names **sorted** (index
order is name order, so "name ascending" tie-breaks are index comparisons) — except the
node layer, whose domain index is the node index; `parent[l][d]` the parent's index in
layer l-1; `node_domain[l, n]` node n's domain in layer l (-1 when out of the tree).

**The spec**: PodGroup annotation `gang.scheduling.koordinator.sh/network-topology-spec`
(`gatherStrategy[]`: `layer`, `strategy` MustGather|PreferGather, `podCountMultiple`). A
gang is topology-aware iff the annotation is present and parses (even `{}`). The spec of
the GangGroup's first gang (lowest id with a pending pod) applies to the whole group.

* Malformed annotation (not JSON, wrong JSON types): Koordinator's lenient rule — the gang
  is **not** topology-aware — plus a `note:` naming the PodGroup and the parse error.
* MustGather layer = the deepest MustGather rule after sorting the rules deepest first;
  layers unknown to the CR (and `ClusterTopologyLayer`) sort as if top-most (ties: a known
  layer first). If the chosen layer is unknown, Koordinator finds no domain and the gang
  can never be placed; gangplan reports that as the gang's counted reason (naming the
  unknown layer) and a note — it is not an input error. PreferGather rules have no effect
  on the search; their `podCountMultiple` does.
* No tree (no `ClusterNetworkTopology` named `default`, or a broken layer chain): every
  topology-aware gang is unschedulable with `no cluster network topology (...)`, as in
  Koordinator; the rest of the input schedules normally.

**Pod order** (`gather_rank_key`): pods with a valid `network-topology-index` annotation
(a non-negative integer) first in index order, then the rest; ties by pod name. This is the
documented intent (`SortPodsByIndex`): consecutive ranks land on consecutive slots of the
chosen domain. Upstream HEAD re-sorts pods by name right before assigning them to nodes
(`distributePods`), so there `w-10` lands before `w-2`; gangplan keeps index order.

**Existing peers**: pods carrying `scheduling.koordinator.sh/network-topology-selector`
with the first pending pod's value, counted per node over bound pods.

Godel (`reference/godel_kueue.md` §1)
-------------------------------------
`spec.affinity.podGroupAffinity` of a Godel PodGroup (one PodGroup = one unit):
`nodeSelector` filters the unit's nodes (terms ORed, expressions ANDed, `matchFields`
ignored, as Godel does); `required` keys form one combined domain (`k1:v1;k2:v2;`, keys
sorted) and nodes lacking a key are dropped; running members pin the required domain
(members in different domains: the unit fails, "assigned pods are in different
topologies") and narrow each preferred term while they agree on its value (on the first
disagreement division stops). `sortRules`: `{CPU, Capacity, Ascending}` when empty; a
missing `dimension` means Capacity; any invalid rule disables sorting **and** cut-off
(Godel logs and skips). Godel breaks sort ties by Go map order (random); gangplan breaks
them by domain key, ascending. The greedy builds NodeGroups/NodeCircles from these arrays
at placement time (`solver/engines/gather.py`), since `Available` changes as units land.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solver.config import SchedulerConf
from solver.errors import InputError
from solver.model import (
    CLUSTER_LAYER,
    MUST_GATHER,
    NODE_LAYER,
    ClusterModel,
    Gang,
    GatherSpec,
    GatherSpecError,
    JobAffinity,
    NetworkTopology,
    Node,
    NodeSelectorTerm,
    Pod,
    parse_gather_spec,
    parse_job_affinity,
)
from solver.policies.gang import GangPlan
from solver.policies.predicates import matches_requirement
from solver.problem import BoolArray, GodelPlan, IntArray
from solver.quantity import CPU, MEMORY

__all__ = [
    "ANNOTATION_INDEX",
    "ANNOTATION_SELECTOR",
    "ANNOTATION_SPEC",
    "GODEL_METRICS",
    "GodelPlan",
    "TopologyParts",
    "TopologyTree",
    "UnitGather",
    "build_tree",
    "compile_topology",
    "detail_status",
    "gather_rank_key",
    "godel_plan",
    "koordinator_spec",
    "must_gather_layer",
    "render_tree",
    "topology_view",
    "unit_gather",
]

ANNOTATION_SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"
ANNOTATION_INDEX = "gang.scheduling.koordinator.sh/network-topology-index"
ANNOTATION_SELECTOR = "scheduling.koordinator.sh/network-topology-selector"
GPU = "nvidia.com/gpu"
DIALECT_GODEL = "scheduling.godel.kubewharf.io"
GODEL_METRICS = (CPU, MEMORY, GPU)
"""Godel's sort/cut-off resources, in column order: CPU (milli), Memory (bytes), GPU (count)."""


# ----------------------------------------------------------------------------- the tree


@dataclass(frozen=True, eq=False)
class TopologyTree:
    """Koordinator's network tree as arrays (see the module docstring)."""

    layers: tuple[str, ...]  # L, top -> down; [0] ClusterTopologyLayer, [L-1] NodeTopologyLayer
    label_keys: tuple[tuple[str, ...], ...]  # [L]; empty for the root and the node layer
    domains: tuple[tuple[str, ...], ...]  # [L] names; layer L-1 = all node names (index = node)
    parent: tuple[IntArray, ...]  # [L] per layer [D_l] parent index in layer l-1; -1 root/out
    node_domain: IntArray  # [L, N] domain of each node per layer; -1 when out of the tree

    @property
    def in_tree(self) -> BoolArray:
        return np.asarray(self.node_domain[0] >= 0)

    def layer_index(self, name: str) -> int:
        """Index of a layer by name; -1 when the CR does not declare it."""
        return self.layers.index(name) if name in self.layers else -1

    def node_counts(self, layer: int) -> IntArray:
        """In-tree nodes per domain of `layer`."""
        row = self.node_domain[layer]
        return np.bincount(row[row >= 0], minlength=len(self.domains[layer]))


def _layer_chain(topology: NetworkTopology) -> list[int]:
    """Koordinator's `sortNetworkTopologySpecFromParentToChild`: spec positions, top -> down."""
    specs = topology.layers
    by_name = {layer.name: i for i, layer in enumerate(specs)}
    current = NODE_LAYER
    cur = by_name.get(current)
    order: list[int] = []
    for _ in range(len(specs)):
        if cur is None:
            raise InputError(
                f"ClusterNetworkTopology {topology.name}: topology layer {current!r} not found "
                "in spec (the layers must form one chain from NodeTopologyLayer up through "
                "parentTopologyLayer)"
            )
        order.append(cur)
        current = specs[cur].parent or ""
        cur = by_name.get(current)
    order.reverse()
    return order


def build_tree(topology: NetworkTopology | None, nodes: Sequence[Node]) -> TopologyTree:
    """The network tree over `nodes` (in name order); InputError when the CR is unusable."""
    if topology is None:
        raise InputError("no ClusterNetworkTopology named default in the input")
    chain = _layer_chain(topology)
    specs = [topology.layers[i] for i in chain]
    if not specs or specs[-1].name != NODE_LAYER:
        raise InputError(
            f"ClusterNetworkTopology {topology.name}: topology layer {NODE_LAYER!r} not found in spec"
        )
    user = specs[:-1]  # layers between the root and the nodes, top -> down
    layers = (CLUSTER_LAYER, *(s.name for s in user), NODE_LAYER)
    root = (CLUSTER_LAYER, "")
    attach: dict[tuple[str, str], tuple[str, str]] = {root: root}  # meta -> parent meta
    node_meta: list[tuple[str, str] | None] = []
    for node in nodes:
        metas: list[tuple[str, str]] = []
        for i, spec in enumerate(specs):
            if spec.name == NODE_LAYER:
                name = node.name
            else:
                name = next((node.labels[k] for k in spec.label_keys if node.labels.get(k)), "")
            if not name:
                if i == len(specs) - 2:  # the layer right above the nodes: a virtual domain
                    name = node.name
                else:
                    break
            metas.append((spec.name, name))
        if len(metas) < len(specs):
            node_meta.append(None)  # left out of the tree
            continue
        parent = root
        for meta in metas:
            attach.setdefault(meta, parent)
            parent = meta
        node_meta.append(metas[-1])

    names_per_layer: list[list[str]] = [[""]]
    for spec in user:
        names_per_layer.append(sorted({name for (layer, name) in attach if layer == spec.name}))
    names_per_layer.append([n.name for n in nodes])
    index = [{name: i for i, name in enumerate(names)} for names in names_per_layer]
    parents: list[IntArray] = [np.full(1, -1, dtype=np.int64)]
    for li in range(1, len(layers)):
        row = np.full(len(names_per_layer[li]), -1, dtype=np.int64)
        for d, name in enumerate(names_per_layer[li]):
            parent_meta = attach.get((layers[li], name))
            if parent_meta is not None:
                row[d] = index[li - 1][parent_meta[1]]
        parents.append(row)
    node_domain = np.full((len(layers), len(nodes)), -1, dtype=np.int64)
    inside = np.array([m is not None for m in node_meta], dtype=bool)
    node_domain[-1, inside] = np.flatnonzero(inside)
    for li in range(len(layers) - 2, -1, -1):
        below = node_domain[li + 1]
        node_domain[li] = np.where(below >= 0, parents[li + 1][np.maximum(below, 0)], -1)
    for row in parents:
        row.flags.writeable = False
    node_domain.flags.writeable = False
    return TopologyTree(
        layers=layers,
        label_keys=((), *(s.label_keys for s in user), ()),
        domains=tuple(tuple(names) for names in names_per_layer),
        parent=tuple(parents),
        node_domain=node_domain,
    )


def _children(tree: TopologyTree, layer: int, domain: int) -> list[int]:
    return [int(c) for c in np.flatnonzero(tree.parent[layer + 1] == domain)]


def detail_status(tree: TopologyTree) -> list[dict[str, Any]]:
    """`ClusterNetworkTopology.status.detailStatus` as Koordinator's `makeStatus` writes it.

    One entry per non-node domain in depth-first order (children by name), with its parent,
    the child layer, the sorted child names (omitted when the children are nodes) and the
    number of nodes below it.
    """
    out: list[dict[str, Any]] = []
    last = len(tree.layers) - 1

    def visit(layer: int, d: int) -> int:
        entry: dict[str, Any] = {
            "topologyInfo": {
                "topologyLayer": tree.layers[layer],
                "topologyName": tree.domains[layer][d],
            }
        }
        if layer > 0:
            p = int(tree.parent[layer][d])
            entry["parentTopologyInfo"] = {
                "topologyLayer": tree.layers[layer - 1],
                "topologyName": tree.domains[layer - 1][p],
            }
        kids = _children(tree, layer, d)
        names = sorted(tree.domains[layer + 1][c] for c in kids)
        if kids:
            entry["childTopologyLayer"] = tree.layers[layer + 1]
            if layer + 1 != last:
                entry["childTopologyNames"] = names
        out.append(entry)
        if layer + 1 == last:
            count = len(kids)
        else:
            by_name = {tree.domains[layer + 1][c]: c for c in kids}
            count = sum(visit(layer + 1, by_name[n]) for n in names)
        entry["nodeNum"] = count
        return count

    visit(0, 0)
    return out


def render_tree(tree: TopologyTree, *, show_nodes: bool = False) -> str:
    """The tree as text, like Koordinator's docs draw it (node counts per domain)."""
    lines = [f"{CLUSTER_LAYER}  ({int(tree.in_tree.sum())} nodes)"]
    last = len(tree.layers) - 1

    def visit(layer: int, d: int, prefix: str) -> None:
        kids = sorted(_children(tree, layer, d), key=lambda c: tree.domains[layer + 1][c])
        if layer + 1 == last and not show_nodes:
            return
        for i, c in enumerate(kids):
            final = i == len(kids) - 1
            branch = "└── " if final else "├── "
            name = tree.domains[layer + 1][c]
            if layer + 1 == last:
                lines.append(f"{prefix}{branch}{NODE_LAYER}: {name}")
                continue
            count = int(tree.node_counts(layer + 1)[c])
            lines.append(f"{prefix}{branch}{tree.layers[layer + 1]}: {name}  ({count} nodes)")
            visit(layer + 1, c, prefix + ("    " if final else "│   "))

    visit(0, 0, "")
    return "\n".join(lines)


def topology_view(tree: TopologyTree, topology: NetworkTopology) -> dict[str, Any]:
    """`gangplan topology -o json`: the spec as read, Koordinator's detailStatus, nodes left out."""
    outside = [tree.domains[-1][n] for n in np.flatnonzero(~tree.in_tree)]
    return {
        "name": topology.name,
        "layers": [
            {"topologyLayer": name, "labelKey": list(keys)}
            for name, keys in zip(tree.layers, tree.label_keys, strict=True)
        ],
        "detailStatus": detail_status(tree),
        "nodesOutOfTree": outside,
    }


# ----------------------------------------------------------------------------- Koordinator spec


_INT = re.compile(r"^[+-]?[0-9]+$")


def gather_rank_key(pod: Pod) -> tuple[int, int, str, str]:
    """`SortPodsByIndex`: valid index (>= 0) ascending first, then un-indexed; ties by name."""
    text = pod.annotations.get(ANNOTATION_INDEX)
    index = int(text) if text is not None and _INT.match(text) else -1
    if index >= 0:
        return (0, index, pod.name, pod.key)
    return (1, 0, pod.name, pod.key)


def koordinator_spec(gang: Gang) -> GatherSpec | None:
    """The gang's parsed spec; None when absent. Raises GatherSpecError when malformed."""
    text = gang.annotations.get(ANNOTATION_SPEC)
    if not text:
        return None
    return parse_gather_spec(text)


def must_gather_layer(spec: GatherSpec, layers: Sequence[str]) -> str:
    """Koordinator's `GetMustGatherLayer` over the tree's `layers` (top -> down, root first).

    Rules sorted deepest layer first; `ClusterTopologyLayer` and unknown layers as top-most
    (a known layer before them on a tie); the first MustGather rule's layer, or "".
    """

    def key(rule_layer: str) -> tuple[int, int]:
        if rule_layer in layers and rule_layer != CLUSTER_LAYER:
            return (-layers.index(rule_layer), 0)
        return (-1, 1 if rule_layer == CLUSTER_LAYER else 2)

    for rule in sorted(spec.rules, key=lambda r: key(r.layer)):
        if rule.strategy == MUST_GATHER:
            return rule.layer
    return ""


@dataclass(frozen=True)
class UnitGather:
    """What Koordinator's gather needs for one gang group."""

    gang: str  # the gang whose spec applies
    spec: GatherSpec
    must_layer: str  # "" when no MustGather rule
    multiples: dict[str, int]  # layer name (as written) -> podCountMultiple > 1
    selector: str  # network-topology-selector of the first pending pod ("" = none)
    blocked: str | None = None  # why the group can never be placed


def unit_gather(
    model: ClusterModel,
    gang_ids: Sequence[str],
    tree: TopologyTree | None,
    tree_error: str | None,
) -> tuple[UnitGather | None, list[str]]:
    """The gather requirements of one gang group (its gangs `gang_ids`) or None, and notes."""
    notes: list[str] = []
    specs: dict[str, GatherSpec | None] = {}
    for gid in sorted(gang_ids):
        gang = model.gangs[gid]
        try:
            specs[gid] = koordinator_spec(gang)
        except GatherSpecError as err:
            specs[gid] = None
            notes.append(
                f"PodGroup {gid}: annotation {ANNOTATION_SPEC} ignored, as Koordinator does: {err}"
            )
    first = next(
        (
            g
            for g in sorted(gang_ids)
            if any(model.pod_by_key[k].pending for k in model.gangs[g].members)
        ),
        None,
    )
    if first is None:
        return None, notes
    spec = specs.get(first)
    group = ",".join(sorted(gang_ids))
    if spec is None:
        if any(s is not None for s in specs.values()):
            notes.append(
                f"GangGroup {group}: only the first gang's {ANNOTATION_SPEC} applies and "
                f"{first} has none; the group is placed without topology"
            )
        return None, notes
    if any(s is not None and s != spec for s in specs.values()):
        notes.append(
            f"GangGroup {group}: gangs disagree on {ANNOTATION_SPEC}; the first gang's "
            f"({first}) applies to the whole group"
        )
    gid = first
    multiples: dict[str, int] = {}
    for rule in spec.rules:
        if rule.pod_count_multiple > 1:
            multiples[rule.layer] = rule.pod_count_multiple
    pending = sorted(
        (
            model.pod_by_key[k]
            for g in gang_ids
            for k in model.gangs[g].members
            if model.pod_by_key[k].pending
        ),
        key=gather_rank_key,
    )
    selector = pending[0].annotations.get(ANNOTATION_SELECTOR, "") if pending else ""
    if tree is None:
        no_tree = f"no cluster network topology ({tree_error})"
        return UnitGather(gid, spec, "", multiples, selector, no_tree), notes
    must = must_gather_layer(spec, tree.layers)
    blocked: str | None = None
    for rule in spec.rules:
        if rule.layer and rule.layer not in tree.layers:
            notes.append(
                f"PodGroup {gid}: {ANNOTATION_SPEC} names layer {rule.layer!r}, which "
                f"ClusterNetworkTopology default does not declare (layers: {', '.join(tree.layers)})"
            )
    if must and must not in tree.layers:
        blocked = (
            f"no candidate topology nodes can accommodate job: MustGather layer {must!r} is not "
            f"a layer of ClusterNetworkTopology default (layers: {', '.join(tree.layers)})"
        )
    return UnitGather(gid, spec, must, multiples, selector, blocked), notes


def peer_counts(model: ClusterModel, selector: str) -> IntArray:
    """Bound pods per node carrying `network-topology-selector: <selector>` (ExistingPodNum)."""
    index = model.node_table.index
    counts = np.zeros(len(model.nodes), dtype=np.int64)
    for pod in model.bound_pods:
        if pod.annotations.get(ANNOTATION_SELECTOR) == selector and pod.node_name in index:
            counts[index[pod.node_name]] += 1
    return counts


# ----------------------------------------------------------------------------- Godel


_RESOURCES = {"CPU": 0, "Memory": 1, "GPU": 2}


def _selector_matches(terms: tuple[NodeSelectorTerm, ...], node: Node) -> bool:
    """Godel's `MatchNodeSelectorTerms(terms, labels, nil)`: matchFields are not evaluated."""
    for term in terms:
        if not term.match_expressions and not term.match_fields:
            continue
        if term.match_expressions and not all(
            matches_requirement(r, node.labels) for r in term.match_expressions
        ):
            continue
        return True
    return False


def _sort_rules(affinity: JobAffinity) -> tuple[tuple[int, bool, bool], ...] | None:
    rules = affinity.sort_rules or ()
    if not rules:
        return ((0, False, True),)  # defaultSortRule: CPU, Capacity, Ascending
    out: list[tuple[int, bool, bool]] = []
    for rule in rules:
        dimension = rule.dimension or "Capacity"
        if (
            rule.resource not in _RESOURCES
            or dimension not in ("Capacity", "Available")
            or rule.order not in ("Ascending", "Descending")
        ):
            return None
        out.append((_RESOURCES[rule.resource], dimension == "Available", rule.order == "Ascending"))
    return tuple(out)


def _metrics(requests: dict[str, int]) -> IntArray:
    return np.array([requests.get(r, 0) for r in GODEL_METRICS], dtype=np.int64)


def _min_request(model: ClusterModel, gang: Gang) -> IntArray:
    """Godel's `computeUnitMinResourceRequest`."""
    pods = [model.pod_by_key[k] for k in gang.members]
    pending = [p for p in pods if p.pending]
    if not pending:
        return np.zeros(3, dtype=np.int64)
    if any(p.bound for p in pods):  # everScheduled: per-resource minimum over pending pods
        big = np.iinfo(np.int64).max
        out = np.full(3, big, dtype=np.int64)
        for p in pending:
            for i, r in enumerate(GODEL_METRICS):
                if r in p.requests:
                    out[i] = min(out[i], p.requests[r])
        out[out == big] = 0
        return out
    if gang.min_member == len(pending):
        total: IntArray = np.sum([_metrics(p.requests) for p in pending], axis=0)
        return total.astype(np.int64)
    return _metrics(pending[0].requests) * gang.min_member


def _values(nodes: Sequence[Node], key: str) -> tuple[IntArray, tuple[str, ...]]:
    names = sorted({n.labels[key] for n in nodes if key in n.labels})
    index = {v: i for i, v in enumerate(names)}
    row = np.array([index.get(n.labels.get(key, ""), -1) if key in n.labels else -1 for n in nodes])
    return row.astype(np.int64), tuple(f"{key}:{v};" for v in names)


def godel_plan(model: ClusterModel, gang: Gang) -> GodelPlan | None:
    """Godel job-level affinity of a PodGroup, or None when it has no `podGroupAffinity`."""
    affinity = parse_job_affinity(gang.affinity)  # validated when the manifest was read
    if affinity is None or (not affinity.groups_nodes and affinity.node_selector is None):
        return None
    nodes = model.nodes
    n = len(nodes)
    candidate = np.ones(n, dtype=bool)
    if affinity.node_selector is not None:
        candidate = np.array(
            [_selector_matches(affinity.node_selector, nd) for nd in nodes], dtype=bool
        )
    assigned = sorted(
        {model.pod_by_key[k].node_name or "" for k in gang.members if model.pod_by_key[k].bound}
        & {nd.name for nd in nodes}
    )
    node_index = {nd.name: i for i, nd in enumerate(nodes)}
    blocked = None
    required: IntArray | None = None
    required_names: tuple[str, ...] = ()
    pinned = False
    if affinity.required:
        keys = sorted(set(affinity.required))
        combined = [
            "".join(f"{k}:{nd.labels[k]};" for k in keys)
            if all(k in nd.labels for k in keys)
            else ""
            for nd in nodes
        ]
        required_names = tuple(
            sorted({c for c, ok in zip(combined, candidate, strict=True) if c and ok})
        )
        ids = {c: i for i, c in enumerate(required_names)}
        required = np.array(
            [ids.get(c, -1) if ok else -1 for c, ok in zip(combined, candidate, strict=True)],
            dtype=np.int64,
        )
        if assigned:
            pinned = True
            domains = {combined[node_index[a]] for a in assigned}
            if len(domains) != 1 or "" in domains:
                blocked = "assigned pods are in different topologies"
                required = np.full(n, -1, dtype=np.int64)
            else:
                (only,) = domains
                required_names = (only,)
                required = np.where(np.array(combined) == only, 0, -1).astype(np.int64)
    preferred: list[IntArray] = []
    preferred_names: list[tuple[str, ...]] = []
    preferred_pin: list[int] = []
    for key in affinity.preferred:
        row, names = _values(nodes, key)
        pin = -1
        if assigned:
            values = {int(row[node_index[a]]) for a in assigned}
            if len(values) != 1 or -1 in values:
                break  # running members disagree: Godel stops dividing here
            (pin,) = values
        preferred.append(row)
        preferred_names.append(names)
        preferred_pin.append(pin)
    return GodelPlan(
        candidate=candidate,
        required=required,
        required_names=required_names,
        required_pinned=pinned,
        preferred=tuple(preferred),
        preferred_names=tuple(preferred_names),
        preferred_pin=tuple(preferred_pin),
        sort_rules=_sort_rules(affinity),
        min_request=_min_request(model, gang),
        blocked=blocked,
    )


def godel_node_metrics(model: ClusterModel) -> tuple[IntArray, IntArray]:
    """[N, 3] allocatable and bound requests of CPU, Memory, GPU (Godel's sort metrics)."""
    alloc = np.array([_metrics(nd.allocatable) for nd in model.nodes], dtype=np.int64).reshape(
        -1, 3
    )
    used = np.zeros_like(alloc)
    index = model.node_table.index
    for pod in model.bound_pods:
        i = index.get(pod.node_name or "")
        if i is not None:
            used[i] += _metrics(pod.requests)
    return alloc, used


def iter_unit_gangs(unit_of: Iterable[int], num_units: int) -> list[list[int]]:
    """Gang indices per unit."""
    out: list[list[int]] = [[] for _ in range(num_units)]
    for g, u in enumerate(unit_of):
        out[u].append(g)
    return out


# ----------------------------------------------------------------------------- compile


REASON_OUT_OF_TREE = "node(s) are not in the network topology tree"
REASON_NODE_SELECTOR = "node(s) didn't match PodGroup affinity nodeSelector"
REASON_PINNED = "node(s) are outside the required topology domain of the PodGroup's running pods"


@dataclass
class TopologyParts:
    """The topology fields of the Problem, plus per-gang eligibility masks and block reasons."""

    num_units: int
    num_nodes: int
    layers: tuple[str, ...] = ()
    domains: tuple[tuple[str, ...], ...] = ()
    parent: tuple[IntArray, ...] = ()
    node_domain: IntArray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    gather: dict[int, UnitGather] = field(default_factory=dict)
    godel: dict[int, GodelPlan] = field(default_factory=dict)
    unit_peers_map: dict[int, IntArray] = field(default_factory=dict)
    gang_masks: dict[int, list[tuple[BoolArray, int]]] = field(default_factory=dict)
    gang_block: dict[int, str] = field(default_factory=dict)
    note_list: list[str] = field(default_factory=list)
    godel_allocatable: IntArray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int64))
    godel_requested: IntArray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int64))
    pods_by_key: dict[str, Pod] = field(default_factory=dict)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.note_list))

    @property
    def unit_gather(self) -> BoolArray:
        out = np.zeros(self.num_units, dtype=bool)
        out[list(self.gather)] = True
        return out

    @property
    def unit_gather_layer(self) -> IntArray:
        out = np.full(self.num_units, -1, dtype=np.int64)
        for u, g in self.gather.items():
            if g.must_layer and g.must_layer in self.layers:
                out[u] = self.layers.index(g.must_layer)
        return out

    @property
    def unit_pod_multiple(self) -> IntArray:
        out = np.ones((self.num_units, len(self.layers)), dtype=np.int64)
        for u, g in self.gather.items():
            for layer, m in g.multiples.items():
                if layer in self.layers:
                    out[u, self.layers.index(layer)] = m
        return out

    @property
    def multiple_text(self) -> tuple[str, ...]:
        out = [""] * self.num_units
        for u, g in self.gather.items():
            if g.multiples:
                parts = sorted(f"{layer}={m}" for layer, m in g.multiples.items())
                out[u] = f"; podCountMultiple constraints: {', '.join(parts)}"
        return tuple(out)

    @property
    def unit_peers(self) -> tuple[IntArray, ...]:
        empty = np.zeros(0, dtype=np.int64)
        return tuple(self.unit_peers_map.get(u, empty) for u in range(self.num_units))

    @property
    def unit_domain(self) -> tuple[IntArray | None, ...]:
        layer = self.unit_gather_layer
        out: list[IntArray | None] = [None] * self.num_units
        for u in self.gather:
            if layer[u] >= 0:
                out[u] = self.node_domain[layer[u]]
        for u, plan in self.godel.items():
            out[u] = plan.required
        return tuple(out)

    @property
    def unit_domain_names(self) -> tuple[tuple[str, ...], ...]:
        layer = self.unit_gather_layer
        out: list[tuple[str, ...]] = [()] * self.num_units
        for u in self.gather:
            if layer[u] >= 0:
                out[u] = self.domains[layer[u]]
        for u, plan in self.godel.items():
            out[u] = plan.required_names if plan.required is not None else ()
        return tuple(out)

    @property
    def unit_godel(self) -> tuple[GodelPlan | None, ...]:
        return tuple(self.godel.get(u) for u in range(self.num_units))

    def blocked(self, base: Sequence[str | None]) -> tuple[str | None, ...]:
        return tuple(
            reason if reason is not None else self.gang_block.get(g)
            for g, reason in enumerate(base)
        )

    def rank_types(
        self, type_gang: Sequence[int], type_pods: list[list[str]], unit_of: Sequence[int]
    ) -> tuple[IntArray, ...]:
        """Each pod's rank in its unit's order; sorts `type_pods` of gather units in place."""
        members: dict[int, list[tuple[int, str]]] = {}
        for t, pods in enumerate(type_pods):
            members.setdefault(unit_of[type_gang[t]], []).extend((t, key) for key in pods)
        ranks: list[dict[str, int]] = [{} for _ in type_pods]
        for u, items in members.items():
            if u in self.gather:
                items.sort(key=lambda item: gather_rank_key(self.pods_by_key[item[1]]))
            else:
                items.sort(key=lambda item: item[1])
            for rank, (t, key) in enumerate(items):
                ranks[t][key] = rank
        out: list[IntArray] = []
        for t, pods in enumerate(type_pods):
            pods.sort(key=lambda key: ranks[t][key])
            out.append(np.array([ranks[t][key] for key in pods], dtype=np.int64))
        return tuple(out)


def compile_topology(
    model: ClusterModel, conf: SchedulerConf, plan: GangPlan, code_of: Callable[[str], int]
) -> TopologyParts:
    """Everything topology adds to the Problem (`network-topology` and `job-affinity` plugins)."""
    num_units = len(plan.unit_ids)
    parts = TopologyParts(num_units=num_units, num_nodes=len(model.nodes))
    parts.pods_by_key = model.pod_by_key
    unit_gangs = iter_unit_gangs(plan.unit, num_units)
    if conf.enabled("network-topology"):
        _compile_gather(model, plan, unit_gangs, parts, code_of)
    if conf.enabled("job-affinity"):
        _compile_godel(model, plan, unit_gangs, parts, code_of)
    return parts


def _compile_gather(
    model: ClusterModel,
    plan: GangPlan,
    unit_gangs: list[list[int]],
    parts: TopologyParts,
    code_of: Callable[[str], int],
) -> None:
    if not any(model.gangs[gid].annotations.get(ANNOTATION_SPEC) for gid in plan.gang_ids):
        return
    tree: TopologyTree | None = None
    tree_error: str | None = None
    try:
        tree = build_tree(model.topology, model.nodes)
    except InputError as err:
        tree_error = str(err)
    for u, gangs in enumerate(unit_gangs):
        ids = [plan.gang_ids[g] for g in gangs]
        gather, notes = unit_gather(model, ids, tree, tree_error)
        parts.note_list.extend(notes)
        if gather is None:
            continue
        parts.gather[u] = gather
        if gather.blocked:
            for g in gangs:
                parts.gang_block.setdefault(g, gather.blocked)
        if gather.selector:
            parts.unit_peers_map[u] = peer_counts(model, gather.selector)
    if not parts.gather:
        return
    if tree is None:
        parts.note_list.append(
            f"topology-aware gang groups cannot be placed: no cluster network topology ({tree_error})"
        )
        return
    parts.layers = tree.layers
    parts.domains = tree.domains
    parts.parent = tree.parent
    parts.node_domain = tree.node_domain
    outside = ~tree.in_tree
    if outside.any():
        code = code_of(REASON_OUT_OF_TREE)
        for u in parts.gather:
            for g in unit_gangs[u]:
                parts.gang_masks.setdefault(g, []).append((tree.in_tree, code))


def _compile_godel(
    model: ClusterModel,
    plan: GangPlan,
    unit_gangs: list[list[int]],
    parts: TopologyParts,
    code_of: Callable[[str], int],
) -> None:
    if not any(gang.dialect == DIALECT_GODEL for gang in model.gangs.values()):
        return
    for u, gangs in enumerate(unit_gangs):
        godel = [g for g in gangs if model.gangs[plan.gang_ids[g]].dialect == DIALECT_GODEL]
        if not godel:
            continue
        gid = plan.gang_ids[godel[0]]
        if len(gangs) > 1 or u in parts.gather:
            if model.gangs[gid].affinity:
                parts.note_list.append(
                    f"PodGroup {gid}: Godel job-level affinity applies to a single PodGroup "
                    "without a Koordinator network-topology-spec; ignored here"
                )
            continue
        godel_plan_ = godel_plan(model, model.gangs[gid])
        if godel_plan_ is None:
            continue
        g = godel[0]
        masks = parts.gang_masks.setdefault(g, [])
        if not godel_plan_.candidate.all():
            masks.append((godel_plan_.candidate, code_of(REASON_NODE_SELECTOR)))
        if godel_plan_.required is not None:
            usable = (godel_plan_.required >= 0) | ~godel_plan_.candidate
            if godel_plan_.required_pinned:
                reason = REASON_PINNED
            else:
                keys = ", ".join(sorted(set(_affinity(model.gangs[gid]).required)))
                reason = f"node(s) lack the PodGroup's required topology key(s) {keys}"
            masks.append((usable, code_of(reason)))
        if godel_plan_.blocked:
            parts.gang_block.setdefault(g, f"gang {gid}: {godel_plan_.blocked}")
        parts.godel[u] = godel_plan_
    if parts.godel and parts.godel_allocatable.shape[0] != len(model.nodes):
        parts.godel_allocatable, parts.godel_requested = godel_node_metrics(model)


def _affinity(gang: Gang) -> JobAffinity:
    affinity = parse_job_affinity(gang.affinity)
    return affinity if affinity is not None else JobAffinity()
