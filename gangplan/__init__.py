"""gangplan as a library: read manifests, place their pending pods, check the answer; or ask
a running `gangplan serve` over gRPC.

    import gangplan

    model = gangplan.load("cluster.yaml", "jobs.yaml")        # files, folders or "-"
    decision = gangplan.schedule(model, engine="auto", time_limit=5, workers=2, seed=0)
    for pod, placement in decision.placements.items():         # verified before it returns
        print(pod, placement.node or placement.reason)

    with gangplan.Client("127.0.0.1:50051") as client:  # the typed gRPC client
        answer = client.place_job(job=..., snapshot="prod")

Names are loaded on first use, so `import gangplan.v1` (the generated protobuf messages) or
`gangplan.Client` never pays for the solver's imports.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gangplan._client import Client, ClientError
    from gangplan._library import (
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
        load,
        load_conf,
        schedule,
        verify,
    )

try:
    __version__ = version("gangplan")
except PackageNotFoundError:  # a checkout on sys.path without an install
    __version__ = "0+unknown"

__all__ = [
    "Client",
    "ClientError",
    "ConfigError",
    "Decision",
    "GangplanError",
    "GroupOutcome",
    "InputError",
    "ManifestError",
    "Placement",
    "SchedulerConf",
    "Victim",
    "__version__",
    "explain",
    "load",
    "load_conf",
    "schedule",
    "verify",
]
# where each public name lives; its module is imported on first access
_CLIENT_NAMES = {"Client", "ClientError"}
_HOMES = {
    name: "gangplan._client" if name in _CLIENT_NAMES else "gangplan._library"
    for name in __all__
    if name != "__version__"
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gangplan' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
