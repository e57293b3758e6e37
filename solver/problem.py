"""The Problem: the contract between policies and engines, as integer numpy arrays.

Axes: N nodes (sorted by name), R resources, T pod types, G gangs, U units (gang groups).
A pod type is a set of pending pods with identical demand, eligibility, scores and gang,
so engines reason about counts, not names. Built once by `solver.compile`, read-only
afterwards (every array is made non-writeable); engines keep their own scratch state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["GodelPlan", "Problem"]

IntArray = npt.NDArray[np.int64]
QUOTA_UNLIMITED = 2**62  # a queue_headroom entry without a limit
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


def _frozen_int(shape: tuple[int, ...]) -> IntArray:
    return np.zeros(shape, dtype=np.int64)


def _frozen_bool(shape: tuple[int, ...]) -> BoolArray:
    return np.zeros(shape, dtype=bool)


@dataclass(frozen=True, eq=False)
class GodelPlan:
    """Godel job-level affinity of one PodGroup unit as node arrays (built by policies/topology.py).

    The greedy orders NodeGroups/NodeCircles from these at placement time (`Available` moves
    as units land); the hard part for any engine is `Problem.unit_domain` + `eligible`.
    """

    candidate: BoolArray  # [N] node passes the PodGroup nodeSelector (Godel Locating)
    required: IntArray | None  # [N] combined required-key domain (`k1:v1;k2:v2;`); -1 unusable
    required_names: tuple[str, ...]  # name of each required domain id
    required_pinned: bool  # running members fix the domain: no sorting, no cut-off
    preferred: tuple[IntArray, ...]  # per preferred term (largest first): [N] value id, -1 = no key
    preferred_names: tuple[tuple[str, ...], ...]  # per term: `key:value;` of each value id
    preferred_pin: tuple[int, ...]  # per term: running members' value id (only that child); -1
    sort_rules: tuple[tuple[int, bool, bool], ...] | None  # (metric column of
    #   godel_allocatable, Available?, Ascending?); None = an invalid rule: no sort, no cut-off
    min_request: IntArray  # [3] the unit's minimum request (cpu, memory, gpu) for cut-off
    blocked: str | None = None  # why the unit can never be placed (running pods disagree)

    def __post_init__(self) -> None:
        for value in (self.candidate, self.required, self.min_request, *self.preferred):
            if value is not None:
                value.flags.writeable = False


@dataclass(frozen=True, eq=False)
class Problem:
    # --- nodes × resources
    resources: tuple[str, ...]  # R names; cpu in milli, others in base units
    node_names: tuple[str, ...]  # N names, sorted
    capacity: IntArray  # [N, R] allocatable
    free: IntArray  # [N, R] allocatable − requests of bound pods (negative when overcommitted)

    # --- pod types
    type_demand: IntArray  # [T, R] request of one pod of the type
    type_gang: IntArray  # [T] gang index
    type_pods: tuple[tuple[str, ...], ...]  # [T] pod keys of the type, in placement order
    eligible: BoolArray  # [T, N] node passes every non-resource predicate
    ineligible_reason: IntArray  # [T, N] index into reason_texts; 0 where eligible
    reason_texts: tuple[str, ...]  # [0] is "" (eligible)
    static_score: FloatArray  # [T, N] scores that do not depend on usage (affinity plugins)

    # --- gangs and units
    gang_ids: tuple[str, ...]  # G
    gang_need: IntArray  # [G] new placements required to satisfy the gang; 0 = pod by pod
    gang_pending: IntArray  # [G] pending pods
    gang_unit: IntArray  # [G] unit index
    gang_requires: tuple[tuple[int, int], ...]  # (g, h): g may be placed only if h is satisfied
    gang_blocked: tuple[str | None, ...]  # [G] why the gang cannot be satisfied at all
    unit_ids: tuple[str, ...]  # U GangGroup ids
    unit_priority: IntArray  # [U] highest priority among the unit's pending pods
    unit_order: IntArray  # [U] unit indices in the order the greedy places them

    # --- scoring
    binpack_weight: float  # Volcano binpack.weight; 0 when the plugin is off
    binpack_resource_weight: FloatArray  # [R] per-resource binpack weight (0 = not scored)

    notes: tuple[str, ...] = field(default=())

    # --- network topology: Koordinator's tree (solver/policies/topology.py). L layers top->down,
    # D_l domains in layer l. Empty (L = 0) when no unit asks for topology or there is no tree.
    topo_layers: tuple[str, ...] = ()  # [L] [0] "ClusterTopologyLayer" (root, 1 domain ""),
    #   [1..L-2] the CR's layers (e.g. SpineLayer, BlockLayer), [L-1] "NodeTopologyLayer"
    topo_domains: tuple[tuple[str, ...], ...] = ()  # [L][D_l] names; sorted, so index order is
    #   name order; layer L-1 is node_names (domain d of the node layer = node d, D_{L-1} = N)
    topo_parent: tuple[IntArray, ...] = ()  # [L][D_l] parent's index in layer l-1; -1 for the
    #   root and for nodes left out of the tree
    node_domain: IntArray = field(default_factory=lambda: _frozen_int((0, 0)))  # [L, N] domain
    #   of node n in layer l; -1 in every layer when the node is out of the tree

    # --- per unit: Koordinator gather (network-topology-spec of the group's first gang)
    unit_gather: BoolArray = field(default_factory=lambda: _frozen_bool((0,)))  # [U] placed by
    #   the offer-slot gather (greedy); False = ordinary unit. Empty array = no unit gathers
    unit_gather_layer: IntArray = field(default_factory=lambda: _frozen_int((0,)))  # [U] index
    #   into topo_layers of the deepest MustGather layer; -1 = none (HARD when >= 0: every new
    #   pod of the unit on nodes of ONE domain of that layer, i.e. one value of
    #   node_domain[unit_gather_layer[u]]; also given as unit_domain[u])
    unit_pod_multiple: IntArray = field(default_factory=lambda: _frozen_int((0, 0)))  # [U, L]
    #   podCountMultiple per layer, 1 = none (HARD when > 1: in every domain d of layer l the
    #   unit's new pods number a multiple of it, 0 allowed; l = L-1 means per node)
    unit_peers: tuple[IntArray, ...] = ()  # [U] int [N] bound pods per node sharing the unit's
    #   network-topology-selector (ExistingPodNum); shape (0,) when the unit has no selector
    gather_multiple_text: tuple[str, ...] = ()  # [U] "; podCountMultiple constraints: ..." for
    #   failure messages (layer names as the spec wrote them), "" when none

    # --- per unit: the hard "one domain" rule, engine-neutral (Koordinator MustGather and Godel
    # required terms). None = no such rule. Else int [N]: every new pod of the unit must go to
    # nodes sharing ONE value >= 0; -1 = node unusable for the unit (already False in
    # `eligible` for the unit's types). Godel running members pin it: only one value is >= 0.
    unit_domain: tuple[IntArray | None, ...] = ()  # [U]
    unit_domain_names: tuple[tuple[str, ...], ...] = ()  # [U] name of each value of unit_domain

    # --- per unit: Godel job-level affinity (NodeGroups/NodeCircles built by the greedy)
    unit_godel: tuple[GodelPlan | None, ...] = ()  # [U]
    godel_allocatable: IntArray = field(default_factory=lambda: _frozen_int((0, 3)))  # [N, 3]
    #   cpu (milli), memory (bytes), nvidia.com/gpu allocatable: Godel's sort/cut-off metrics
    godel_requested: IntArray = field(default_factory=lambda: _frozen_int((0, 3)))  # [N, 3]
    #   the same, requested by bound pods (Available = allocatable - requested, per domain)

    # --- pod order inside a unit
    type_rank: tuple[IntArray, ...] = ()  # [T] int [len(type_pods[t])]: each pod's 0-based rank
    #   in its unit's pod order (gather units: network-topology-index, then name; others: key
    #   order). type_pods[t] is listed in rank order. Consecutive ranks should share the lowest
    #   domain (index adjacency). Empty tuple = key order everywhere.

    # --- queues (capacity plugin, solver/policies/queues.py): Q queues on the paths of the
    # pending jobs' leaf queues. Empty when no queue is in play.
    queue_names: tuple[str, ...] = ()  # [Q]
    quota_dims: tuple[str, ...] = ()  # [D] what queues limit: the resources (capacity) or
    #   cpu, memory and `card:<card type>` (capacity-card)
    queue_headroom: IntArray = field(default_factory=lambda: _frozen_int((0, 0)))  # [Q, D]
    #   realCapability − allocated at the start of the cycle; QUOTA_UNLIMITED = no limit
    #   (HARD: Σ over types t with q in type_queues[t] of type_quota_demand[t, d] · placed(t)
    #   ≤ headroom[q, d]; card dims: Σ over pods on nodes n with type_node_card[t, n] = d of
    #   type_card_count[t] ≤ headroom[q, d])
    type_queues: tuple[tuple[int, ...], ...] = ()  # [T] the type's leaf queue and ancestors
    type_quota_demand: IntArray = field(default_factory=lambda: _frozen_int((0, 0)))  # [T, D]
    #   one pod's use of each non-card quota dim (cpu/memory 0 under cardUnlimitedCpuMemory)
    type_card_dims: tuple[tuple[int, ...], ...] = ()  # [T] card alternatives (quota dims),
    #   preferred first; () = no card demand
    type_card_count: IntArray = field(default_factory=lambda: _frozen_int((0,)))  # [T] cards/pod
    type_node_card: IntArray = field(default_factory=lambda: _frozen_int((0, 0)))  # [T, N]
    #   quota dim of the card type a pod of type t uses on node n (the first alternative the
    #   node offers); -1 = none (such nodes are ineligible for card pods)
    gang_enqueue_reason: tuple[str | None, ...] = ()  # [G] why the job may not enter its
    #   queue this cycle (also in gang_blocked); None = enqueued

    def __post_init__(self) -> None:
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            elif isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
                for item in value:
                    if isinstance(item, np.ndarray):
                        item.flags.writeable = False

    @property
    def num_layers(self) -> int:
        return len(self.topo_layers)

    def is_gather(self, u: int) -> bool:
        return bool(self.unit_gather.size and self.unit_gather[u])

    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    @property
    def num_types(self) -> int:
        return len(self.type_pods)

    @property
    def num_pods(self) -> int:
        return sum(len(p) for p in self.type_pods)

    def gang_types(self, g: int) -> list[int]:
        return [int(t) for t in np.flatnonzero(self.type_gang == g)]

    def binpack_scores(self, t: int, used: IntArray, nodes: IntArray | None = None) -> FloatArray:
        """Volcano binpack score of one pod of type `t` on `nodes` (default all), given their `used`."""
        capacity = self.capacity if nodes is None else self.capacity[nodes]
        if self.binpack_weight <= 0:
            return np.zeros(capacity.shape[0])
        demand = self.type_demand[t]
        w = np.where(demand > 0, self.binpack_resource_weight, 0.0)
        wsum = w.sum()
        if wsum <= 0:
            return np.zeros(capacity.shape[0])
        after = used + demand
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where((capacity > 0) & (after <= capacity), after / capacity, 0.0)
        return np.asarray((frac @ w) / wsum * 100.0 * self.binpack_weight, dtype=np.float64)
