"""Independent re-check of a Decision against the model, not the Problem.

Written from the Kubernetes and Koordinator rules directly, without the policies or the
Problem, so a bug in compiling cannot hide. Returns every violation found (empty list:
the Decision is valid); `check()` raises InternalError instead. Pods nominated after
preemption count as placed on their nominated node, and victims as gone.

Rules checked:
0. victims are bound pods, not labelled non-preemptible, with the DisruptionTarget
   message, and (preemption, not a queue's reclaim) of lower priority than the pods placed or
   nominated;
1. every placement names a pending pod of the model and an existing node (or none);
2. capacity: on every node, bound pods + newly placed pods fit `allocatable` in every
   resource a newly placed pod requests (the pod count included);
3. with `predicates`: cordon/readiness (unless tolerated), NoSchedule/NoExecute taints,
   nodeSelector, required node affinity;
4. with `gang`: a gang with placed pods reaches its minMember share (bound members count
   as its match policy says), and so does every gang in its `groups` list;
5. `podgroups[..].placed` agrees with the placements;
6. with `network-topology`: in a GangGroup whose first gang (lowest id with a pending pod)
   carries a valid `network-topology-spec`, every newly placed pod is on a node of the
   network tree, all of them share one domain of the deepest MustGather layer, and in every
   domain of a layer with `podCountMultiple` m their count is a multiple of m — domains
   read from the nodes' labels and `ClusterNetworkTopology/default` here, not from the
   Problem;
7. with `job-affinity`: a Godel PodGroup's placed pods match its `nodeSelector`, and its
   placed and running pods share one value of every `required` topology key;
8. with `capacity` (or `capacity-card`): no newly placed pod belongs to a job reported as not enqueued, and for
   every queue (leaf and every ancestor) allocated + the requests of its newly placed pods
   stay within realCapability in each resource those pods request (realCapability from
   the queue tree's definition, usage summed here from the pods);
9. with `nodegroup`: every newly placed pod of a job in a queue is on a node its queue's
   node-group affinity allows;
10. with `capacity-card`: a pod with `volcano.sh/card.name` is reported with a card type
    that is one of its alternatives and that its node offers (from the node's labels and
    allocatable), and rule 8's quotas count that card type (cpu/memory left out under
    `cardUnlimitedCpuMemory`).
"""

from __future__ import annotations

from collections import defaultdict

from solver.config import SchedulerConf
from solver.decision import Decision
from solver.errors import InternalError
from solver.model import (
    CLUSTER_LAYER,
    MUST_GATHER,
    NODE_LAYER,
    ClusterModel,
    Gang,
    GatherSpecError,
    MatchPolicy,
    Node,
    Pod,
    parse_gather_spec,
    parse_job_affinity,
)

__all__ = ["check", "verify"]


def verify(model: ClusterModel, conf: SchedulerConf, decision: Decision) -> list[str]:
    problems: list[str] = []
    pods = model.pod_by_key
    nodes = model.node_by_name
    new_on: dict[str, list[Pod]] = defaultdict(list)  # placed and nominated pods per node
    placed_count: dict[str, int] = defaultdict(int)  # bound this cycle, per gang
    for key, placement in decision.placements.items():
        pod = pods.get(key)
        if pod is None or not pod.pending:
            problems.append(f"{key}: not a pending pod of the input")
            continue
        target = placement.node or placement.nominated
        if target is None:
            continue
        if placement.node and placement.nominated:
            problems.append(f"{key}: both placed and nominated")
        if target not in nodes:
            problems.append(f"{key}: placed on unknown node {target}")
            continue
        new_on[target].append(pod)
        if placement.node:
            placed_count[pod.gang] += 1

    evicted = {v.pod for v in decision.victims}
    problems.extend(_victims(model, decision, new_on))
    running_on: dict[str, list[Pod]] = defaultdict(list)  # one pass, not one per node
    for pod in model.bound_pods:
        if pod.node_name in new_on and pod.key not in evicted:
            running_on[pod.node_name].append(pod)
    for node_name, new_pods in new_on.items():
        problems.extend(_capacity(nodes[node_name], running_on[node_name], new_pods))
        if conf.enabled("predicates"):
            for pod in new_pods:
                why = _predicate_violation(pod, nodes[node_name])
                if why:
                    problems.append(f"{pod.key} on {node_name}: {why}")

    taken: dict[str, int] = defaultdict(int)  # placed or nominated, per gang
    for pods_here in new_on.values():
        for pod in pods_here:
            taken[pod.gang] += 1
    if conf.enabled("gang"):
        problems.extend(_gangs(model, conf, taken))

    placed_nodes = {
        key: target
        for key, p in decision.placements.items()
        if (target := p.node or p.nominated) in nodes
    }
    if conf.enabled("network-topology"):
        problems.extend(_gather(model, conf, placed_nodes))
    if conf.enabled("job-affinity"):
        problems.extend(_job_affinity(model, conf, placed_nodes))
    if conf.enabled("capacity") or conf.enabled("capacity-card"):
        problems.extend(_queues(model, conf, decision, new_on))
    if conf.enabled("nodegroup"):
        problems.extend(_nodegroups(model, conf, new_on))
    if conf.enabled("capacity-card"):
        problems.extend(_cards(model, decision, new_on))

    for gid, outcome in decision.podgroups.items():
        gang = model.gangs.get(gid)
        if gang is None:
            problems.append(f"podgroup {gid}: not in the input")
        elif placed_count[gid] > 0 and not outcome.placed:
            problems.append(f"podgroup {gid}: pods placed but reported as not placed")
        elif (
            outcome.placed and placed_count[gid] == 0 and any(pods[k].pending for k in gang.members)
        ):
            problems.append(f"podgroup {gid}: reported placed but no pending member was placed")
    return problems


def check(model: ClusterModel, conf: SchedulerConf, decision: Decision) -> None:
    """Raise InternalError listing the violations, if any."""
    problems = verify(model, conf, decision)
    if problems:
        listed = "\n  ".join(problems[:20])
        raise InternalError(f"decision failed verification ({len(problems)}):\n  {listed}")


def _victims(model: ClusterModel, decision: Decision, new_on: dict[str, list[Pod]]) -> list[str]:
    """Victims are bound, evictable pods of lower priority than the pods they make room for."""
    problems = []
    top = max((p.priority for pods in new_on.values() for p in pods), default=None)
    never = (
        ("scheduling.koordinator.sh/disable-preemptible", "true"),
        ("quota.scheduling.koordinator.sh/preemptible", "false"),
        ("volcano.sh/preemptable", "false"),
    )
    for victim in decision.victims:
        pod = model.pod_by_key.get(victim.pod)
        if pod is None or not pod.bound or pod.node_name != victim.node:
            problems.append(f"victim {victim.pod}: not a pod bound to {victim.node}")
            continue
        if any(pod.labels.get(k) == v or pod.annotations.get(k) == v for k, v in never):
            problems.append(f"victim {victim.pod}: labelled as not preemptible")
        reclaimed = ": reclaiming for queue " in victim.message
        if not reclaimed and (top is None or pod.priority >= top):
            problems.append(
                f"victim {victim.pod}: priority {pod.priority} is not below the preemptor's"
            )
        if "preempting to accommodate higher priority pods" not in victim.message and not reclaimed:
            problems.append(f"victim {victim.pod}: no DisruptionTarget message")
    return problems


def _capacity(node: Node, running: list[Pod], new_pods: list[Pod]) -> list[str]:
    """`running`: the node's bound pods that stay (not evicted)."""
    checked = {r for pod in new_pods for r in pod.requests}
    total: dict[str, int] = defaultdict(int)
    for pod in running:
        for r, v in pod.requests.items():
            total[r] += v
    for pod in new_pods:
        for r, v in pod.requests.items():
            total[r] += v
    return [
        f"{node.name}: {r} requested {total[r]} > allocatable {node.allocatable.get(r, 0)}"
        for r in sorted(checked)
        if total[r] > node.allocatable.get(r, 0)
    ]


def _tolerated(pod: Pod, key: str, value: str, effect: str) -> bool:
    for t in pod.tolerations:
        key_ok = t.key == key or (t.key == "" and t.operator == "Exists")
        effect_ok = t.effect in ("", effect)
        value_ok = t.operator == "Exists" or t.value == value
        if key_ok and effect_ok and value_ok:
            return True
    return False


def _label_expression_holds(
    labels: dict[str, str], key: str, op: str, values: tuple[str, ...]
) -> bool:
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if key not in labels or not labels[key].lstrip("-").isdigit():
        return False
    return int(labels[key]) > int(values[0]) if op == "Gt" else int(labels[key]) < int(values[0])


def _predicate_violation(pod: Pod, node: Node) -> str | None:
    if node.unschedulable and not _tolerated(
        pod, "node.kubernetes.io/unschedulable", "", "NoSchedule"
    ):
        return "node is cordoned"
    if not node.ready and not _tolerated(pod, "node.kubernetes.io/not-ready", "", "NoSchedule"):
        return "node is not ready"
    for taint in node.taints:
        if taint.effect != "PreferNoSchedule" and not _tolerated(
            pod, taint.key, taint.value, taint.effect
        ):
            return f"taint {taint.key}={taint.value}:{taint.effect} not tolerated"
    for key, value in pod.node_selector.items():
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value} not matched"
    if pod.required_affinity is not None:
        fields = {"metadata.name": node.name}
        term_holds = [
            (bool(term.match_expressions) or bool(term.match_fields))
            and all(
                _label_expression_holds(node.labels, e.key, e.operator, e.values)
                for e in term.match_expressions
            )
            and all(
                _label_expression_holds(fields, e.key, e.operator, e.values)
                for e in term.match_fields
            )
            for term in pod.required_affinity
        ]
        if not any(term_holds):
            return "required node affinity not matched"
    return None


def _required_new(
    model: ClusterModel, conf: SchedulerConf, gang: Gang, group_has_bound: bool
) -> int:
    policy = gang.match_policy
    if policy is None:
        text = conf.arguments("gang").get("defaultMatchPolicy", "once-satisfied")
        policy = (
            MatchPolicy(text)
            if text in {p.value for p in MatchPolicy}
            else MatchPolicy.ONCE_SATISFIED
        )
    bound = sum(1 for k in gang.members if model.pod_by_key[k].bound)
    if policy is MatchPolicy.WAITING_AND_RUNNING:
        return max(0, gang.min_member - bound)
    if policy is MatchPolicy.ONCE_SATISFIED and group_has_bound:
        return 0
    return gang.min_member


def _gangs(model: ClusterModel, conf: SchedulerConf, placed: dict[str, int]) -> list[str]:
    # once-satisfied is shared by the gangs joined through `groups` (either direction).
    linked: dict[str, set[str]] = defaultdict(set)
    for gid, gang in model.gangs.items():
        for other in gang.groups:
            linked[gid].add(other)
            linked[other].add(gid)
    problems = []
    for gid, gang in model.gangs.items():
        if placed[gid] == 0:
            continue
        seen, stack = {gid}, [gid]
        while stack:
            for other in linked[stack.pop()]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        group_has_bound = any(
            model.pod_by_key[k].bound
            for o in seen
            if o in model.gangs
            for k in model.gangs[o].members
        )
        for member in gang.groups:
            member_gang = model.gangs.get(member)
            if member_gang is None:
                problems.append(f"gang {gid}: placed although group member {member} does not exist")
                continue
            need = _required_new(model, conf, member_gang, group_has_bound)
            if placed[member] < need:
                problems.append(
                    f"gang {gid}: placed while gang {member} has {placed[member]} of {need} "
                    "required new pods"
                )
    return problems


# ----------------------------------------------------------------------------- topology

_SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"


def _components(model: ClusterModel, conf: SchedulerConf) -> list[list[str]]:
    """GangGroups: gangs joined by `groups` (either direction; only with `gang`), sorted by id."""
    linked: dict[str, set[str]] = defaultdict(set)
    gang_on = conf.enabled("gang")
    for gid, gang in model.gangs.items():
        for other in gang.groups if gang_on else ():
            if other in model.gangs:
                linked[gid].add(other)
                linked[other].add(gid)
    seen: set[str] = set()
    out: list[list[str]] = []
    for gid in sorted(model.gangs):
        if gid in seen:
            continue
        group, stack = {gid}, [gid]
        while stack:
            for other in linked[stack.pop()]:
                if other not in group:
                    group.add(other)
                    stack.append(other)
        seen |= group
        out.append(sorted(group))
    return out


def _node_paths(model: ClusterModel) -> tuple[list[str], dict[str, dict[str, str]]] | None:
    """Layer names top -> down and, per node in the tree, its domain name in every layer."""
    topology = model.topology
    if topology is None:
        return None
    spec = {layer.name: layer for layer in topology.layers}
    chain: list[str] = []
    current = NODE_LAYER
    for _ in topology.layers:
        if current not in spec:
            return None
        chain.append(current)
        current = spec[current].parent or ""
    chain.reverse()
    if not chain or chain[-1] != NODE_LAYER:
        return None
    parent_of: dict[tuple[str, str], tuple[str, str]] = {}
    leaf: dict[str, tuple[str, str]] = {}
    for node in model.nodes:  # name order: the first node to name a domain attaches it
        metas: list[tuple[str, str]] = []
        for depth, layer in enumerate(chain):
            if layer == NODE_LAYER:
                metas.append((layer, node.name))
                continue
            value = next((node.labels[k] for k in spec[layer].label_keys if node.labels.get(k)), "")
            if not value and depth == len(chain) - 2:
                value = node.name
            if not value:
                break
            metas.append((layer, value))
        if len(metas) != len(chain):
            continue
        above = (CLUSTER_LAYER, "")
        for meta in metas:
            parent_of.setdefault(meta, above)
            above = meta
        leaf[node.name] = metas[-1]
    paths: dict[str, dict[str, str]] = {}
    for name, meta in leaf.items():
        path: dict[str, str] = {}
        walk: tuple[str, str] | None = meta
        while walk is not None and walk[0] != CLUSTER_LAYER:
            path[walk[0]] = walk[1]
            walk = parent_of.get(walk)
        path[CLUSTER_LAYER] = ""
        paths[name] = path
    return [CLUSTER_LAYER, *chain], paths


def _gather(model: ClusterModel, conf: SchedulerConf, placed: dict[str, str]) -> list[str]:
    problems: list[str] = []
    if not any(_SPEC in g.annotations for g in model.gangs.values()):
        return problems  # no gang asks to be gathered
    tree = _node_paths(model)
    for group in _components(model, conf):
        first = next(
            (g for g in group if any(model.pod_by_key[k].pending for k in model.gangs[g].members)),
            None,
        )
        text = model.gangs[first].annotations.get(_SPEC) if first else None
        if not text:
            continue
        try:
            spec = parse_gather_spec(text)
        except GatherSpecError:
            continue  # Koordinator ignores a malformed spec
        pods = [k for g in group for k in model.gangs[g].members if k in placed]
        if not pods:
            continue
        name = ",".join(group)
        if tree is None:
            problems.append(f"gang group {name}: placed by topology without a network tree")
            continue
        layers, paths = tree
        outside = sorted({placed[k] for k in pods if placed[k] not in paths})
        if outside:
            problems.append(f"gang group {name}: pods on nodes outside the network tree: {outside}")
            continue
        depth = {layer: i for i, layer in enumerate(layers)}
        musts = [r.layer for r in spec.rules if r.strategy == MUST_GATHER]
        known = [m for m in musts if m in depth]
        if musts and not known:
            problems.append(f"gang group {name}: placed although its MustGather layer is unknown")
        elif known:
            layer = max(known, key=lambda m: depth[m])
            domains = sorted({paths[placed[k]][layer] for k in pods})
            if len(domains) > 1:
                problems.append(f"gang group {name}: MustGather {layer} spans domains {domains}")
        multiples = {r.layer: r.pod_count_multiple for r in spec.rules if r.pod_count_multiple > 1}
        for layer, m in multiples.items():
            if layer not in depth:
                continue
            counts: dict[str, int] = defaultdict(int)
            for k in pods:
                counts[paths[placed[k]][layer]] += 1
            bad = {d: c for d, c in sorted(counts.items()) if c % m}
            if bad:
                problems.append(f"gang group {name}: {layer} podCountMultiple {m} broken: {bad}")
    return problems


def _job_affinity(model: ClusterModel, conf: SchedulerConf, placed: dict[str, str]) -> list[str]:
    problems: list[str] = []
    if not any(
        g.dialect == "scheduling.godel.kubewharf.io" and g.affinity is not None
        for g in model.gangs.values()
    ):
        return problems  # no Godel job-level affinity to check
    nodes = model.node_by_name
    for group in _components(model, conf):
        if len(group) != 1:
            continue
        gang = model.gangs[group[0]]
        if gang.dialect != "scheduling.godel.kubewharf.io" or gang.affinity is None:
            continue
        text = gang.annotations.get(_SPEC)
        if conf.enabled("network-topology") and text:
            try:
                parse_gather_spec(text)
                continue  # the Koordinator spec takes precedence
            except GatherSpecError:
                pass
        affinity = parse_job_affinity(gang.affinity)
        if affinity is None:
            continue
        new = [placed[k] for k in gang.members if k in placed]
        if not new:
            continue
        if affinity.node_selector is not None:
            for node_name in sorted(set(new)):
                labels = nodes[node_name].labels
                ok = any(
                    (
                        term.match_expressions
                        and all(
                            _label_expression_holds(labels, e.key, e.operator, e.values)
                            for e in term.match_expressions
                        )
                    )
                    or (not term.match_expressions and term.match_fields)
                    for term in affinity.node_selector
                )
                if not ok:
                    problems.append(
                        f"gang {gang.id}: pod on {node_name} misses the PodGroup nodeSelector"
                    )
        if affinity.required:
            running = [
                model.pod_by_key[k].node_name or ""
                for k in gang.members
                if model.pod_by_key[k].bound and model.pod_by_key[k].node_name in nodes
            ]
            values = set()
            for node_name in set(new) | set(running):
                labels = nodes[node_name].labels
                values.add(tuple(labels.get(key) for key in sorted(set(affinity.required))))
            if len(values) != 1 or None in next(iter(values)):
                problems.append(
                    f"gang {gang.id}: pods span required topology domains {sorted(map(str, values))}"
                )
    return problems


def _queues(
    model: ClusterModel, conf: SchedulerConf, decision: Decision, new_on: dict[str, list[Pod]]
) -> list[str]:
    from solver.policies.queues import INF, build_queue_tree, job_queue

    problems: list[str] = []
    placed = [pod for pods in new_on.values() for pod in pods]
    for pod in placed:
        outcome = decision.podgroups.get(pod.gang)
        if outcome is not None and not outcome.enqueued:
            problems.append(f"{pod.key}: placed although its job {pod.gang} was not enqueued")
    tree = build_queue_tree(model, conf)
    if tree is None:
        return problems
    added: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    node_of = {pod.key: node for node, pods in new_on.items() for pod in pods}
    for pod in placed:
        use = {r: v for r, v in pod.requests.items() if r != "pods"}
        if tree.card_mode:
            use, _ = _card_use(
                model,
                tree.unlimited_cpu_memory,
                pod,
                node_of[pod.key],
                decision.placements[pod.key].card,
            )
        leaf = job_queue(model, pod.gang)
        if leaf is None:
            continue
        if leaf not in tree.queues or tree.broken or not tree.queues[leaf].leaf:
            problems.append(f"{pod.key}: placed although queue {leaf} cannot run jobs")
            continue
        for name in tree.path(leaf):
            for r, v in use.items():
                added[name][r] += v
    for name, extra in sorted(added.items()):
        q = tree.queues[name]
        for r, v in sorted(extra.items()):
            limit = q.real_capability.get(r, INF)
            if v and limit < INF and q.allocated.get(r, 0) + v > limit:
                problems.append(
                    f"queue {name}: {r} allocated {q.allocated.get(r, 0)} + placed {v} > "
                    f"realCapability {limit}"
                )
    return problems


def _nodegroups(
    model: ClusterModel, conf: SchedulerConf, new_on: dict[str, list[Pod]]
) -> list[str]:
    from solver.policies.nodegroup import nodegroup_verdict
    from solver.policies.queues import job_queue

    problems: list[str] = []
    index = model.node_table.index
    verdicts: dict[str, list[str | None]] = {}
    queue_of: dict[str, str | None] = {}
    for node_name, pods in sorted(new_on.items()):
        for pod in pods:
            if pod.gang not in queue_of:
                queue_of[pod.gang] = job_queue(model, pod.gang)
            queue = queue_of[pod.gang]
            if queue is None:
                continue
            if queue not in verdicts:
                verdicts[queue] = nodegroup_verdict(model, conf, queue)[0]
            why = verdicts[queue][index[node_name]]
            if why:
                problems.append(f"{pod.key} on {node_name}: {why} (queue {queue})")
    return problems


def _cards(model: ClusterModel, decision: Decision, new_on: dict[str, list[Pod]]) -> list[str]:
    problems = []
    for node_name, pods in sorted(new_on.items()):
        for pod in pods:
            _, why = _card_use(model, False, pod, node_name, decision.placements[pod.key].card)
            if why:
                problems.append(why)
    return problems


def _card_use(
    model: ClusterModel, unlimited: bool, pod: Pod, node_name: str, card: str | None
) -> tuple[dict[str, int], str | None]:
    """What a placed pod uses under capacity-card, and a violation when its card is wrong."""
    from solver.policies.cards import CARD_NAME, node_cards

    text = pod.annotations.get(CARD_NAME, "").strip()
    cards = {} if not text else {"alternatives": [a.strip() for a in text.split("|") if a.strip()]}
    use: dict[str, int] = {}
    why = None
    if cards:
        offered = node_cards(model.node_by_name[node_name])
        if card is None or card not in cards["alternatives"] or card not in offered:
            why = f"{pod.key} on {node_name}: card {card} is not one of {text} offered by the node"
        else:
            resource = offered[card][0]
            use[f"card:{card}"] = pod.requests.get(resource, 0)
    if not (unlimited and cards):
        use.update({r: v for r, v in pod.requests.items() if r in ("cpu", "memory")})
    return use, why
