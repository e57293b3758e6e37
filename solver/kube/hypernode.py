"""Volcano's network topology objects, read as the API server admits them.

The rules below are the model's (`solver.model`, the same the gRPC codec applies); this
module reads the YAML's shape and builds the model with `build`, which names a broken rule
at its manifest path.

* `HyperNode` (`topology.volcano.sh/v1alpha1`): `spec.tier` (an integer >= 0, required),
  `spec.tierName`, `spec.members[]` with `type` Node|HyperNode and a `selector` holding
  `exactMatch.name`, `regexMatch.pattern` and/or `labelMatch` (matchLabels,
  matchExpressions). As the CRD's validation says: a selector needs one of them, a
  `HyperNode` member only `exactMatch`; a regex that does not compile is admitted (the
  scheduler then finds no members) but noted.
* a PodGroup's `spec.subGroupPolicy[]`: `name` (required, unique), `subGroupSize` and
  `minSubGroups` (integers >= 0), `labelSelector`, `matchLabelKeys` (strings) and a
  `networkTopology` read as the job's.
* a PodGroup's `spec.networkTopology`: `mode` hard (default) | soft, `highestTierAllowed`
  (an integer >= 0) or `highestTierName`, not both.
"""

from __future__ import annotations

import re
from typing import Any

from solver.kube.affinity import label_selector
from solver.kube.loader import RawObject
from solver.kube.objects import LabelSelector as K8sSelector
from solver.kube.validate import build, validate
from solver.model import (
    HyperNode,
    HyperNodeMember,
    LabelSelector,
    VolcanoNetworkTopology,
    VolcanoSubGroupPolicy,
    duplicate_name,
)

__all__ = [
    "HYPERNODE_GROUP",
    "read_hypernode",
    "read_network_topology",
    "read_sub_group_policy",
]

HYPERNODE_GROUP = "topology.volcano.sh"


def _mapping(raw: RawObject, value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise raw.error("must be a mapping", field=field)
    return value


def _text(raw: RawObject, value: Any, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise raw.error("must be a string", field=field)
    return value


def _whole(raw: RawObject, value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise raw.error("must be a 32-bit integer", field=field)
    return value  # its range is the model's rule


def _label_selector(raw: RawObject, value: Any, field: str) -> LabelSelector:
    """`labelMatch` / `labelSelector`: read as a pod's selectors are (absent: selects all)."""
    selector = label_selector(raw, validate(K8sSelector, raw, value or {}, field), field)
    assert selector is not None  # a validated selector is never None
    return selector


def _member(raw: RawObject, value: Any, field: str, notes: list[str]) -> HyperNodeMember:
    body = _mapping(raw, value, field)
    kind = body.get("type")
    if kind not in ("Node", "HyperNode"):
        raise raw.error("must be Node or HyperNode", field=f"{field}.type")
    selector = _mapping(raw, body.get("selector"), f"{field}.selector")
    where = f"{field}.selector"
    exact = regex = None
    labels = None
    if "exactMatch" in selector:
        exact_body = _mapping(raw, selector["exactMatch"], f"{where}.exactMatch")
        exact = _text(raw, exact_body.get("name"), f"{where}.exactMatch.name")
    if "regexMatch" in selector:
        regex_body = _mapping(raw, selector["regexMatch"], f"{where}.regexMatch")
        regex = _text(raw, regex_body.get("pattern"), f"{where}.regexMatch.pattern")
        try:
            re.compile(regex)
        except re.error as err:
            notes.append(
                f"{raw.label}: {where}.regexMatch.pattern {regex!r} does not compile "
                f"({err}): it selects no node, as in Volcano"
            )
    if "labelMatch" in selector:
        labels = _label_selector(raw, selector["labelMatch"], f"{where}.labelMatch")
    return build(
        raw, HyperNodeMember, where, type=kind, exact_name=exact, regex=regex, labels=labels
    )


def read_hypernode(raw: RawObject, notes: list[str]) -> HyperNode:
    """A HyperNode document as the model; ManifestError naming the field when invalid."""
    meta = _mapping(raw, raw.body.get("metadata"), "metadata")
    name = _text(raw, meta.get("name"), "metadata.name")
    spec = _mapping(raw, raw.body.get("spec"), "spec")
    if "tier" not in spec:
        raise raw.error("missing required field", field="spec.tier")
    tier = _whole(raw, spec["tier"], "spec.tier")
    tier_name = _text(raw, spec.get("tierName"), "spec.tierName")
    members = spec.get("members") or []
    if not isinstance(members, list):
        raise raw.error("must be a list", field="spec.members")
    return build(
        raw,
        HyperNode,
        "",
        names=_HYPERNODE_FIELDS,
        name=name,
        tier=tier,
        tier_name=tier_name,
        members=tuple(_member(raw, m, f"spec.members[{i}]", notes) for i, m in enumerate(members)),
    )


_HYPERNODE_FIELDS = {  # the model's name -> its place in the manifest
    "name": "metadata.name",
    "tier": "spec.tier",
    "tier_name": "spec.tierName",
    "members": "spec.members",
}


def read_network_topology(
    raw: RawObject, value: Any, field: str = "spec.networkTopology"
) -> VolcanoNetworkTopology | None:
    """`spec.networkTopology` of a PodGroup; None when absent."""
    if value is None:
        return None
    body = _mapping(raw, value, field)
    mode = _text(raw, body.get("mode"), f"{field}.mode") or "hard"
    allowed = body.get("highestTierAllowed")
    if allowed is not None:
        allowed = _whole(raw, allowed, f"{field}.highestTierAllowed")
    name = _text(raw, body.get("highestTierName"), f"{field}.highestTierName")
    return build(
        raw,
        VolcanoNetworkTopology,
        field,
        mode=mode,
        highest_tier_allowed=allowed,
        highest_tier_name=name or None,
    )


def read_sub_group_policy(
    raw: RawObject, value: Any, field: str = "spec.subGroupPolicy"
) -> tuple[VolcanoSubGroupPolicy, ...]:
    """`spec.subGroupPolicy[]` of a PodGroup; () when absent."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise raw.error("must be a list", field=field)
    out: list[VolcanoSubGroupPolicy] = []
    for i, item in enumerate(value):
        where = f"{field}[{i}]"
        body = _mapping(raw, item, where)
        name = _text(raw, body.get("name"), f"{where}.name")
        size = body.get("subGroupSize")
        if size is not None:
            size = _whole(raw, size, f"{where}.subGroupSize")
        minimum = body.get("minSubGroups")
        minimum = 0 if minimum is None else _whole(raw, minimum, f"{where}.minSubGroups")
        keys = body.get("matchLabelKeys") or []
        if not isinstance(keys, list):
            raise raw.error("must be a list", field=f"{where}.matchLabelKeys")
        texts = tuple(_text(raw, k, f"{where}.matchLabelKeys[{j}]") for j, k in enumerate(keys))
        selector = body.get("labelSelector")
        out.append(
            build(
                raw,
                VolcanoSubGroupPolicy,
                where,
                name=name,
                sub_group_size=size,
                min_sub_groups=minimum,
                label_selector=None
                if selector is None
                else _label_selector(raw, selector, f"{where}.labelSelector"),
                match_label_keys=texts,
                network_topology=read_network_topology(
                    raw, body.get("networkTopology"), f"{where}.networkTopology"
                ),
            )
        )
    twice = duplicate_name(p.name for p in out)
    if twice is not None:
        message = f"sub-group policy {out[twice].name!r} is listed twice"
        raise raw.error(message, field=f"{field}[{twice}].name")
    return tuple(out)
