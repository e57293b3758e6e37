"""Changes to the job itself: one more card type, smaller Kueue slices, a lower minMember
(its required topology made a preference: `_topology.py`)."""

from __future__ import annotations

from solver.changes._base import POD_SET, SLICE_SIZE, Change, Runs, Sized, _smallest
from solver.decision import Certificate
from solver.model import CARD_NAME, Pod
from solver.snapshot import Delta, Snapshot


def _cards(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    """One more card type the gang's pods accept (all of them name the same cards now)."""
    pods = [p for p in snapshot.pending.values() if (p.gang or p.key) == gang]
    named = {p.annotations.get(CARD_NAME) for p in pods}
    if len(named) != 1 or None in named:
        return None
    (text,) = named
    assert text is not None
    listed = {c.strip() for c in text.split("|")}
    total = snapshot.nodes.cards.total
    for card in sorted((c for c in total if c not in listed), key=lambda c: (-total[c], c)):
        wider = f"{text}|{card}"
        delta = Delta(upsert_pods=tuple(
            p.model_copy(update={"annotations": {**p.annotations, CARD_NAME: wider}}) for p in pods
        ))  # fmt: skip
        if runs(delta):
            change = Change("cards", f"card {card} as an alternative ({CARD_NAME}: {wider})",
                            1, gang, dimension=card)  # fmt: skip
            return change, delta
    return None


def _slices(snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs) -> Sized | None:
    """Smaller slices for a Kueue pod set of the gang: the largest size below its own that
    divides its pods (Kueue's webhook asks that) with which the gang runs."""
    by_set: dict[tuple[str, str], list[Pod]] = {}
    for p in snapshot.pending.values():
        if (p.gang or p.key) == gang and SLICE_SIZE in p.annotations:
            by_set.setdefault((p.labels.get(POD_SET, ""), p.annotations[SLICE_SIZE]), []).append(p)
    for (name, text), pods in sorted(by_set.items()):
        k = int(text) if text.isdigit() else 0
        for size in (s for s in range(min(k - 1, len(pods)), 0, -1) if len(pods) % s == 0):
            delta = Delta(upsert_pods=tuple(
                p.model_copy(update={"annotations": {**p.annotations, SLICE_SIZE: str(size)}})
                for p in pods
            ))  # fmt: skip
            if runs(delta):
                where = f"pod set {name}: " if name else ""
                text_ = f"{where}slices of {size} pods instead of {k}"
                return Change("slices", text_, k - size, gang, dimension=name), delta
    return None


def _min_member(
    snapshot: Snapshot, gang: str, cert: Certificate | None, runs: Runs
) -> Sized | None:
    g = snapshot.gangs.get(gang)
    if g is None or g.min_member <= 1:
        return None

    def with_min(m: int) -> Delta:
        return Delta(upsert_gangs=(g.model_copy(update={"min_member": m}),))

    # the largest m below min_member that runs: the smallest cut (min_member - m) that runs
    cut = _smallest(lambda c: runs(with_min(g.min_member - c)), g.min_member - 1)
    if cut is None:
        return None
    m = g.min_member - cut
    change = Change("min-member", f"minMember {m} instead of {g.min_member}", cut, gang)
    return change, with_min(m)
