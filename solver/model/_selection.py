"""Which pending pods are gangplan's to place: those whose `spec.schedulerName` is one it
answers to, in the namespaces asked for. The others stay pending and untouched; a bound
pod always counts, whoever scheduled it (kube-scheduler's own rule: a scheduler only
schedules pods naming it, but every pod on a node uses that node)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from solver.model._cluster_model import ClusterModel
from solver.model._workload import Pod

__all__ = ["DEFAULT_SCHEDULER_NAMES", "PodSelection"]

# The front ends gangplan speaks for, under their default names: kube-scheduler (and its
# coscheduling / scheduler-plugins profile), Volcano, Koordinator, Godel and KAI-Scheduler.
DEFAULT_SCHEDULER_NAMES = frozenset(
    {"default-scheduler", "volcano", "koord-scheduler", "godel-scheduler", "kai-scheduler"}
)


@dataclass(frozen=True)
class PodSelection:
    """`scheduler_names`: the names answered to; `namespaces`: where. None: any."""

    scheduler_names: frozenset[str] | None = DEFAULT_SCHEDULER_NAMES
    namespaces: frozenset[str] | None = None

    def takes(self, pod: Pod) -> bool:
        """A pending pod of ours to place (a gated one waits for its gates, as kube-scheduler's
        SchedulingGates plugin makes it)."""
        in_scope = self.namespaces is None or pod.namespace in self.namespaces
        ours = self.scheduler_names is None or pod.scheduler_name in self.scheduler_names
        return in_scope and ours and not pod.scheduling_gates

    def why_not(self, pod: Pod) -> str | None:
        """Why a pending pod is not taken (None: it is)."""
        if self.takes(pod):
            return None
        if self.namespaces is not None and pod.namespace not in self.namespaces:
            return f"namespace {pod.namespace}"
        if self.scheduler_names is not None and pod.scheduler_name not in self.scheduler_names:
            return f"schedulerName {pod.scheduler_name}"
        return f"scheduling gates {', '.join(pod.scheduling_gates)}"

    def note(self, left: Iterable[Pod]) -> str | None:
        """What was left pending, counted by why (None: nothing)."""
        why: Counter[str] = Counter()
        for pod in left:
            why[self.why_not(pod) or "taken"] += 1
        if not why:
            return None
        counted = ", ".join(f"{n} ({reason})" for reason, n in sorted(why.items()))
        return f"left pending, not ours to place: {counted}"

    def apply(self, model: ClusterModel) -> ClusterModel:
        """The model without the pending pods this selection does not take."""
        left = [p for p in model.pods if p.pending and not self.takes(p)]
        note = self.note(left)
        if note is None:
            return model
        dropped = {p.key for p in left}
        return model.model_copy(
            update={
                "pods": tuple(p for p in model.pods if p.key not in dropped),
                "gangs": {
                    gid: g.model_copy(
                        update={"members": tuple(k for k in g.members if k not in dropped)}
                    )
                    for gid, g in model.gangs.items()
                },
                "notes": (*model.notes, note),
            }
        )
