"""The workload of one call: the pending pods it asks about, and their gangs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

from solver.model import Gang, Pod, PodSelection
from solver.snapshot._snapshot import Snapshot

__all__ = ["Workload", "gang_of_one"]


def gang_of_one(pod: Pod) -> Gang:
    """The implicit gang of a pod without a PodGroup."""
    ns, name = pod.key.split("/", 1)
    return Gang(
        id=pod.key,
        namespace=ns,
        name=name,
        dialect="none",
        min_member=1,
        total_number=1,
        groups=(pod.key,),
        created=pod.created,
        members=(pod.key,),
    )


@dataclass(frozen=True, eq=False)
class Workload:
    """Pending pods (sorted by key) and every gang a call reasons about, sorted by id.

    `gangs` holds the pods' gangs (implicit gangs of one built here), every gang named in
    their GangGroups' `groups` lists (closed transitively, from the snapshot) and gangs the
    caller names; a gang's `members` are its pending pods in this workload. Running members
    live in the snapshot (`Snapshot.gang_running`, `Snapshot.rows_of_gang`).
    """

    pods: tuple[Pod, ...]
    gangs: Mapping[str, Gang]

    @classmethod
    def of(
        cls,
        snapshot: Snapshot,
        pods: Iterable[Pod] = (),
        gang_ids: Iterable[str] = (),
        gangs_given: Mapping[str, Gang] | None = None,
    ) -> Workload:
        """`pods` (pending; they replace snapshot pods of the same key), plus the pending
        pods of the snapshot in their gangs, the gangs `gang_ids` and their GangGroups;
        `gangs_given` are gangs of the call that are new or replace the snapshot's."""
        own = {p.key: p for p in pods}
        gangs: dict[str, Gang] = {}
        named = {**snapshot.gangs, **(gangs_given or {})}
        wanted = {p.gang for p in own.values()} | set(gang_ids)
        todo = sorted(wanted)
        while todo:
            gid = todo.pop()
            gang = named.get(gid)
            if gang is None:
                continue
            gangs[gid] = gang
            for other in gang.groups:
                if other not in wanted and other in named:
                    wanted.add(other)
                    todo.append(other)
        for key, pod in snapshot.pending.items():
            if key not in own and pod.gang in wanted and pod.gang in named:
                own[key] = pod
        return cls._assemble(own.values(), gangs)

    @classmethod
    def everything(cls, snapshot: Snapshot) -> Workload:
        """Every pending pod and every named gang of the snapshot (`gangplan schedule`)."""
        return cls._assemble(snapshot.pending.values(), dict(snapshot.gangs))

    @classmethod
    def _assemble(cls, pods: Iterable[Pod], gangs: dict[str, Gang]) -> Workload:
        ordered = tuple(sorted(pods, key=lambda p: p.key))
        members: dict[str, list[str]] = {}
        for pod in ordered:
            members.setdefault(pod.gang, []).append(pod.key)
            if pod.gang not in gangs:
                if pod.gang != pod.key:
                    raise ValueError(f"pod {pod.key} refers to unknown gang {pod.gang}")
                gangs[pod.gang] = gang_of_one(pod)
        out = {
            gid: g.model_copy(update={"members": tuple(members.get(gid, ()))})
            for gid, g in sorted(gangs.items())
        }
        return cls(ordered, MappingProxyType(out))

    def only(self, keep: Callable[[Pod], bool]) -> Workload:
        """The pods `keep` accepts, in the same gangs (members recounted)."""
        return Workload._assemble([p for p in self.pods if keep(p)], dict(self.gangs))

    def select(self, selection: PodSelection) -> tuple[Workload, str | None]:
        """The pods `selection` takes, and the note counting the ones it leaves pending
        (None: none left)."""
        left = selection.note(p for p in self.pods if not selection.takes(p))
        return self.only(selection.takes), left

    @cached_property
    def pod_by_key(self) -> Mapping[str, Pod]:
        return MappingProxyType({p.key: p for p in self.pods})

    def members(self, gang_id: str) -> list[Pod]:
        """The gang's pending pods in this workload, by key."""
        gang = self.gangs.get(gang_id)
        return [self.pod_by_key[k] for k in gang.members] if gang is not None else []
