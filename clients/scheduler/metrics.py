"""The scheduler front end's Prometheus metrics (`gangplan_scheduler_*`), in the
conventions of the service's own (`server.metrics`): seconds, `_total` counters, a
`reason` label with a small fixed set of values."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["SchedulerMetrics"]

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class SchedulerMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.cycle_seconds = Histogram(
            "gangplan_scheduler_cycle_seconds",
            "Seconds of a scheduling cycle, by phase (sync, decide, bind, report, total).",
            ["phase"],
            buckets=BUCKETS,
            registry=r,
        )
        self.pending_pods = Gauge(
            "gangplan_scheduler_pending_pods",
            "Pods of this scheduler waiting for a node.",
            registry=r,
        )
        self.pending_gangs = Gauge(
            "gangplan_scheduler_pending_gangs",
            "Gangs (a pod without a gang counts as one) the last cycle left waiting.",
            registry=r,
        )
        self.pods_bound = Counter(
            "gangplan_scheduler_pods_bound_total",
            "Pods bound (rate: pods bound per second).",
            registry=r,
        )
        self.bind_seconds = Histogram(
            "gangplan_scheduler_gang_bind_seconds",
            "Seconds from a gang's first bind started to its last bind answered.",
            buckets=BUCKETS,
            registry=r,
        )
        self.bind_errors = Counter(
            "gangplan_scheduler_bind_errors_total",
            "Binds not done, by reason (conflict, not_found, precheck, error, http_N).",
            ["reason"],
            registry=r,
        )
        self.watch_restarts = Counter(
            "gangplan_scheduler_watch_restarts_total",
            "Watches started again, by kind and reason (gone: a relist; error, http_N).",
            ["kind", "reason"],
            registry=r,
        )
        self.resyncs = Counter(
            "gangplan_scheduler_snapshot_resyncs_total",
            "Snapshots put again whole, by the gRPC code that asked for it.",
            ["reason"],
            registry=r,
        )
        self.cycle_errors = Counter(
            "gangplan_scheduler_cycle_errors_total",
            "Cycles that failed, by gRPC code.",
            ["reason"],
            registry=r,
        )
        self.refused = Counter(
            "gangplan_scheduler_objects_refused_total",
            "Cluster objects gangplan's reader refused (each an Event on the object).",
            registry=r,
        )
        self.reports_dropped = Counter(
            "gangplan_scheduler_reports_dropped_total",
            "Conditions and events not written because the report queue was full.",
            registry=r,
        )
        self.evictions = Counter(
            "gangplan_scheduler_evictions_total",
            "Preemption victims evicted (result=evicted), plans a PodDisruptionBudget refused "
            "(refused) or another error stopped (failed).",
            ["result"],
            registry=r,
        )
        self.leader = Gauge(
            "gangplan_scheduler_leader",
            "1 while this replica may write (holds the Lease; always 1 without --leader-elect).",
            registry=r,
        )
        self.leader.set(1)
