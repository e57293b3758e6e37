"""Pods of one request, read in bulk.

A running pod becomes a snapshot row directly (`RunningPodReader`), without a `Pod`:
hundreds of thousands arrive in one request, mostly replicas sharing their requests, so a
request map is validated once per distinct content and field paths are formatted only for
a violation. A pending pod becomes a `Pod` once per distinct message less its name
(`PendingPodReader`); a gang's other members are shallow copies under their own names.
"""

from __future__ import annotations

from collections.abc import Mapping

from gangplan.v1 import cluster_pb2 as pb
from solver.codec._constraints import (
    inter_pod_from_proto,
    node_affinity_from_proto,
    preferred_from_proto,
    spread_from_proto,
    tolerations_from_proto,
)
from solver.codec._errors import Violations
from solver.codec._messages import (
    DEFAULT_NAMESPACE,
    PODS,
    pod_from_proto,
    read_quantities,
    timestamp,
)
from solver.model import PRIORITY_CLASS, InterPodTerms, Pod, labels_problem
from solver.model._workload import TERMINAL_PHASES
from solver.snapshot import EMPTY_MAP, RunningPod

__all__ = ["PendingPodReader", "RunningPodReader"]

MAX_CLASS_NAME = 253
"""A PriorityClass name is a DNS subdomain name."""
_MIN_SECONDS, _MAX_SECONDS = -62_135_596_800, 253_402_300_799  # years 1 .. 9999 (Timestamp)


class RunningPodReader:
    """Reads the bound pods of one request; violations go to `out` under `prefix[i]`."""

    def __init__(self, kept: frozenset[str], prefix: str, out: Violations) -> None:
        self.kept = kept
        self.prefix = prefix
        self.out = out
        self._requests: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
        # One map per distinct content, shared by the rows (read-only downstream).
        self._maps: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
        self._terms: dict[tuple[str, bytes, bytes], InterPodTerms | None] = {}

    def key(self, msg: pb.Pod) -> str:
        return f"{msg.namespace or DEFAULT_NAMESPACE}/{msg.name}"

    def read(self, msg: pb.Pod, index: int) -> RunningPod | None:
        """Pod `index` of the request as a row; None for a pod that holds nothing (Succeeded
        / Failed) or is invalid."""
        name = msg.name
        if not name:
            self.out.add(f"{self.prefix}[{index}].name", "must not be empty")
        requests = self._requests_of(msg.requests, index)
        path = f"{self.prefix}[{index}]"
        if msg.required_node_affinity or msg.tolerations or msg.preferred_node_affinity:
            # validated, not kept: the snapshot keeps what the features read of running pods
            node_affinity_from_proto(msg, path, self.out)
            preferred_from_proto(msg, path, self.out)
            tolerations_from_proto(msg, path, self.out)
        if msg.topology_spread_constraints:
            spread_from_proto(msg, path, self.out)
        terms = None
        if msg.HasField("pod_affinity") or msg.HasField("pod_anti_affinity"):
            terms = self._terms_of(msg, path)
        gang = msg.gang
        if gang and gang.count("/") != 1:
            self.out.add(
                f"{self.prefix}[{index}].gang",
                f"must be a gang id `namespace/name`, got {gang!r}",
            )
        if not name or msg.phase in TERMINAL_PHASES:
            return None
        labels = msg.labels
        annotations = msg.annotations
        kept = [(k, annotations[k]) for k in self.kept if k in annotations] if annotations else []
        if msg.priority_class_name:
            kept = self._priority_class(msg.priority_class_name, kept, path)
        return RunningPod(
            self.key(msg),
            msg.node_name,
            requests,
            msg.priority,
            gang or None,
            self._labels([(k, labels[k]) for k in labels], index) if labels else EMPTY_MAP,
            self._shared(kept) if kept else EMPTY_MAP,
            msg.terminating,
            msg.preempted,
            terms=terms,
            started=self._started(msg, path),
        )

    def _priority_class(
        self, name: str, kept: list[tuple[str, str]], path: str
    ) -> list[tuple[str, str]]:
        """The kept annotations with the pod's priority class (`PRIORITY_CLASS`), unless an
        annotation of that key states one."""
        if len(name) > MAX_CLASS_NAME:
            self.out.add(
                f"{path}.priority_class_name", f"must be at most {MAX_CLASS_NAME} characters"
            )
            return kept
        if PRIORITY_CLASS not in self.kept or any(k == PRIORITY_CLASS for k, _ in kept):
            return kept
        return [*kept, (PRIORITY_CLASS, name)]

    def _started(self, msg: pb.Pod, path: str) -> float | None:
        """creationTimestamp in seconds since the epoch (None unset or unreadable), read from the message's
        numbers (a text round trip per pod would cost PutSnapshot a second per 100k pods)."""
        if not msg.HasField("creation_time"):
            return None
        ts = msg.creation_time
        if not (_MIN_SECONDS <= ts.seconds <= _MAX_SECONDS and 0 <= ts.nanos < 1_000_000_000):
            timestamp(msg, "creation_time", path, self.out)  # the violation, with its field
            return None
        return ts.seconds + ts.nanos / 1e9

    def _terms_of(self, msg: pb.Pod, path: str) -> InterPodTerms | None:
        """A running pod's (anti-)affinity, read once per distinct content and namespace."""
        ns = msg.namespace or DEFAULT_NAMESPACE
        content = (
            ns,
            msg.pod_affinity.SerializeToString(deterministic=True),
            msg.pod_anti_affinity.SerializeToString(deterministic=True),
        )
        if content in self._terms:
            return self._terms[content]
        before = len(self.out.items)
        terms = inter_pod_from_proto(msg, ns, path, self.out)
        if len(self.out.items) == before:  # an invalid one is reported at every pod
            self._terms[content] = terms
        return terms

    def _labels(self, items: list[tuple[str, str]], index: int) -> Mapping[str, str]:
        """A running pod's labels, checked once per distinct label set (a snapshot of
        100,000 pods holds few)."""
        content = tuple(items)
        if content not in self._maps and (problem := labels_problem(dict(content))):
            self.out.add(f"{self.prefix}[{index}].labels", problem)
        return self._shared(items)

    def _shared(self, items: list[tuple[str, str]]) -> Mapping[str, str]:
        content = tuple(items)
        found = self._maps.get(content)
        if found is None:
            found = self._maps[content] = dict(content) if content else EMPTY_MAP
        return found

    def _requests_of(self, values: Mapping[str, int], index: int) -> dict[str, int]:
        content = tuple([(k, values[k]) for k in values])  # 2x faster than .items() on upb maps
        found = self._requests.get(content)
        if found is None:
            before = len(self.out.items)
            found = read_quantities(values, f"{self.prefix}[{index}].requests", self.out)
            found.setdefault(PODS, 1)
            if len(self.out.items) == before:  # an invalid map is reported at every pod
                self._requests[content] = found
        return found


class PendingPodReader:
    """Reads the pending pods of one request. A gang's members usually differ only in name
    and creation time, and the gangs of a job in the gang they name, so each distinct rest
    of the message is converted once and copied under each name, gang and creation time (a
    gang id and a timestamp are checked each time)."""

    def __init__(self) -> None:
        self._templates: dict[bytes, Pod] = {}
        self._probe = pb.Pod()

    def read(self, msg: pb.Pod, prefix: str, index: int, out: Violations) -> Pod | None:
        """Pod `prefix[index]` (the path is only written out for a pod read in full)."""
        probe = self._probe
        probe.CopyFrom(msg)
        probe.ClearField("name")
        probe.ClearField("gang")
        probe.ClearField("creation_time")
        rest = probe.SerializeToString(deterministic=True)
        template = self._templates.get(rest)
        if template is not None and msg.name and (not msg.gang or msg.gang.count("/") == 1):
            ns = template.namespace
            created = timestamp(msg, "creation_time", f"{prefix}[{index}]", out)
            return template.replaced(
                name=msg.name, gang=msg.gang or f"{ns}/{msg.name}", created=created
            )
        clean = not out.items
        pod = pod_from_proto(msg, f"{prefix}[{index}]", out)
        if pod is not None and clean and not out.items:
            # only a template without violations: a bad one is reported at every pod's path
            self._templates[rest] = pod
        return pod
