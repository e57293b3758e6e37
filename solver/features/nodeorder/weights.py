"""The `nodeorder` plugin's arguments, as Volcano's `calculateWeight` reads them.

    nodeaffinity.weight       2   NodeAffinity (preferred node affinity)       implemented
    tainttoleration.weight    3   TaintToleration (PreferNoSchedule taints)    implemented
    podaffinity.weight        2   InterPodAffinity                             scored (interpod/scores.py)
    podtopologyspread.weight  2   PodTopologySpread                            scored (interpod/scores.py)
    leastrequested.weight     1   NodeResourcesFit LeastAllocated (cpu, memory) not implemented
    mostrequested.weight      0   NodeResourcesFit MostAllocated               not implemented
    balancedresource.weight   1   NodeResourcesBalancedAllocation              not implemented
    imagelocality.weight      1   ImageLocality                                not implemented

Volcano reads each with `Arguments.GetInt`: a value that is not a YAML integer (`"2"`,
`2.5`, `true`) is ignored with a warning and the default stays; gangplan does the same
and says so in a note. A weight of 0 turns its score off; a negative weight is kept, as
upstream keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["NodeOrderWeights", "nodeorder_weights"]

_ARGUMENTS = {
    "node_affinity": "nodeaffinity.weight",
    "taint_toleration": "tainttoleration.weight",
    "pod_affinity": "podaffinity.weight",
    "pod_topology_spread": "podtopologyspread.weight",
    "least_requested": "leastrequested.weight",
    "most_requested": "mostrequested.weight",
    "balanced_resource": "balancedresource.weight",
    "image_locality": "imagelocality.weight",
}


@dataclass(frozen=True)
class NodeOrderWeights:
    """Volcano nodeorder's per-score weights (its `priorityWeight`), defaults as upstream."""

    node_affinity: int = 2
    taint_toleration: int = 3
    pod_affinity: int = 2
    pod_topology_spread: int = 2
    least_requested: int = 1
    most_requested: int = 0
    balanced_resource: int = 1
    image_locality: int = 1


def nodeorder_weights(arguments: Mapping[str, Any]) -> tuple[NodeOrderWeights, list[str]]:
    """The weights a `nodeorder` entry's arguments give, and a note per ignored argument."""
    defaults = NodeOrderWeights()
    values: dict[str, int] = {}
    notes: list[str] = []
    for field, key in _ARGUMENTS.items():
        if key not in arguments:
            continue
        value = arguments[key]
        if isinstance(value, int) and not isinstance(value, bool):
            values[field] = value
        else:
            notes.append(
                f"nodeorder: argument {key}={value!r} is not an integer; ignored as Volcano "
                f"ignores it (weight {getattr(defaults, field)})"
            )
    return NodeOrderWeights(**values), notes
