"""`gangplan expand`: the pods and gangs the workloads in the input would become."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from typing import Annotated

import typer
import yaml

from clients._exit import fail
from clients._options import Files
from solver import GangplanError
from solver.kube import read_sources
from solver.kube.workloads import expand_workloads

__all__ = ["expand_cmd"]


class Output(StrEnum):
    yaml = "yaml"
    json = "json"


def expand_cmd(
    files: Files,
    output: Annotated[Output, typer.Option("-o", "--output")] = Output.yaml,
) -> None:
    """Print what each workload (Volcano Job, batch Job, JobSet, LeaderWorkerSet, Kubeflow
    jobs, StatefulSet, Deployment) expands to: its pods and PodGroups (and a JobSet's
    Workload), as its controller would create them. Other objects are left out."""
    try:
        objects = read_sources(files)
        expanded, notes = expand_workloads(objects)
    except GangplanError as err:
        fail(err)
        return
    kept = {id(o) for o in objects}
    made = [o.body for o in expanded if id(o) not in kept]
    for note in notes:
        sys.stderr.write(f"note: {note}\n")
    if output is Output.json:
        sys.stdout.write(json.dumps({"kind": "List", "items": made}, indent=2) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump_all(made, sort_keys=False, allow_unicode=True))
