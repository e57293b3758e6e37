"""GPU card types as Volcano's `capacity-card` reads them (reference/volcano.md §1).

Pure functions of node labels, allocatable and pod annotations, shared by the snapshot
(what a running pod's card costs its queue) and the card policy; the verifier re-derives
its own.

**Discovery** per node: the first label (in sorted key order — upstream takes Go's random
map order) matching `^((.+?)/(\\w+))\\.product$` whose key does not contain
`nvidia.com/mig-` and that has sibling labels `<prefix>/<type>.count` and `.memory` names
the product; the resource prefix is the text before the first `/`. Then every allocatable
resource with a positive amount becomes a card type:

* `nvidia.com/gpu.shared` with label `nvidia.com/gpu.replicas` > 0 (MPS):
  `<product>/mps-<round(memory MB / 1024)>g*1/<replicas>`;
* `nvidia.com/mig-<profile>` (MIG): `<product>/mig-<profile>-mixed`;
* any other resource starting with the prefix (`nvidia.com/gpu`): the whole card `<product>`.

**Demand** of a pod: annotation `volcano.sh/card.name` (`A` or `A|B|C`, left preferred);
the count is the pod's limit of the card's resource, else its request. Without the
annotation a pod has no card demand (even if it asks for `nvidia.com/gpu`). A PodGroup's
`volcano.sh/card.request` (`{"A|B": 8}`) is the job's demand only while it has no pods
with card demand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from solver.json_limits import read_json
from solver.model._cluster import Node

__all__ = [
    "CARD_NAME",
    "CARD_QUOTA",
    "CARD_REQUEST",
    "CardDemand",
    "CardError",
    "ClusterCards",
    "card_alternatives",
    "card_demand",
    "discover_cards",
    "node_cards",
    "parse_quota",
]

CARD_NAME = "volcano.sh/card.name"
CARD_QUOTA = "volcano.sh/card.quota"
CARD_REQUEST = "volcano.sh/card.request"
MPS_RESOURCE = "nvidia.com/gpu.shared"
MPS_REPLICAS = "nvidia.com/gpu.replicas"
MIG_PREFIX = "nvidia.com/mig-"
_PRODUCT = re.compile(r"^((.+?)/(\w+))\.product$")


class CardError(ValueError):
    """A card demand that cannot be resolved (upstream event GetTaskRequestResourceFailed)."""


def node_cards(node: Node) -> dict[str, tuple[str, int]]:
    """Card types the node offers: card name -> (Kubernetes resource name, quantity)."""
    product = prefix = None
    memory_mb = 0
    for key in sorted(node.labels):
        m = _PRODUCT.match(key)
        if not m or MIG_PREFIX in key:
            continue
        base = m.group(1)
        if f"{base}.count" in node.labels and f"{base}.memory" in node.labels:
            product = node.labels[key]
            prefix = key.split("/", 1)[0]
            try:
                memory_mb = int(node.labels[f"{base}.memory"])
            except ValueError:
                memory_mb = 0
            break
    if not product or not prefix:
        return {}
    out: dict[str, tuple[str, int]] = {}
    for resource, amount in sorted(node.allocatable.items()):
        if amount <= 0:
            continue
        if resource == MPS_RESOURCE:
            try:
                replicas = int(node.labels.get(MPS_REPLICAS, "0"))
            except ValueError:
                replicas = 0
            if replicas > 0:
                out[f"{product}/mps-{round(memory_mb / 1024)}g*1/{replicas}"] = (resource, amount)
        elif resource.startswith(MIG_PREFIX):
            out[f"{product}/mig-{resource.removeprefix(MIG_PREFIX)}-mixed"] = (resource, amount)
        elif resource.startswith(prefix):
            out[product] = (resource, amount)
    return out


@dataclass
class ClusterCards:
    """Card discovery over a cluster's nodes (in name order)."""

    per_node: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> card -> count
    total: dict[str, int] = field(default_factory=dict)
    resource_of: dict[str, str] = field(default_factory=dict)  # card name -> resource name


def discover_cards(nodes: Iterable[Node]) -> ClusterCards:
    cards = ClusterCards()
    for node in nodes:
        found = node_cards(node)
        if found:
            cards.per_node[node.name] = {name: qty for name, (_, qty) in found.items()}
        for name, (resource, qty) in found.items():
            cards.total[name] = cards.total.get(name, 0) + qty
            cards.resource_of[name] = resource  # cluster-global; last node (by name) wins
    return cards


@dataclass(frozen=True)
class CardDemand:
    alternatives: tuple[str, ...]  # card names, preferred first
    count: int  # cards per pod

    @property
    def key(self) -> str:
        return "|".join(self.alternatives)


def card_alternatives(text: str | None) -> tuple[str, ...]:
    """`A|B|C` -> ("A", "B", "C"); () without a usable value."""
    return tuple(n.strip() for n in (text or "").strip().split("|") if n.strip())


def card_demand(
    text: str | None, requests: Mapping[str, int], resource_of: Mapping[str, str]
) -> CardDemand | None:
    """The demand of a pod annotated `volcano.sh/card.name: text`; None without one,
    CardError when it cannot be resolved."""
    names = card_alternatives(text)
    if not names:
        return None
    resource = resource_of.get(names[0])
    if resource is None:
        raise CardError(f"card type {names[0]} exists on no node")
    count = requests.get(resource)  # requests default to limits when only limits are set
    if not count:
        raise CardError(f"pod requests no {resource} for card type {names[0]}")
    return CardDemand(names, int(count))


def parse_quota(text: str | None) -> tuple[dict[str, int], str | None]:
    """`volcano.sh/card.quota` / `card.request` JSON -> counts, plus a warning when invalid."""
    if not text:
        return {}, None
    try:
        value = read_json(text)
    except json.JSONDecodeError as exc:
        return {}, f"invalid JSON ({exc.msg})"
    if not isinstance(value, dict) or not all(isinstance(v, int | float) for v in value.values()):
        return {}, "must be a JSON object of card name to count"
    return {str(k): int(v) for k, v in value.items()}, None
