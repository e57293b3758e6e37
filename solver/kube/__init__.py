"""Kubernetes manifests in: YAML files or stdin -> validated objects -> the domain model."""

from solver.kube.convert import build_model
from solver.kube.loader import RawObject, read_sources
from solver.kube.workloads import expand_workloads
from solver.model import ClusterModel

__all__ = ["RawObject", "build_model", "load_manifests", "load_objects", "read_sources"]


def load_manifests(*paths: str) -> ClusterModel:
    """Read every file (`-` for stdin), expand workloads into their pods and gangs, and
    build the ClusterModel; raises ManifestError."""
    return load_objects(read_sources(paths))


def load_objects(raws: list[RawObject], notes: tuple[str, ...] = ()) -> ClusterModel:
    """Objects already parsed (files, a live cluster's lists) -> the ClusterModel, as
    `load_manifests`; `notes` go first among the model's notes."""
    objects, expanded = expand_workloads(raws)
    model = build_model(objects)
    before = (*notes, *expanded)
    return model.model_copy(update={"notes": (*before, *model.notes)}) if before else model
