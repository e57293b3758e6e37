"""Top-level keys of a conf beside Volcano's `actions` and `tiers`: KAI's `usageDBConfig`
(time-based fair share) and gangplan's `expectedRuntime` (start estimates), and the Go
durations both are written in."""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from solver.errors import ConfigError
from solver.model import duration_problem

__all__ = [
    "ExpectedRuntime",
    "UsageParams",
    "expected_runtime",
    "parse_go_duration",
    "usage_params",
]


_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w)")
_SECONDS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0,
    "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0,
}  # fmt: skip


def parse_go_duration(text: object) -> float | None:
    """A Go duration (`10m`, `1h30m`, `168h`; `d` and `w` too, as KAI's docs write
    `windowSize: 1w`) in seconds; `0` is 0; None when it is not one."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    body = text.strip()
    if body == "0":
        return 0.0
    parts = _GO_DURATION.findall(body)
    if not parts or "".join(n + u for n, u in parts) != body:
        return None
    total = sum(float(n) * _SECONDS[u] for n, u in parts)
    return total if math.isfinite(total) else None


class UsageParams(BaseModel):
    """KAI-Scheduler's `usageDBConfig.usageParams` (time-based fair share): how a queue's
    usage is counted. `half_life` None: no decay; `window` the sliding window, both in
    seconds (KAI's defaults: no decay, one week)."""

    model_config = ConfigDict(frozen=True)

    half_life: float | None = None
    window: float = 604800.0


_USAGE_READ = {"halfLifePeriod", "windowSize", "windowType"}


def usage_params(body: object, source: str, notes: list[str]) -> UsageParams | None:
    """KAI's `usageDBConfig` (time-based fair share). gangplan queries no usage database:
    a queue's usage is its `gangplan.io/usage` when given, else accumulated from its running
    pods' creation times; the connection settings are noted."""
    if body is None:
        return None
    field = "usageDBConfig"
    if not isinstance(body, dict):
        raise ConfigError("must be a mapping", source=source, field=field)
    params = body.get("usageParams") or {}
    if not isinstance(params, dict):
        raise ConfigError("must be a mapping", source=source, field=f"{field}.usageParams")
    values: dict[str, float | None] = {}
    for key, target in (("halfLifePeriod", "half_life"), ("windowSize", "window")):
        if key not in params or params[key] is None:
            continue
        seconds = parse_go_duration(params[key])
        if seconds is None or seconds < 0:
            raise ConfigError(
                f"must be a duration such as 10m, 24h or 1w, got {params[key]!r}",
                source=source,
                field=f"{field}.usageParams.{key}",
            )
        # KAI: a half-life of 0 turns decay off; a window of 0 is its default
        values[target] = seconds or None
    window_type = params.get("windowType", "sliding")
    if window_type != "sliding":
        notes.append(
            f"{source}: {field}.usageParams.windowType: {window_type!r} is not acted on; "
            "gangplan counts usage over a sliding window"
        )
    unread = sorted(set(params) - _USAGE_READ) + sorted(set(body) - {"usageParams"})
    if unread:
        notes.append(
            f"{source}: {field}: {', '.join(unread)} not acted on: gangplan queries no usage "
            "database; a KAI queue's usage is its gangplan.io/usage annotation, else what its "
            "running pods used since their creation"
        )
    return UsageParams(
        half_life=values.get("half_life"),
        **({"window": w} if (w := values.get("window")) else {}),
    )


class ExpectedRuntime(BaseModel):
    """`expectedRuntime`: how long a running pod that states no end of its own runs, for
    the start estimates (`solver.start`): by its priority class, else `default`; None or 0:
    it runs on (no end). In seconds."""

    model_config = ConfigDict(frozen=True)

    default: float | None = None
    priority_classes: dict[str, float] = Field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            **({"default": f"{self.default:g}s"} if self.default else {}),
            **(
                {"priorityClasses": {k: f"{v:g}s" for k, v in self.priority_classes.items()}}
                if self.priority_classes
                else {}
            ),
        }


_DURATION_HINT = "must be a duration such as 90m, 8h or 1w (at most ten years; 0: runs on)"
MAX_CLASSES = 1024


def expected_runtime(body: object, source: str) -> ExpectedRuntime | None:
    """gangplan's `expectedRuntime: {default: 4h, priorityClasses: {train: 24h}}`."""
    if body is None:
        return None
    field = "expectedRuntime"
    if not isinstance(body, dict):
        raise ConfigError("must be a mapping", source=source, field=field)
    unknown = sorted(str(k)[:64] for k in set(body) - {"default", "priorityClasses"})
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r} (known: default, priorityClasses)",
            source=source,
            field=f"{field}.{unknown[0]}",
        )

    def seconds(value: object, at: str) -> float:
        found = parse_go_duration(value if not isinstance(value, int) else f"{value}s")
        if found is None or duration_problem(found) is not None:
            raise ConfigError(_DURATION_HINT, source=source, field=at)
        return found

    default = seconds(body["default"], f"{field}.default") if "default" in body else None
    classes = body.get("priorityClasses") or {}
    if not isinstance(classes, dict):
        raise ConfigError("must map priority class names to durations", source=source,
                          field=f"{field}.priorityClasses")  # fmt: skip
    if len(classes) > MAX_CLASSES:
        raise ConfigError(f"at most {MAX_CLASSES} classes", source=source,
                          field=f"{field}.priorityClasses")  # fmt: skip
    by_class: dict[str, float] = {}
    for name, value in classes.items():
        at = f"{field}.priorityClasses.{str(name)[:64]}"
        if not isinstance(name, str) or not 0 < len(name) <= 253:
            raise ConfigError("a class name must be 1-253 characters", source=source, field=at)
        by_class[name] = seconds(value, at)
    return ExpectedRuntime(default=default, priority_classes=by_class)
