"""The solver's public API under gangplan's one import name (it lives in `solver/`)."""

from solver import (
    ConfigError,
    Decision,
    GangplanError,
    GroupOutcome,
    InputError,
    ManifestError,
    Placement,
    SchedulerConf,
    Victim,
    explain,
    load_conf,
    schedule,
    verify,
)
from solver import load_manifests as load

__all__ = [
    "ConfigError",
    "Decision",
    "GangplanError",
    "GroupOutcome",
    "InputError",
    "ManifestError",
    "Placement",
    "SchedulerConf",
    "Victim",
    "explain",
    "load",
    "load_conf",
    "schedule",
    "verify",
]
