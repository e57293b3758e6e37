"""Kubernetes manifests in: YAML files or stdin -> validated objects -> the domain model."""

from solver.kube.convert import build_model
from solver.kube.loader import RawObject, read_sources
from solver.kube.workloads import expand_workloads
from solver.model import ClusterModel

__all__ = ["RawObject", "build_model", "load_manifests", "read_sources"]


def load_manifests(*paths: str) -> ClusterModel:
    """Read every file (`-` for stdin), expand workloads into their pods and gangs, and
    build the ClusterModel; raises ManifestError."""
    objects, notes = expand_workloads(read_sources(paths))
    model = build_model(objects)
    return model.model_copy(update={"notes": (*notes, *model.notes)}) if notes else model
