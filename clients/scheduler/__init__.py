"""`gangplan scheduler`: a Kubernetes scheduler for the pods that name it.

It lists and watches the cluster through the official Kubernetes client, keeps one gangplan
snapshot current with UpdateSnapshot deltas, asks PlaceJob for every pending gang of its
scheduler names, binds each placed gang whole with `pods/binding`, and writes why a gang
waits where `kubectl describe` shows it. It talks to gangplan only through the public gRPC
API (`clients.client.Client`), to a separate service or to one embedded in the process.

    reflector (list + watch, one per kind) -> mirror -> translate -> UpdateSnapshot
    cycle: sync -> PlaceJob -> binder (pods/binding) -> report (conditions, Events)
"""

from clients.scheduler.cycle import Cycle, CycleOptions
from clients.scheduler.kube import KubeApi, connect
from clients.scheduler.service import SchedulerService, setup_logging

__all__ = ["Cycle", "CycleOptions", "KubeApi", "SchedulerService", "connect", "setup_logging"]
