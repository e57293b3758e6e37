"""Kubernetes manifests in: YAML files or stdin -> validated objects -> the domain model."""

from solver.kube.convert import build_model
from solver.kube.loader import RawObject, read_sources
from solver.model import ClusterModel

__all__ = ["RawObject", "build_model", "load_manifests", "read_sources"]


def load_manifests(*paths: str) -> ClusterModel:
    """Read every file (`-` for stdin) and build the ClusterModel; raises ManifestError."""
    return build_model(read_sources(paths))
