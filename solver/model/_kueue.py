"""Kueue Topology Aware Scheduling vocabulary (`reference/godel_kueue.md` §2).

* `KueueTopology`: a `Topology` (`kueue.x-k8s.io`), its node-label levels coarsest first
  (the last one may be `kubernetes.io/hostname`).
* `KueueFlavor`: a `ResourceFlavor` with `spec.topologyName` (a TAS flavor); its
  `nodeLabels` select the node pool, its `tolerations` are added to the pods'.
* `KueueRequest`: a PodSet's topology request, read from the pod-template annotations by
  `parse_kueue_request` with the webhook's rules (`jobframework/tas_validation.go`); a
  `Workload`'s `spec.podSets[].topologyRequest` is written as the same annotations by
  the reader, so one parser checks both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Literal

from pydantic import Field, field_validator

from solver.model._cluster import Taint, Toleration
from solver.model._frozen import Frozen

__all__ = [
    "HOSTNAME",
    "KUEUE_ANNOTATIONS",
    "KueueFlavor",
    "KueueRequest",
    "KueueRequestError",
    "KueueTopology",
    "parse_kueue_request",
    "pod_set_group_error",
]

HOSTNAME = "kubernetes.io/hostname"


class KUEUE_ANNOTATIONS:
    """Pod-template annotations of a PodSet's topology request."""

    REQUIRED = "kueue.x-k8s.io/podset-required-topology"
    PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
    UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
    SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
    SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
    GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
    SLICE_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"  # alpha
    PREFIX = "kueue.x-k8s.io/podset-"  # every pod-set annotation, read or not
    ALL = (
        REQUIRED,
        PREFERRED,
        UNCONSTRAINED,
        SLICE_REQUIRED,
        SLICE_SIZE,
        GROUP_NAME,
        SLICE_CONSTRAINTS,
    )


MAX_LEVELS = 16  # Kueue's Topology CRD (and KAI's, which repeats its shape)


class KueueTopology(Frozen):
    name: str = Field(min_length=1)
    levels: tuple[Annotated[str, Field(min_length=1, max_length=316)], ...] = Field(
        min_length=1, max_length=MAX_LEVELS
    )  # node labels, coarsest first

    @field_validator("levels")
    @classmethod
    def _levels(cls, levels: tuple[str, ...]) -> tuple[str, ...]:
        """The CRD's rules: each level once; the hostname level only last."""
        for i, label in enumerate(levels):
            if levels.index(label) != i:
                raise ValueError(f"level {label!r} is listed twice (at {i})")
            if label == HOSTNAME and i != len(levels) - 1:
                raise ValueError(f"{HOSTNAME} (at {i}) is only allowed as the last level")
        return levels


class KueueFlavor(Frozen):
    name: str = Field(min_length=1)
    topology: str  # spec.topologyName
    node_labels: dict[str, str] = Field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()

    @field_validator("node_labels")
    @classmethod
    def _labelled(cls, labels: dict[str, str]) -> dict[str, str]:
        """Kueue: a flavor naming a Topology selects its nodes by labels."""
        if not labels:
            raise ValueError("a flavor with a topology needs node labels")
        return labels


Mode = Literal["required", "preferred", "unconstrained"]


class KueueRequest(Frozen):
    """A PodSet's `PodSetTopologyRequest`. `level` None: the implied/slice-only defaults
    (the snapshot's lowest level for unconstrained, its highest for slice-only)."""

    mode: Mode
    level: str | None = None
    slice_level: str | None = None
    slice_size: int = 1
    group: str | None = None
    inner: tuple[tuple[str, int], ...] = ()  # multi-layer slices below the first: (level, size)

    @property
    def layers(self) -> tuple[tuple[str, int], ...]:
        """Every slice layer, outermost first: (level, size)."""
        first = ((self.slice_level, self.slice_size),) if self.slice_level else ()
        return (*first, *self.inner)

    @property
    def slice_only(self) -> bool:
        return self.level is None and self.slice_level is not None


class KueueRequestError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


# k8s.io/apimachinery IsQualifiedName: optional DNS-1123 subdomain prefix + 63-char name.
_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _label_name(value: str) -> bool:
    prefix, _, name = value.rpartition("/")
    if "/" in prefix or (prefix and (len(prefix) > 253 or not _PREFIX.match(prefix))):
        return False
    return 0 < len(name) <= 63 and bool(_NAME.match(name))


def parse_kueue_request(annotations: Mapping[str, str]) -> KueueRequest | None:
    """The PodSet topology request of a pod template's annotations; None when it has none.

    Raises KueueRequestError naming the annotation, with the webhook's rule."""
    a = KUEUE_ANNOTATIONS
    field = "metadata.annotations[{}]".format
    required, preferred = annotations.get(a.REQUIRED), annotations.get(a.PREFERRED)
    unconstrained_text = annotations.get(a.UNCONSTRAINED)
    slice_level, size_text = annotations.get(a.SLICE_REQUIRED), annotations.get(a.SLICE_SIZE)
    group = annotations.get(a.GROUP_NAME)
    layers = _slice_layers(annotations, slice_level, size_text, group)
    if layers:
        slice_level, size_text = layers[0][0], str(layers[0][1])
    set_modes = [k for k, v in ((a.REQUIRED, required), (a.PREFERRED, preferred)) if v is not None]
    if unconstrained_text is not None:
        set_modes.append(a.UNCONSTRAINED)
    if len(set_modes) > 1:
        raise KueueRequestError(
            field(set_modes[1]), f"must not be set together with {set_modes[0]}"
        )
    for key, value in (
        (a.REQUIRED, required),
        (a.PREFERRED, preferred),
        (a.SLICE_REQUIRED, slice_level),
    ):
        if value is not None and not _label_name(value):
            raise KueueRequestError(field(key), f"{value!r} is not a valid label name")
    unconstrained = False
    if unconstrained_text is not None:
        if unconstrained_text.lower() not in ("true", "false", "1", "0", "t", "f"):
            raise KueueRequestError(
                field(a.UNCONSTRAINED), f"{unconstrained_text!r} must be a boolean"
            )
        unconstrained = unconstrained_text.lower() in ("true", "1", "t")
    if (slice_level is None) != (size_text is None):
        missing, present = (
            (a.SLICE_SIZE, a.SLICE_REQUIRED)
            if size_text is None
            else (
                a.SLICE_REQUIRED,
                a.SLICE_SIZE,
            )
        )
        raise KueueRequestError(field(missing), f"must be set when {present} is set")
    size = 1
    if size_text is not None:
        if not size_text.isdigit() or int(size_text) < 1:
            raise KueueRequestError(field(a.SLICE_SIZE), f"{size_text!r} must be an integer >= 1")
        size = int(size_text)
    if group is not None:
        _check_group(group, required or preferred, slice_level, size_text)
    if required is not None:
        mode: Mode = "required"
    elif preferred is not None:
        mode = "preferred"
    elif unconstrained or slice_level is not None:
        mode = "unconstrained"  # slice-only requests run unconstrained at the top level
    else:
        return None
    return KueueRequest(
        mode=mode,
        level=required or preferred,
        slice_level=slice_level,
        slice_size=size,
        group=group,
        inner=layers[1:],
    )


def _slice_layers(
    annotations: Mapping[str, str],
    slice_level: str | None,
    size_text: str | None,
    group: str | None,
) -> tuple[tuple[str, int], ...]:
    """`podset-slice-required-topology-constraints` (alpha TASMultiLayerTopology), checked
    as `validateSliceRequiredTopologyConstraintsAnnotation` checks it: a JSON array of 1 to
    3 `{topology, size}` layers, outermost first, each size dividing the one above it."""
    a = KUEUE_ANNOTATIONS
    text = annotations.get(a.SLICE_CONSTRAINTS)
    if text is None:
        return ()
    where = f"metadata.annotations[{a.SLICE_CONSTRAINTS}]"
    for other, value in ((a.SLICE_REQUIRED, slice_level), (a.SLICE_SIZE, size_text)):
        if value is not None:
            raise KueueRequestError(where, f"may not be set when {other!r} is specified")
    if group is not None:
        raise KueueRequestError(
            f"metadata.annotations[{a.GROUP_NAME}]",
            f"may not be set when {a.SLICE_CONSTRAINTS!r} is specified",
        )
    try:
        value = json.loads(text)
    except ValueError as err:
        raise KueueRequestError(where, f"must be a valid JSON array: {err}") from None
    if not isinstance(value, list) or not 1 <= len(value) <= 3:
        raise KueueRequestError(where, "topology constraints must contain between 1 and 3 entries")
    out: list[tuple[str, int]] = []
    for i, layer in enumerate(value):
        topology = layer.get("topology") if isinstance(layer, dict) else None
        size = layer.get("size") if isinstance(layer, dict) else None
        if not isinstance(topology, str) or not _label_name(topology):
            raise KueueRequestError(
                f"{where}[{i}].topology", f"{topology!r} is not a valid label name"
            )
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size < 2**31:
            raise KueueRequestError(f"{where}[{i}].size", "must be greater than or equal to 1")
        if any(topology == t for t, _ in out):
            raise KueueRequestError(f"{where}[{i}].topology", f"{topology} is listed twice")
        if out and out[-1][1] % size:
            raise KueueRequestError(
                f"{where}[{i}].size", f"must evenly divide the parent layer size {out[-1][1]}"
            )
        out.append((topology, size))
    return tuple(out)


def _check_group(
    group: str, level: str | None, slice_level: str | None, size_text: str | None
) -> None:
    """`validatePodSetGroupNameAnnotation` and its neighbours (`tas_validation.go`)."""
    a = KUEUE_ANNOTATIONS
    where = f"metadata.annotations[{a.GROUP_NAME}]"
    if group.isdigit():
        raise KueueRequestError(where, f"{group!r} must not be a number")
    for other, value in ((a.SLICE_SIZE, size_text), (a.SLICE_REQUIRED, slice_level)):
        if value is not None:
            raise KueueRequestError(where, f"may not be set when {other!r} is specified")
    if level is None:
        raise KueueRequestError(
            where, f"may not be set when neither {a.PREFERRED!r} nor {a.REQUIRED!r} is specified"
        )


def pod_set_group_error(group: str, members: Sequence[tuple[str, int, KueueRequest]]) -> str:
    """`ValidatePodSetGroupingTopology` (`tas_validation.go`): why the pod sets (name,
    count, request) naming `group` are not a valid group, or ""."""
    if len(members) != 2:
        return f"can only define groups of exactly 2 pod sets, got: {len(members)} pod set(s)"
    (one, one_count, one_req), (two, two_count, two_req) = members
    if one_count != 1 and two_count != 1:
        return (
            "can only define groups where at least one pod set has only 1 replica, got: "
            f"{one_count} replica(s) and {two_count} replica(s) in the group"
        )
    if (one_req.mode, one_req.level) != (two_req.mode, two_req.level):
        return (
            f"pod sets {one} and {two} must specify '{KUEUE_ANNOTATIONS.REQUIRED}' or "
            f"'{KUEUE_ANNOTATIONS.PREFERRED}' topology consistent with each other in group "
            f"'{group}'"
        )
    return ""
