"""The fuzzers reach every field: each method's valid request sets every message type its
request can hold, so every scalar field of the API gets hostile values (`fields.py`). A
field added to the .proto with no value in the base requests fails here."""

from __future__ import annotations

import pytest

from tests.fuzz.fields import every_field, fields_set, scalar_paths, set_field
from tests.fuzz.requests import DOORS, Door

# Sent by `hostile_request`'s own branch: the stored snapshot instead of the inline cluster.
SNAPSHOT_REF = {
    ("gangplan.v1.SnapshotRef", "id"),
    ("gangplan.v1.SnapshotRef", "expected_generation"),
}


# A queue is Volcano's or KAI-Scheduler's and a snapshot holds one kind: the Volcano queue
# fields get hostile values through most doors, KaiQueueResources' through PutSnapshot's
# KAI door (the cluster is decoded by one function whichever method carries it).
REACHED = frozenset().union(*(fields_set(d.base()) for d in DOORS))


@pytest.mark.parametrize("door", DOORS, ids=str)
def test_every_scalar_field_of_the_request_gets_hostile_values(door: Door) -> None:
    request = door.base()
    missing = every_field(request.DESCRIPTOR) - fields_set(request) - SNAPSHOT_REF
    assert missing - REACHED == set()
    queue_kinds = (
        "gangplan.v1.KaiQueue",
        "gangplan.v1.Kueue",
        "gangplan.v1.Queue",
        "gangplan.v1.NodeGroupTerms",
        "google.protobuf.Duration",  # only KaiQueueResources' minimum runtimes are durations
    )
    assert {m for m in missing if not m[0].startswith(queue_kinds)} == set()


@pytest.mark.parametrize("door", DOORS, ids=str)
def test_every_path_found_can_be_set(door: Door) -> None:
    values = {"int": 2**40, "str": "x", "double": 1.5, "bool": True}
    for kind, paths in scalar_paths(door.base()).items():
        for path in paths:
            request = door.base()
            set_field(request, path, values[kind])
            request.SerializeToString()
