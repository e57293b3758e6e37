"""Independent re-check of a Decision against the model, not the Problem.

Written from the Kubernetes and Koordinator rules directly, without the policies or the
Problem, so a bug in compiling cannot hide. Returns every violation found (empty list:
the Decision is valid); `check()` raises InternalError instead.

Rules checked:
1. every placement names a pending pod of the model and an existing node (or none);
2. capacity: on every node, bound pods + newly placed pods fit `allocatable` in every
   resource a newly placed pod requests (the pod count included);
3. with `predicates`: cordon/readiness (unless tolerated), NoSchedule/NoExecute taints,
   nodeSelector, required node affinity;
4. with `gang`: a gang with placed pods reaches its minMember share (bound members count
   as its match policy says), and so does every gang in its `groups` list;
5. `podgroups[..].placed` agrees with the placements.
"""

from __future__ import annotations

from collections import defaultdict

from solver.config import SchedulerConf
from solver.decision import Decision
from solver.errors import InternalError
from solver.model import ClusterModel, Gang, MatchPolicy, Node, Pod

__all__ = ["check", "verify"]


def verify(model: ClusterModel, conf: SchedulerConf, decision: Decision) -> list[str]:
    problems: list[str] = []
    pods = model.pod_by_key
    nodes = model.node_by_name
    new_on: dict[str, list[Pod]] = defaultdict(list)
    for key, placement in decision.placements.items():
        pod = pods.get(key)
        if pod is None or not pod.pending:
            problems.append(f"{key}: not a pending pod of the input")
            continue
        if placement.node is None:
            continue
        if placement.node not in nodes:
            problems.append(f"{key}: placed on unknown node {placement.node}")
            continue
        new_on[placement.node].append(pod)

    for node_name, new_pods in new_on.items():
        problems.extend(_capacity(model, nodes[node_name], new_pods))
        if conf.enabled("predicates"):
            for pod in new_pods:
                why = _predicate_violation(pod, nodes[node_name])
                if why:
                    problems.append(f"{pod.key} on {node_name}: {why}")

    placed_count: dict[str, int] = defaultdict(int)
    for pods_here in new_on.values():
        for pod in pods_here:
            placed_count[pod.gang] += 1
    if conf.enabled("gang"):
        problems.extend(_gangs(model, conf, placed_count))

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


def _capacity(model: ClusterModel, node: Node, new_pods: list[Pod]) -> list[str]:
    checked = {r for pod in new_pods for r in pod.requests}
    total: dict[str, int] = defaultdict(int)
    for pod in model.pods:
        if pod.bound and pod.node_name == node.name:
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
