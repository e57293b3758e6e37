"""`gangplan expand`: the pods and gangs the workloads in the input would become."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from clients._exit import fail
from clients._options import Files, Output, OutputFormat
from clients.render import write_data
from solver import GangplanError
from solver.kube import read_sources
from solver.kube.convert import reads
from solver.kube.gangs import api_group
from solver.kube.workloads import EXPANDERS, expand_workloads, generated_names

__all__ = ["expand_cmd"]


def expand_cmd(
    files: Files,
    output: OutputFormat = Output.yaml,
) -> None:
    """Print what each workload (Volcano Job, batch Job, JobSet, LeaderWorkerSet, Kubeflow
    jobs, StatefulSet, Deployment) expands to: its pods and PodGroups (and a JobSet's
    Workload), as its controller would create them. Other objects are left out."""
    try:
        objects, named = generated_names(read_sources(files))  # named first: kept as they are
        expanded, notes = expand_workloads(objects)
        notes = named + notes
    except GangplanError as err:
        fail(err)
        return
    kept = {id(o) for o in objects}
    made = [o.body for o in expanded if id(o) not in kept]
    notes += [
        f"{o.source}: document {o.document}: skipped {o.api_version} {o.kind} (not a "
        "workload gangplan expands, nor an object it reads)"
        for o in expanded
        if id(o) in kept and not reads(o) and (api_group(o.api_version), o.kind) not in EXPANDERS
    ]
    for note in notes:
        sys.stderr.write(f"note: {note}\n")
    if output is not Output.table:
        # a v1 List, as `kubectl get -o yaml|json` prints one: `kubectl apply -f` and
        # `gangplan -f` read it back, and json and yaml carry the same document
        write_data({"apiVersion": "v1", "kind": "List", "items": made}, output)
    else:
        table = Table(title="Objects the workloads expand to")
        for column in ("kind", "namespace", "name", "gang"):
            table.add_column(column)
        for body in made:
            meta = body.get("metadata") or {}
            table.add_row(
                str(body.get("kind", "")),
                str(meta.get("namespace", "")),
                str(meta.get("name", "")),
                _gang_of(meta),
            )
        Console().print(table)


def _gang_of(meta: dict[str, Any]) -> str:
    """The PodGroup a pod names, by the label or annotation its dialect uses."""
    for where in ("annotations", "labels"):
        for key, value in (meta.get(where) or {}).items():
            if key.endswith(("group-name", "pod-group-name", "/pod-group")) and value:
                return str(value)
    return ""
