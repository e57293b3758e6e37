"""Network topology vocabulary: Koordinator's ClusterNetworkTopology and gather spec, Godel's
job-level affinity.

The layers of `ClusterNetworkTopology/default` are kept as declared (the tree is built by
`solver.policies.topology`). The two annotation/field parsers here are pure functions of the
user's text so that both the reader (`solver.kube`, which reports errors with file and
field) and the policy can use them:

* `parse_gather_spec` reads the PodGroup annotation
  `gang.scheduling.koordinator.sh/network-topology-spec` with Go `encoding/json` semantics
  (Koordinator unmarshals it into `NetworkTopologySpec`): field names match
  case-insensitively, unknown fields are ignored, `null` is the zero value, a wrong JSON
  type is an error. Koordinator logs the error and treats the gang as not topology-aware;
  callers decide how to report it (`GatherSpecError`).
* `parse_job_affinity` reads Godel's PodGroup `spec.affinity` (typed by the CRD schema, so
  a wrong type is an input error: `JobAffinityError` names the field). Values the schema
  does not constrain (sort-rule enumerations) are kept as written; the policy applies
  Godel's lenient defaults to them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import Field, ValidationError

from solver.json_limits import read_json
from solver.model._cluster import NodeSelectorRequirement, NodeSelectorTerm
from solver.model._frozen import Frozen
from solver.model._hypernode import HyperNode, duplicate_name
from solver.model._kueue import KueueFlavor, KueueTopology
from solver.model._rules import Loc, field_problems, snake_path

CLUSTER_LAYER = "ClusterTopologyLayer"
NODE_LAYER = "NodeTopologyLayer"

MUST_GATHER = "MustGather"
PREFER_GATHER = "PreferGather"

__all__ = [
    "CLUSTER_LAYER",
    "MUST_GATHER",
    "NODE_LAYER",
    "PREFER_GATHER",
    "GatherRule",
    "GatherSpec",
    "GatherSpecError",
    "JobAffinity",
    "JobAffinityError",
    "NetworkTopology",
    "SortRule",
    "TopologyLayer",
    "parent_cycle",
    "parse_gather_spec",
    "parse_job_affinity",
]


class TopologyLayer(Frozen):
    name: str = Field(min_length=1)
    parent: str | None = None
    label_keys: tuple[str, ...] = ()


def layer_problems(layers: Sequence[TopologyLayer]) -> list[tuple[Loc, str]]:
    """The ClusterNetworkTopology's rules across its layers: each named once, no layer its
    own ancestor (locations: (index, field) in the list)."""
    out: list[tuple[Loc, str]] = []
    twice = duplicate_name(layer.name for layer in layers)
    if twice is not None:
        out.append(((twice, "name"), f"layer {layers[twice].name!r} is declared twice"))
    cycle = parent_cycle([(layer.name, layer.parent) for layer in layers])
    if cycle is not None:
        out.append(((cycle, "parent"), f"layer {layers[cycle].name!r} is its own ancestor"))
    return out


class NetworkTopology(Frozen):
    """`ClusterNetworkTopology/default`: layers as declared (the tree is built by the topology policy)."""

    name: str = "default"  # "": no ClusterNetworkTopology, only Volcano HyperNodes
    layers: tuple[TopologyLayer, ...] = ()
    kueue_topologies: tuple[KueueTopology, ...] = ()  # Kueue `Topology` objects, by name
    kueue_flavors: tuple[KueueFlavor, ...] = ()  # Kueue TAS `ResourceFlavor`s, by name
    hypernodes: tuple[HyperNode, ...] = ()  # Volcano HyperNode objects, sorted by name


def parent_cycle(parents: Sequence[tuple[str, str | None]]) -> int | None:
    """Index of the first entry (name, parent) whose parent chain comes back to it — a
    layer or queue that is its own parent or ancestor — or None when there is none.
    Unknown parents end a chain (reported elsewhere, with their own message)."""
    parent_of = dict(parents)
    for i, (name, _) in enumerate(parents):
        seen = {name}
        walk = parent_of.get(name)
        while walk is not None and walk in parent_of:
            if walk == name:
                return i
            if walk in seen:
                break  # a cycle above this entry: reported at an entry on it
            seen.add(walk)
            walk = parent_of[walk]
    return None


# ----------------------------------------------------------------------------- Koordinator spec


class GatherRule(Frozen):
    """One `gatherStrategy[]` entry. `strategy` is kept verbatim: only `MustGather` acts."""

    layer: str = ""
    strategy: str = ""
    pod_count_multiple: int = 0  # <= 1: no constraint (Koordinator keeps only values > 1)


class GatherSpec(Frozen):
    """A parsed `network-topology-spec`; an empty one still makes the gang topology-aware."""

    rules: tuple[GatherRule, ...] = ()


class GatherSpecError(ValueError):
    """The annotation is not a valid `NetworkTopologySpec` (Go `json.Unmarshal` would fail)."""


def _go_fields(obj: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """Go's field matching: an exact key wins, otherwise a case-insensitive one."""
    out: dict[str, Any] = {}
    for name in names:
        if name in obj:
            out[name] = obj[name]
            continue
        for key, value in obj.items():
            if key.lower() == name.lower():
                out[name] = value
                break
    return out


def _go_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def parse_gather_spec(text: str) -> GatherSpec:
    """Parse the annotation value; raises GatherSpecError with Go's reason when it would fail."""
    try:
        value = read_json(text)
    except json.JSONDecodeError as exc:
        raise GatherSpecError(f"invalid JSON: {exc}") from None
    if value is None:
        return GatherSpec()
    if not isinstance(value, dict):
        raise GatherSpecError(f"cannot unmarshal {_go_type(value)} into NetworkTopologySpec")
    strategy = _go_fields(value, ("gatherStrategy",)).get("gatherStrategy")
    if strategy is None:
        return GatherSpec()
    if not isinstance(strategy, list):
        raise GatherSpecError(f"gatherStrategy: cannot unmarshal {_go_type(strategy)} into array")
    rules: list[GatherRule] = []
    for i, item in enumerate(strategy):
        if item is None:
            rules.append(GatherRule())
            continue
        if not isinstance(item, dict):
            raise GatherSpecError(
                f"gatherStrategy[{i}]: cannot unmarshal {_go_type(item)} into NetworkTopologyGatherRule"
            )
        fields = _go_fields(item, ("layer", "strategy", "podCountMultiple"))
        parsed: dict[str, Any] = {}
        for name in ("layer", "strategy"):
            v = fields.get(name)
            if v is not None and not isinstance(v, str):
                raise GatherSpecError(
                    f"gatherStrategy[{i}].{name}: cannot unmarshal {_go_type(v)} into string"
                )
            parsed[name] = v or ""
        multiple = fields.get("podCountMultiple")
        if multiple is not None and (
            isinstance(multiple, bool)
            or not isinstance(multiple, int)
            or not -(2**63) <= multiple < 2**63  # Go's int: json.Unmarshal refuses the rest
        ):
            shown = json.dumps(multiple)
            raise GatherSpecError(
                f"gatherStrategy[{i}].podCountMultiple: cannot unmarshal {_go_type(multiple)} "
                f"{shown} into int"
            )
        parsed["pod_count_multiple"] = multiple or 0
        rules.append(GatherRule(**parsed))
    return GatherSpec(rules=tuple(rules))


# ----------------------------------------------------------------------------- Godel affinity


class SortRule(Frozen):
    """`sortRules[]` as written; an empty `dimension` means `Capacity` (Godel's compatibility rule)."""

    resource: str = ""
    dimension: str = ""
    order: str = ""


class JobAffinity(Frozen):
    """Godel `spec.affinity.podGroupAffinity` (`podGroupAntiAffinity` is not consumed by Godel)."""

    required: tuple[str, ...] = ()  # topologyKey of each term, empty keys dropped
    preferred: tuple[str, ...] = ()  # largest layer first, empty keys dropped
    node_selector: tuple[NodeSelectorTerm, ...] | None = None  # None: no nodeSelector
    sort_rules: tuple[SortRule, ...] = ()

    @property
    def groups_nodes(self) -> bool:
        """Godel builds NodeGroups only with required or preferred terms."""
        return bool(self.required or self.preferred)


class JobAffinityError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _expect(value: Any, kind: type, field: str, what: str) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise JobAffinityError(field, f"expected {what}, got {_go_type(value)}")
    return value


def _terms(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    keys: list[str] = []
    for i, term in enumerate(_expect(value, list, field, "a list")):
        if term is None:
            continue
        term = _expect(term, dict, f"{field}[{i}]", "an object")
        key = term.get("topologyKey")
        if key is None:
            continue
        key = _expect(key, str, f"{field}[{i}].topologyKey", "a string")
        if key:
            keys.append(key)
    return tuple(keys)


def _requirements(value: Any, field: str) -> tuple[NodeSelectorRequirement, ...]:
    out: list[NodeSelectorRequirement] = []
    for i, item in enumerate(_expect(value, list, field, "a list") if value is not None else []):
        where = f"{field}[{i}]"
        item = _expect(item, dict, where, "an object")
        key = _expect(item.get("key", ""), str, f"{where}.key", "a string")
        op = _expect(item.get("operator", ""), str, f"{where}.operator", "a string")
        if op not in _OPERATORS:
            raise JobAffinityError(
                f"{where}.operator", f"unknown operator {op!r} (one of {', '.join(_OPERATORS)})"
            )
        values = item.get("values") or []
        for j, v in enumerate(_expect(values, list, f"{where}.values", "a list")):
            _expect(v, str, f"{where}.values[{j}]", "a string")
        try:  # the rules are the requirement's own (`solver.model`), as for a pod's
            out.append(NodeSelectorRequirement(key=key, operator=op, values=tuple(values)))
        except ValidationError as exc:
            loc, words = field_problems(exc)[0]
            raise JobAffinityError(snake_path(where, loc), words) from None
    return tuple(out)


def parse_job_affinity(affinity: dict[str, Any] | None) -> JobAffinity | None:
    """Godel `spec.affinity` -> JobAffinity; None when there is no `podGroupAffinity`.

    Raises JobAffinityError naming the field (relative to `spec.affinity`) on a type error.
    """
    if affinity is None:
        return None
    affinity = _expect(affinity, dict, "", "an object")
    body = affinity.get("podGroupAffinity")
    if body is None:
        return None
    body = _expect(body, dict, "podGroupAffinity", "an object")
    base = "podGroupAffinity"
    selector: tuple[NodeSelectorTerm, ...] | None = None
    raw_selector = body.get("nodeSelector")
    if raw_selector is not None:
        raw_selector = _expect(raw_selector, dict, f"{base}.nodeSelector", "an object")
        terms_field = f"{base}.nodeSelector.nodeSelectorTerms"
        raw_terms = raw_selector.get("nodeSelectorTerms") or []
        terms: list[NodeSelectorTerm] = []
        for i, term in enumerate(_expect(raw_terms, list, terms_field, "a list")):
            term = _expect(term or {}, dict, f"{terms_field}[{i}]", "an object")
            terms.append(
                NodeSelectorTerm(
                    match_expressions=_requirements(
                        term.get("matchExpressions"), f"{terms_field}[{i}].matchExpressions"
                    ),
                    match_fields=_requirements(
                        term.get("matchFields"), f"{terms_field}[{i}].matchFields"
                    ),
                )
            )
        selector = tuple(terms)
    rules: list[SortRule] = []
    raw_rules = body.get("sortRules")
    for i, rule in enumerate(
        _expect(raw_rules, list, f"{base}.sortRules", "a list") if raw_rules is not None else []
    ):
        rule = _expect(rule, dict, f"{base}.sortRules[{i}]", "an object")
        parsed = {
            name: _expect(rule.get(name) or "", str, f"{base}.sortRules[{i}].{name}", "a string")
            for name in ("resource", "dimension", "order")
        }
        rules.append(SortRule(**parsed))
    return JobAffinity(
        required=_terms(body.get("required"), f"{base}.required"),
        preferred=_terms(body.get("preferred"), f"{base}.preferred"),
        node_selector=selector,
        sort_rules=tuple(rules),
    )
