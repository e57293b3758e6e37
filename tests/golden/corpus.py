"""The golden corpus: Decisions recorded before the architecture change, replayed after.

Each row holds a model (the JSON of the input model), a conf, the preemption flag, and the
Decision each engine gave (greedy; CP-SAT with one worker, seed 0, 20 s): `replay(row)`
recomputes them so a refactor can be checked to change no answer. Timing (`seconds`,
`stats`) is left out: it is not part of the answer.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from solver import SchedulerConf, schedule
from solver.model import ClusterModel

CORPUS = Path(__file__).with_name("corpus.jsonl.gz")
ENGINES = {"greedy": {}, "cpsat": {"workers": 1, "seed": 0, "time_limit": 20.0}}


def answer(decision: Any) -> dict[str, Any]:
    out: dict[str, Any] = decision.to_dict()
    out.pop("seconds", None)
    out.pop("stats", None)
    return out


def replay(row: dict[str, Any], engine: str) -> dict[str, Any]:
    model = ClusterModel.model_validate(row["model"])
    conf = SchedulerConf.model_validate(row["conf"])
    decision = schedule(model, conf, engine=engine, preempt=row["preempt"], **ENGINES[engine])
    return answer(decision)


def rows() -> list[dict[str, Any]]:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]
