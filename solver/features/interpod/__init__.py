"""Inter-pod affinity, anti-affinity and topology spread (kube-scheduler's
`InterPodAffinity` and `PodTopologySpread` filters), inside gangs and between them.

    _match.py   which pods a term selects; running pods per node and domain (memoised)
    _compile.py filters that are final at compile, term rows that move (`block.py`)
    block.py    the Problem block: per-domain counts, owners and matchers of each row
    greedy.py   the tracker the greedy places involved pods through, one at a time
    cpsat.py    the rows as exact CP-SAT constraints

Semantics are kube-scheduler's (pkg/scheduler/framework/plugins/interpodaffinity,
podtopologyspread), with the call's own pods counted as they land, so "one worker per
node" places a gang on distinct nodes or leaves it pending as a whole.
"""

from __future__ import annotations

from solver.config import Plugin
from solver.features._base import Feature
from solver.features._steps import CpsatSteps, ExplainSteps, GreedySteps
from solver.features.interpod import cpsat
from solver.features.interpod._compile import compile_interpod, type_key_of_call
from solver.features.interpod.block import (
    REASON_AFFINITY,
    REASON_ANTI,
    REASON_EXISTING_ANTI,
    REASON_SPREAD,
    REASON_SPREAD_LABEL,
    InterPodBlock,
    TermRow,
)
from solver.features.interpod.bound import anti_affinity_bound
from solver.features.interpod.greedy import TermTracker, interpod_tracker

__all__ = [
    "FEATURE",
    "REASON_AFFINITY",
    "REASON_ANTI",
    "REASON_EXISTING_ANTI",
    "REASON_SPREAD",
    "REASON_SPREAD_LABEL",
    "InterPodBlock",
    "TermRow",
    "TermTracker",
    "interpod_tracker",
]

FEATURE = Feature(
    name="interpod",
    plugins=(Plugin.PREDICATES,),
    compile=compile_interpod,
    call_type_key=type_key_of_call,
    greedy=GreedySteps(trackers=(interpod_tracker,)),
    cpsat=CpsatSteps(
        modules=(cpsat.build,),
        class_splits=(cpsat.class_split,),  # a class lies in one domain of every row's key
        per_node=(cpsat.virtual_types,),
    ),
    explain=ExplainSteps(
        class_splits=(cpsat.class_split,),
        per_node=cpsat.virtual_types,
        guard=cpsat.guard,
        bounds=(anti_affinity_bound,),
    ),
)
