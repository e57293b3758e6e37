"""The scheduler configuration, in the Volcano scheduler conf format users already have.

```yaml
actions: "enqueue, allocate"          # preempt / reclaim act only when listed
tiers:
- plugins:
  - name: predicates                  # node fit: selectors, node affinity, taints, readiness
  - name: gang                        # all-or-nothing PodGroups / GangGroups
    arguments: {defaultMatchPolicy: once-satisfied}
  - name: binpack                     # Volcano binpack: binpack.weight, binpack.cpu, ...
  - name: nodeorder                   # node scores: nodeaffinity.weight, tainttoleration.weight
  - name: network-topology            # Koordinator gather (ClusterNetworkTopology, network-topology-spec)
  - name: job-affinity                # Godel PodGroup affinity (required/preferred, nodeSelector, sortRules)
  - name: capacity                    # Volcano queues: realCapability at every level, enqueue
    enableHierarchy: true
  - name: nodegroup                   # queue <-> node-group affinity; arguments: strict, enablePreferredOrder
    enableHierarchy: true
```

A plugin that is not listed does not act. Resource capacity is not a plugin: it always
holds. No conf at all means `DEFAULT_PLUGINS` with their defaults and the actions
`enqueue, allocate`: what Volcano's default scheduler conf enables, as far as gangplan
implements it (gang, predicates, nodeorder, binpack; its proportion's queue capability as
`capacity`), plus gangplan's own `network-topology` and `job-affinity`, which act only on
objects and annotations Volcano does not read. `nodegroup`, `capacity-card` and
`proportion` (queues sharing the cluster by weight, Volcano's own default) act only when a
conf lists them (`gangplan config show` prints the default).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from solver.conf_keys import (
    ExpectedRuntime,
    UsageParams,
    expected_runtime,
    parse_go_duration,
    usage_params,
)
from solver.errors import ConfigError
from solver.yaml_limits import not_text, one_line, safe_load

__all__ = [
    "BUILTIN_PLUGINS",
    "DEFAULT_PLUGINS",
    "ExpectedRuntime",
    "Plugin",
    "PluginConf",
    "SchedulerConf",
    "UsageParams",
    "conf_from_text",
    "load_conf",
    "parse_go_duration",
    "plugin_status",
]


class Plugin(StrEnum):
    """Every plugin name gangplan acts on, written once: features (`Feature.plugins`), the
    verifier's rules and the conf all name plugins through these."""

    PREDICATES = "predicates"
    GANG = "gang"
    BINPACK = "binpack"
    NODEORDER = "nodeorder"
    NETWORK_TOPOLOGY = "network-topology"
    JOB_AFFINITY = "job-affinity"
    CAPACITY = "capacity"
    NODEGROUP = "nodegroup"
    CAPACITY_CARD = "capacity-card"
    NETWORK_TOPOLOGY_AWARE = "network-topology-aware"
    DEVICESHARE = "deviceshare"
    PROPORTION = "proportion"
    DRF = "drf"
    CONFORMANCE = "conformance"
    PRIORITY = "priority"
    OVERCOMMIT = "overcommit"
    MINRUNTIME = "minruntime"
    PDB = "pdb"


BUILTIN_PLUGINS: tuple[Plugin, ...] = (
    Plugin.PREDICATES,
    Plugin.GANG,
    Plugin.BINPACK,
    Plugin.NODEORDER,
    Plugin.NETWORK_TOPOLOGY,
    Plugin.JOB_AFFINITY,
    Plugin.CAPACITY,
    Plugin.NODEGROUP,
)
"""Plugins gangplan implements today, in their tier order."""
DEFAULT_PLUGINS = tuple(p for p in BUILTIN_PLUGINS if p != Plugin.NODEGROUP)
"""The plugins of the default conf: Volcano's default conf does not enable nodegroup, and
with it every labelled node would refuse queues without node-group affinity."""
OPTIONAL_PLUGINS = (
    Plugin.CAPACITY_CARD,
    Plugin.NETWORK_TOPOLOGY_AWARE,
    Plugin.DEVICESHARE,
    Plugin.PROPORTION,
    Plugin.DRF,
    Plugin.CONFORMANCE,
    Plugin.PRIORITY,
    Plugin.OVERCOMMIT,
    Plugin.MINRUNTIME,
    Plugin.PDB,
)
"""Implemented but not in the default conf: capacity-card replaces capacity (upstream says
never to enable both), so it acts only when a conf lists it; network-topology-aware (Volcano's
HyperNode scores) acts only when listed, as in Volcano's default conf, which lacks it;
deviceshare's arguments choose how GPU shares pick devices (the device model itself is
always on); proportion (queues share the cluster by weight) replaces capacity's quotas, as
in Volcano's own default conf, so it acts only when listed and never beside capacity; drf
orders jobs by dominant share when listed; conformance keeps system pods (a system
PriorityClass, or `kube-system`) from being victims; priority is recognised: gangplan orders
jobs and tasks by priority and preempts by it whether or not a conf lists it; overcommit
admits jobs only while the cluster, overcommitted by its factor, has room for them;
minruntime (KAI's) acts whenever the Queues are KAI's, as KAI always runs it: listing it
gives its arguments (`defaultPreemptMinRuntime`, `defaultReclaimMinRuntime`,
`reclaimResolveMethod`); pdb keeps every victim set within the PodDisruptionBudgets."""

UPSTREAM_PLUGINS = frozenset(
    {
        "sla", "tdm", "numaaware",
        "task-topology", "extender", "rescheduling", "usage", "resource-strategy-fit",
        "cdp", "resourcequota",
    }
)  # fmt: skip
"""Volcano/Koordinator plugin names that gangplan accepts in a conf but does not act on yet."""

ACTED_SWITCHES: dict[str, frozenset[str]] = {
    Plugin.CAPACITY: frozenset({"enableHierarchy"}),
    Plugin.CAPACITY_CARD: frozenset({"enableHierarchy"}),
    Plugin.NODEGROUP: frozenset({"enableHierarchy"}),
    Plugin.PROPORTION: frozenset(
        {"enableQueueOrder", "enabledAllocatable", "enabledOverused", "enableJobEnqueued"}
    ),
    Plugin.DRF: frozenset({"enableHierarchy", "enablePreemptable"}),
    Plugin.GANG: frozenset({"enableReclaimable"}),
}
"""Volcano's per-plugin switches (`conf.PluginOption`) gangplan honours, per plugin. Any
other switch set to false, or any other key, is noted: gangplan's part of that plugin is on."""

KNOWN_ACTIONS = frozenset(
    {"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle", "consolidation"}
)
DEFAULT_ACTIONS = ("enqueue", "allocate")
_DEFAULTS: dict[str, dict[str, Any]] = {
    "capacity": {"name": "capacity", "enableHierarchy": True},
}


class PluginConf(BaseModel):
    """One `tiers[].plugins[]` entry; `enableXxx` switches are kept in `options`."""

    model_config = ConfigDict(frozen=True, extra="allow")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)

    @field_validator("arguments", mode="before")
    @classmethod
    def _none(cls, value: object) -> object:
        return {} if value is None else value

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class TierConf(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    plugins: list[PluginConf] = Field(default_factory=list)


class SchedulerConf(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    actions: tuple[str, ...] = DEFAULT_ACTIONS
    tiers: tuple[TierConf, ...] = ()
    source: str = "<default>"
    notes: tuple[str, ...] = ()
    usage: UsageParams | None = None  # `usageDBConfig`: KAI's time-based fair share is on
    runtimes: ExpectedRuntime | None = None  # `expectedRuntime`: for start estimates
    fair_sharing: bool = False  # `fairSharing` (Kueue's Configuration): Kueue's cycles
    #   order ClusterQueues by dominant resource share (`features.kueueshare`)

    @field_validator("actions", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(a.strip() for a in value.split(",") if a.strip())
        return value

    @classmethod
    def default(cls) -> SchedulerConf:
        """`DEFAULT_PLUGINS` with their defaults; actions `enqueue, allocate`."""
        plugins = [
            PluginConf.model_validate(_DEFAULTS.get(n, {"name": n})) for n in DEFAULT_PLUGINS
        ]
        return cls(tiers=(TierConf(plugins=plugins),))

    def plugin(self, name: str) -> PluginConf | None:
        for tier in self.tiers:
            for plugin in tier.plugins:
                if plugin.name == name:
                    return plugin
        return None

    def enabled(self, name: str) -> bool:
        return self.plugin(name) is not None

    def arguments(self, name: str) -> dict[str, Any]:
        plugin = self.plugin(name)
        return dict(plugin.arguments) if plugin else {}

    def to_dict(self) -> dict[str, Any]:
        """The conf in Volcano's file format (what `gangplan config show` prints)."""
        usage = self.usage
        return {
            **({"fairSharing": {}} if self.fair_sharing else {}),
            **({"expectedRuntime": self.runtimes.to_dict()} if self.runtimes else {}),
            **(
                {
                    "usageDBConfig": {
                        "usageParams": {
                            "windowSize": f"{usage.window:g}s",
                            **(
                                {"halfLifePeriod": f"{usage.half_life:g}s"}
                                if usage.half_life
                                else {}
                            ),
                        }
                    }
                }
                if usage is not None
                else {}
            ),
            "actions": ", ".join(self.actions),
            "tiers": [
                {
                    "plugins": [
                        {
                            "name": p.name,
                            **p.options,
                            **({"arguments": p.arguments} if p.arguments else {}),
                        }
                        for p in tier.plugins
                    ]
                }
                for tier in self.tiers
            ],
        }


def plugin_status(name: str) -> str:
    """Whether gangplan acts on a plugin a conf lists: `acted on`, `not implemented yet`
    (a Volcano / Koordinator plugin, noted) or `unknown` (noted)."""
    if name in BUILTIN_PLUGINS or name in OPTIONAL_PLUGINS:
        return "acted on"
    return "not implemented yet" if name in UPSTREAM_PLUGINS else "unknown"


def _configmap_conf(data: object, source: str) -> dict[str, Any]:
    """The conf inside a Volcano ConfigMap's `data: {volcano-scheduler.conf: |...}`."""
    if not isinstance(data, dict) or len(data) != 1:
        raise ConfigError("must map one file name to the conf text", source=source, field="data")
    name, inner = next(iter(data.items()))
    if not isinstance(inner, str):
        raise ConfigError("must be the conf as text", source=source, field=f"data.{name}")
    try:
        body = safe_load(inner)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"malformed YAML: {one_line(exc)}", source=source, field=f"data.{name}"
        ) from None
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise ConfigError(
            "expected a mapping with `actions` and `tiers`", source=source, field=f"data.{name}"
        )
    return body


def load_conf(path: str | Path | None) -> SchedulerConf:
    """Read a Volcano scheduler conf file; None gives `SchedulerConf.default()`."""
    if path is None:
        return SchedulerConf.default()
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror or exc}", source=source) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(not_text(exc), source=source) from None
    return conf_from_text(text, source)


def _fair_sharing(value: object, source: str, notes: list[str]) -> bool:
    """Kueue's `fairSharing` stanza: present (a mapping, even empty) turns fair sharing on,
    as Kueue's `fairsharing.Enabled` does; its preemption strategies are noted (gangplan
    plans no Kueue preemption)."""
    if value is None:
        return False
    if not isinstance(value, dict):
        raise ConfigError("must be a mapping (Kueue's Configuration fairSharing)",
                          source=source, field="fairSharing")  # fmt: skip
    if value.get("preemptionStrategies"):
        notes.append(
            f"{source}: fairSharing.preemptionStrategies: not acted on (gangplan orders "
            "Kueue's admissions by fair share; it plans no Kueue preemption)"
        )
    for key in sorted(set(value) - {"preemptionStrategies", "enable"}, key=str):
        notes.append(f"{source}: fairSharing.{str(key)[:64]}: not acted on")
    return value.get("enable", True) is not False


def conf_from_text(text: str, source: str) -> SchedulerConf:
    """A Volcano scheduler conf (or a ConfigMap holding one) given as text; `source` names
    where it came from in errors and notes (a file, `options.scheduler_conf`, a ConfigMap)."""
    try:
        body = safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"malformed YAML: {one_line(exc)}", source=source) from None
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise ConfigError("expected a mapping with `actions` and `tiers`", source=source)
    # The Volcano ConfigMap wraps the conf in `data: {volcano-scheduler.conf: |...}`.
    if "data" in body and "tiers" not in body:
        body = _configmap_conf(body["data"], source)
    usage_notes: list[str] = []
    usage = usage_params(body.pop("usageDBConfig", None), source, usage_notes)
    runtimes = expected_runtime(body.pop("expectedRuntime", None), source)
    fair_sharing = _fair_sharing(body.pop("fairSharing", None), source, usage_notes)
    if fair_sharing and "tiers" not in body:  # a Kueue user's conf: the default plugins
        body["tiers"] = [
            {"plugins": [{"name": p.name, **p.options, **({"arguments": p.arguments} if p.arguments else {})}
                         for p in tier.plugins]}
            for tier in SchedulerConf.default().tiers
        ]  # fmt: skip
    try:
        conf = SchedulerConf.model_validate(
            {**body, "source": source, "usage": usage, "runtimes": runtimes,
             "fair_sharing": fair_sharing}
        )  # fmt: skip
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) if isinstance(x, str) else f"[{x}]" for x in err["loc"])
        raise ConfigError(err["msg"], source=source, field=field.replace(".[", "[")) from None
    for i, action in enumerate(conf.actions):
        if action not in KNOWN_ACTIONS:
            raise ConfigError(
                f"unknown action {action!r} (known: {', '.join(sorted(KNOWN_ACTIONS))})",
                source=source,
                field=f"actions[{i}]",
            )
    quotas = [
        p for p in (Plugin.CAPACITY, Plugin.CAPACITY_CARD, Plugin.PROPORTION) if conf.enabled(p)
    ]
    if len(quotas) > 1:
        raise ConfigError(
            f"{quotas[0]} and {quotas[1]} must not be enabled together (each manages the queue "
            "quotas; Volcano's docs: enable one)",
            source=source,
            field="tiers",
        )
    notes = usage_notes
    for key in sorted(set(body) - {"actions", "tiers"}, key=str):
        notes.append(f"{source}: {str(key)[:64]}: not acted on (gangplan reads actions and tiers)")
    drf = conf.plugin(Plugin.DRF)
    quota = conf.enabled(Plugin.PROPORTION) or conf.enabled(Plugin.CAPACITY)
    hdrf = drf is not None and drf.options.get("enableHierarchy") is True
    if hdrf and "reclaim" in conf.actions and not quota:
        notes.append(
            f"{source}: drf: enableHierarchy: hierarchical DRF's reclaim rule judges the "
            "victims of a quota plugin's reclaim (capacity or proportion); with neither "
            "listed, reclaim is not planned"
        )
    for ti, tier in enumerate(conf.tiers):
        for pi, plugin in enumerate(tier.plugins):
            acted = ACTED_SWITCHES.get(plugin.name, frozenset())
            for key, value in plugin.options.items():
                if key.startswith("enable") and not isinstance(value, bool):
                    raise ConfigError(
                        f"must be true or false, not {value!r} (Volcano reads it as a bool)",
                        source=source,
                        field=f"tiers[{ti}].plugins[{pi}].{key}",
                    )
                if key in acted or (key.startswith("enable") and value is not False):
                    continue
                notes.append(
                    f"{source}: tiers[{ti}].plugins[{pi}].{key}: {value!r} is not acted on; "
                    f"gangplan has no switch for this part of {plugin.name!r}"
                )
            if plugin.name in BUILTIN_PLUGINS or plugin.name in OPTIONAL_PLUGINS:
                continue
            kind = "is not implemented yet" if plugin.name in UPSTREAM_PLUGINS else "is unknown"
            notes.append(
                f"{source}: tiers[{ti}].plugins[{pi}]: plugin {plugin.name!r} {kind}; ignored"
            )
    return conf.model_copy(update={"notes": tuple(notes)})
