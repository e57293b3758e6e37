"""Online replay of the openb pod list on the 1,213-node openb GPU cluster (numpy), as the FGD
simulator (`hkust-adsl/kubernetes-scheduler-simulator`, paths below are in that repository)
runs its openb experiments (`experiments/run_scripts/generate_run_scripts.py`,
`scripts/generate_config_and_run.py`: `-tune 1.3 --shuffle-pod=true`, one score plugin).

Protocol (`pkg/simulator/core.go` Simulate, `simulator.go` SortClusterPods / tuneUpPods /
syncClusterResourceList): the whole pod list in a random order, then copies drawn uniformly
with replacement from the list, appended in draw order while `total + gpu_milli(copy) <=
1.3 x capacity` (the simulator tests the copy's per-GPU milli but adds num_gpu x gpu_milli,
and stops at the first copy that fails). Each pod is placed by the policy when some node
fits it, else dropped (no queueing, no departures). Reported: `gpu_alloc_ratio`, allocated
milli / capacity after the last arrival, and `gpu_alloc_ratio_at_130`, the published metric
(`experiments/analysis/merge_alloc_discrete.py`: mean of the per-arrival allocation ratios
whose arrived demand rounds to 130% of capacity); they differ by ~0.01 pp at most.

Node model (`pkg/simulator/plugin/open_gpu_share.go` Filter + kube-scheduler's
NodeResourcesFit): CPU (milli), memory (MiB), GPU devices with 1000 milli each. A pod fits a
node when CPU and memory fit, the node's GPU model is allowed (gpu_spec) and it finds
`num_gpu` devices with at least `gpu_milli` free each (whole GPUs: fully free devices).

Scoring (kube-scheduler 1.20 as vendored, `vendor/.../core/generic_scheduler.go`): the one
score plugin gives each feasible node an int64 score; the highest wins and ties go to the
smallest node name. The simulator renames nodes "%04d-<name>" with a random permutation, so
ties go to a random but fixed node order, drawn here per run from `seed` (else from the
arrival order).

Policies:
* `bestfit` -- BestFitScore (`pkg/simulator/plugin/best_fit_score.go`): s = 0.5 (cpu_free -
  cpu_req) / 128000 + 0.5 (gpu_free - gpu_req) / 8000, score int64((1 - s) x 100) (its
  min-max normalisation keeps the top set); a shared pod takes the device with the least
  milli left that fits (first on ties), whole-GPU pods the first free devices.
* `fgd` -- Fragmentation Gradient Descent (Weng et al., ATC'23; `plugin/fgd_score.go`,
  `pkg/utils/frag.go`). Typical pods (`GetTypicalPods`, experiments' config
  `isInvolvedCpuPods: true`, `podPopularityThreshold: 95`, `podIncreaseStep: 1`,
  `gpuResWeight: 0`): shapes (cpu, gpu_milli, num_gpu, gpu_spec) of the list incl. CPU-only
  pods, most frequent first, cut once they cover 95% of the pods (35 of 91 shapes on the
  default list, 127 of 330 on gpuspec33), popularity p_m = count / covered count. A node's
  fragmentation F(n) = sum_m p_m F_n(m) (`NodeGpuShareFragAmountScore`): F_n(m) = free GPU
  milli on devices with less than m's gpu_milli left when m fits (Q3: CPU left and num_gpu
  devices with gpu_milli free), else all free GPU milli (Q1/Q2/Q4, no access, and always
  for CPU-only shapes).
  Score = int64(sigmoid((F_before - F_after) / 1000) x 100); a shared pod's score on a node
  is its best device's and it takes the first device with that score; other pods take
  devices as `NodeResource.Sub` / `AllocateExclusiveGpuId` (which free devices does not
  change F). The integer score makes many nodes tie, and the tie order matters: scoring the
  exact F change (policy `fgd_exact`) gives ~94.5% instead of ~95.4%.
* `bestfit_exact`, `fgd_exact` -- the same without the integer scores (exact best value,
  ties to the node order); not the simulator, kept to show what the rounding does.

Remaining differences from the simulator: its random numbers (Go math/rand, seeds 42-51)
are not reproduced, so per-seed results differ and only the distributions compare; F is
summed exactly here (integer counts x milli, then / covered count) where the simulator sums
float64 popularity x milli, and Go's math.Exp may differ from numpy's in the last bit, so a
score that falls exactly on an integer boundary may round differently (rare).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from solver.features.devices.bestfit import best_fit_score
from solver.features.devices.fgd import fgd_score, popular_shapes, target_workload

DATA = Path(__file__).resolve().parents[1] / "data" / "openb"
MILLI = 1000
GMAX = 8
MAX_SPEC_CPU = 128000.0  # gpushareutils.MaxSpecCpu
MAX_SPEC_GPU = 8000.0  # gpushareutils.MaxSpecGpu


@dataclass
class Cluster:
    cpu: np.ndarray  # [N]
    mem: np.ndarray  # [N]
    gpus: np.ndarray  # [N]
    model: np.ndarray  # [N] model index (-1: none)
    models: list[str]


@dataclass
class Pods:
    names: list[str]
    cpu: np.ndarray
    mem: np.ndarray
    ngpu: np.ndarray
    milli: np.ndarray
    access: np.ndarray  # [P, models] allowed GPU models (all True without gpu_spec)
    spec: list[str]


def load_cluster(path: Path = DATA / "openb_node_list_gpu_node.csv") -> Cluster:
    with path.open() as f:
        rows = list(csv.DictReader(f))
    models = sorted({r["model"] for r in rows if r["model"]})
    return Cluster(
        cpu=np.array([int(r["cpu_milli"]) for r in rows]),
        mem=np.array([int(r["memory_mib"]) for r in rows]),
        gpus=np.array([int(r["gpu"]) for r in rows]),
        model=np.array([models.index(r["model"]) if r["model"] else -1 for r in rows]),
        models=models,
    )


def load_pods(path: Path, models: list[str]) -> Pods:
    with path.open() as f:
        rows = list(csv.DictReader(f))
    access = np.ones((len(rows), len(models)), dtype=bool)
    for i, r in enumerate(rows):
        if r["gpu_spec"]:
            allowed = set(r["gpu_spec"].split("|"))
            access[i] = [m in allowed for m in models]
    ngpu = np.array([int(r["num_gpu"]) for r in rows])
    milli = np.array([int(r["gpu_milli"]) if int(r["num_gpu"]) else 0 for r in rows])
    return Pods(
        names=[r["name"] for r in rows],
        cpu=np.array([int(r["cpu_milli"]) for r in rows]),
        mem=np.array([int(r["memory_mib"]) for r in rows]),
        ngpu=ngpu,
        milli=milli,
        access=access,
        spec=[r["gpu_spec"] for r in rows],
    )


def arrivals(pods: Pods, capacity_milli: int, seed: int, load: float = 1.3) -> np.ndarray:
    """Indices of arriving pods, as the simulator's `SortClusterPods` + `tuneUpPods`: the
    whole list in a random order, then copies drawn uniformly with replacement from the list
    and appended (in draw order) while `total + gpu_milli(copy) <= load x capacity` -- the
    simulator tests the copy's per-GPU milli but adds its total milli, and stops at the
    first copy that fails the test."""
    rng = np.random.default_rng(seed)
    demand = pods.ngpu * pods.milli
    shuffled = rng.permutation(len(demand))
    total = int(demand.sum())
    target = load * capacity_milli
    extra: list[int] = []
    while True:
        i = int(rng.integers(0, len(demand)))
        if total + int(pods.milli[i]) > target:
            break
        total += int(demand[i])
        extra.append(i)
    return np.concatenate([shuffled, np.array(extra, dtype=np.int64)])


def typical_shapes(
    pods: Pods, threshold: float = 95.0, cpu_pods: bool = True
) -> tuple[list[tuple[int, int, int, str]], np.ndarray]:
    """The simulator's `GetTypicalPods` (pkg/utils/frag.go) with the FGD experiments' config
    (`isInvolvedCpuPods: true`, `podPopularityThreshold: 95`, `podIncreaseStep: 1`,
    `gpuResWeight: 0`): shapes (cpu, gpu_milli, num_gpu, gpu_spec) of the pod list, most
    frequent first (equal counts: larger shape first), cut after the first shapes that cover
    `threshold`% of the pods. Returns the shapes and their pod counts (popularity = count /
    counts.sum())."""
    counts: dict[tuple[int, int, int, str], int] = {}
    for i in range(len(pods.names)):
        k = int(pods.ngpu[i])
        if k == 0 and not cpu_pods:
            continue
        key = (int(pods.cpu[i]), int(pods.milli[i]), k, pods.spec[i] if k else "")
        counts[key] = counts.get(key, 0) + 1
    shapes, kept = popular_shapes(counts, threshold)
    return shapes, np.array(kept, dtype=np.int64)


class Replay:
    def __init__(self, cluster: Cluster, pods: Pods, rank: np.ndarray | None = None) -> None:
        self.c = cluster
        # selectHost breaks score ties by the smallest node name; the simulator renames the
        # nodes "%04d-<name>" with a random permutation (syncClusterResourceList)
        self.rank = np.arange(len(cluster.cpu)) if rank is None else np.asarray(rank)
        self.p = pods
        N = len(cluster.cpu)
        self.cpu = cluster.cpu.copy()
        self.mem = cluster.mem.copy()
        self.dev = np.full((N, GMAX), -1, dtype=np.int64)
        for n in range(N):
            self.dev[n, : cluster.gpus[n]] = MILLI
        self.capacity = int(cluster.gpus.sum()) * MILLI
        self.allocated = 0
        self.where: list[list[int]] = [[] for _ in range(N)]  # pods placed per node
        # FGD: the workload's typical pod shapes and their counts (the measure: solver's)
        shapes, counts = typical_shapes(pods)
        self.target = target_workload(shapes, counts.tolist(), cluster.models)
        self.m_norm = self.target.norm
        self.frag = self._frag(self.cpu, self.dev, cluster.model)

    # -- FGD's measure -------------------------------------------------------------

    def _frag(self, cpu: np.ndarray, dev: np.ndarray, model: np.ndarray) -> np.ndarray:
        """F(n) x m_norm for each row (node state), i.e. sum over typical shapes of count x
        fragment milli: integer-valued, so exact in float64 whatever the summation order
        (`solver.features.devices.fgd`)."""
        return self.target.fragmentation(cpu, dev, model)

    # -- one pod -------------------------------------------------------------------

    def _feasible(self, i: int) -> np.ndarray:
        p = self.p
        ok = (self.cpu >= p.cpu[i]) & (self.mem >= p.mem[i])
        if p.ngpu[i]:
            ok &= (self.dev >= p.milli[i]).sum(axis=1) >= p.ngpu[i]
            ok &= np.where(self.c.model >= 0, p.access[i][np.maximum(self.c.model, 0)], False)
        return np.flatnonzero(ok)

    def _devices(self, n: int, i: int, device: int | None) -> list[int]:
        k, d = int(self.p.ngpu[i]), int(self.p.milli[i])
        if k == 0:
            return []
        if device is not None:
            return [device]
        row = self.dev[n]
        return list(np.argsort(np.where(row >= d, row, 1 << 30), kind="stable")[:k])

    def place_fgd_exact(self, i: int) -> bool:
        """FGD without the simulator's integer scores: the exact largest F decrease."""
        return self.place_fgd(i, exact=True)

    def _tie(self, nodes: np.ndarray) -> int:
        """The node with the smallest name among equally scored ones."""
        return int(nodes[np.argmin(self.rank[nodes])])

    def _commit(self, n: int, i: int, devices: list[int]) -> None:
        self.cpu[n] -= self.p.cpu[i]
        self.mem[n] -= self.p.mem[i]
        for g in devices:
            self.dev[n, g] -= self.p.milli[i]
        self.allocated += int(self.p.ngpu[i] * self.p.milli[i])
        self.where[n].append(i)

    def place_bestfit(self, i: int) -> bool:
        """BestFitScore: s = 0.5 (cpu_free - cpu_req) / MaxSpecCpu + 0.5 (gpu_free - gpu_req)
        / MaxSpecGpu, score int64((1 - s) x 100) (min-max normalisation keeps the top set);
        highest score, ties to the smallest node name; a shared pod takes the device with
        the least milli left that fits (first on ties), whole GPUs the first free ones."""
        nodes = self._feasible(i)
        if nodes.size == 0:
            return False
        gfree = np.where(self.dev[nodes] > 0, self.dev[nodes], 0).sum(axis=1).astype(np.float64)
        cfree = self.cpu[nodes].astype(np.float64)
        cpu_left = cfree - float(self.p.cpu[i])
        gpu_left = gfree - float(self.p.ngpu[i] * self.p.milli[i])
        score = best_fit_score(cpu_left, gpu_left, MAX_SPEC_CPU, MAX_SPEC_GPU)
        n = self._tie(nodes[score == score.max()])
        self._commit(n, i, self._devices(n, i, None))
        return True

    def place_bestfit_exact(self, i: int) -> bool:
        """BestFit without the simulator's integer scores: the exact minimum of s."""
        nodes = self._feasible(i)
        if nodes.size == 0:
            return False
        gfree = np.where(self.dev[nodes] > 0, self.dev[nodes], 0).sum(axis=1)
        score = (
            0.5 * (self.cpu[nodes] - self.p.cpu[i]) / MAX_SPEC_CPU
            + 0.5 * (gfree - self.p.ngpu[i] * self.p.milli[i]) / MAX_SPEC_GPU
        )
        n = self._tie(nodes[score == score.min()])
        self._commit(n, i, self._devices(n, i, None))
        return True

    def place_fgd(self, i: int, exact: bool = False) -> bool:
        nodes = self._feasible(i)
        if nodes.size == 0:
            return False
        k, d = int(self.p.ngpu[i]), int(self.p.milli[i])
        # candidate states: (node, device) -- shared pods try every distinct device level
        cand_node: list[np.ndarray] = []
        cand_dev: list[np.ndarray] = []
        if k == 1 and d < MILLI:
            dev = self.dev[nodes]
            for g in range(GMAX):
                fits = dev[:, g] >= d
                # one device per distinct free level on the node is enough
                dup = np.zeros(len(nodes), dtype=bool)
                for h in range(g):
                    dup |= dev[:, h] == dev[:, g]
                sel = fits & ~dup
                cand_node.append(nodes[sel])
                cand_dev.append(np.full(int(sel.sum()), g))
            cn = np.concatenate(cand_node)
            cd = np.concatenate(cand_dev)
        else:
            cn = nodes
            cd = np.full(len(nodes), -1)
        dev_after = self.dev[cn].copy()
        if k == 1 and d < MILLI:
            dev_after[np.arange(len(cn)), cd] -= d
        elif k:
            # whole GPUs: take k fully free devices (which ones does not change F)
            full = dev_after == MILLI
            rank = np.cumsum(full, axis=1)
            take = full & (rank <= k)
            dev_after[take] = 0
        cpu_after = self.cpu[cn] - self.p.cpu[i]
        after = self._frag(cpu_after, dev_after, self.c.model[cn])
        # FGDScore: int64(sigmoid((F_before - F_after) / 1000) * 100); a shared pod's node
        # score is its best device's; selectHost: highest score, ties to the smallest node
        # name (self.rank); the device: the first (lowest index) with the node's score.
        x = (self.frag[cn] - after) / self.m_norm / 1000.0
        score = x if exact else fgd_score(self.target, self.frag[cn], after)
        top = score == score.max()
        n = self._tie(cn[top])
        devices = (
            [int(cd[top & (cn == n)].min())] if k == 1 and d < MILLI else self._devices(n, i, None)
        )
        self._commit(n, i, devices)
        self.frag[n] = self._frag(
            self.cpu[n : n + 1], self.dev[n : n + 1], self.c.model[n : n + 1]
        )[0]
        return True


def replay(
    cluster: Cluster,
    pods: Pods,
    order: np.ndarray,
    policy: str,
    keep: list[Replay] | None = None,
    seed: int | None = None,
) -> dict[str, float]:
    """Place the arrivals `order` with `policy` (`bestfit`, `fgd`, `bestfit_exact`,
    `fgd_exact`). The nodes' random name order (score ties) is drawn from `seed`, else from
    the arrival order itself (so it is reproducible and differs per run seed either way)."""
    entropy = seed if seed is not None else [int(x) for x in order]
    rank = np.random.default_rng(entropy).permutation(len(cluster.cpu))
    r = Replay(cluster, pods, rank)
    if keep is not None:
        keep.append(r)
    place = getattr(r, f"place_{policy}")
    placed = 0
    demand = pods.ngpu * pods.milli
    arrived = np.zeros(len(order), dtype=np.int64)
    used = np.zeros(len(order), dtype=np.int64)
    total = 0
    for t, i in enumerate(order):
        placed += place(int(i))
        total += int(demand[i])
        arrived[t] = total
        used[t] = r.allocated
    return {
        "gpu_alloc_ratio": r.allocated / r.capacity,
        "gpu_alloc_ratio_at_130": discrete_alloc(arrived, used, r.capacity, 130),
        "placed": placed,
        "arrived": len(order),
        "arrived_gpu_ratio": float(total) / r.capacity,
    }


def discrete_alloc(arrived: np.ndarray, used: np.ndarray, capacity: int, percent: int) -> float:
    """The published metric (`experiments/analysis/merge_alloc_discrete.py`): the mean of the
    allocation ratios (in %, rounded to 2 decimals) logged after the arrivals whose arrived
    GPU demand rounds to `percent`% of capacity (else within +-1%), rounded to 2 decimals;
    returned as a fraction."""
    arr = np.round(100.0 * arrived / capacity, 0)
    alloc = np.round(100.0 * used / capacity, 2)
    sel = arr == percent
    if not sel.any():
        sel = (arr >= percent - 1) & (arr <= percent + 1)
    if not sel.any():
        return float("nan")
    return round(float(alloc[sel].mean()), 2) / 100.0
