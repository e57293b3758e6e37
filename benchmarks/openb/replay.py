"""Online replay of the openb pod list on the 1,213-node openb GPU cluster (numpy).

Protocol (FGD simulator, `GenerateWorkloadInflationPods` + ShufflePod): every pod of the
list, plus copies drawn uniformly with replacement until the arrived GPU demand
(sum of num_gpu x gpu_milli) reaches 130% of the cluster's GPU capacity, in a random
order; each pod is placed by the policy when some node fits it, else dropped (no queueing,
no departures). Reported: the GPU allocation ratio at the end (allocated milli / capacity).

Node model: CPU (milli), memory (MiB), GPU devices with 1000 milli each. A pod fits a node
when CPU and memory fit, the node's GPU model is allowed (gpu_spec), and it finds
`num_gpu` devices with at least `gpu_milli` free each (whole GPUs: fully free devices).

Policies:
* `bestfit` -- FGD simulator's BestFit: minimise 0.5 (cpu_free - cpu_req) / max_cpu +
  0.5 (gpu_free - gpu_req) / max_gpu over feasible nodes; a shared pod takes the device
  with the least milli left that fits.
* `fgd` -- Fragmentation Gradient Descent (Weng et al., ATC'23): the node's fragmentation
  F(n) = sum_m p_m F_n(m) over the workload's GPU pod shapes m with popularity p_m, where
  F_n(m) is the node's free GPU milli on devices that cannot serve m (all free milli when
  m cannot run on n at all: CPU, GPU count or model); place the pod where F increases
  least (device choice included). Approximations: shapes are (cpu, num_gpu, gpu_milli,
  gpu_spec) of all GPU pods of the list (no popularity cut-off), memory is not part of the
  shape (as in the simulator), ties go to the lowest node index.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "data" / "openb"
MILLI = 1000
GMAX = 8


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
    rows = list(csv.DictReader(path.open()))
    models = sorted({r["model"] for r in rows if r["model"]})
    return Cluster(
        cpu=np.array([int(r["cpu_milli"]) for r in rows]),
        mem=np.array([int(r["memory_mib"]) for r in rows]),
        gpus=np.array([int(r["gpu"]) for r in rows]),
        model=np.array([models.index(r["model"]) if r["model"] else -1 for r in rows]),
        models=models,
    )


def load_pods(path: Path, models: list[str]) -> Pods:
    rows = list(csv.DictReader(path.open()))
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
    """Indices of arriving pods: all pods plus uniform copies until demand >= load x capacity,
    shuffled."""
    rng = np.random.default_rng(seed)
    demand = pods.ngpu * pods.milli
    total = int(demand.sum())
    extra: list[int] = []
    target = load * capacity_milli
    while total < target:
        draw = rng.integers(0, len(demand), size=256)
        for i in draw:
            if total >= target:
                break
            extra.append(int(i))
            total += int(demand[i])
    order = np.concatenate([np.arange(len(demand)), np.array(extra, dtype=np.int64)])
    return rng.permutation(order)


class Replay:
    def __init__(self, cluster: Cluster, pods: Pods) -> None:
        self.c = cluster
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
        self.max_cpu = float(cluster.cpu.max())
        self.max_gpu = float(cluster.gpus.max() * MILLI)
        # FGD: the workload's GPU pod shapes and their popularity
        gpu = pods.ngpu > 0
        keys = np.stack(
            [
                pods.cpu[gpu],
                pods.ngpu[gpu],
                pods.milli[gpu],
                np.unique(pods.spec, return_inverse=True)[1][gpu],
            ],
            axis=1,
        )
        shapes, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
        idx = np.flatnonzero(gpu)[first]
        self.m_cpu = shapes[:, 0]
        self.m_k = shapes[:, 1]
        self.m_d = shapes[:, 2]
        self.m_access = pods.access[idx]  # [M, models]
        self.m_p = counts / counts.sum()
        self.dvals = np.unique(self.m_d)
        self.m_di = np.searchsorted(self.dvals, self.m_d)
        self.frag = self._frag(self.cpu, self.dev, cluster.model)

    # -- FGD's measure -------------------------------------------------------------

    def _frag(self, cpu: np.ndarray, dev: np.ndarray, model: np.ndarray) -> np.ndarray:
        """F(n) for each row (node state): expected free milli unusable by the workload."""
        free = np.where(dev > 0, dev, 0)
        total = free.sum(axis=1).astype(np.float64)
        ge = (dev[:, :, None] >= self.dvals[None, None, :]).sum(axis=1)  # [B, D]
        below = (free[:, :, None] * (dev[:, :, None] < self.dvals[None, None, :])).sum(axis=1)
        acc = np.where(model[:, None] >= 0, self.m_access.T[np.maximum(model, 0)], False)  # [B, M]
        ok = acc & (cpu[:, None] >= self.m_cpu[None, :]) & (ge[:, self.m_di] >= self.m_k[None, :])
        frag_m = np.where(ok, below[:, self.m_di], total[:, None])
        return np.asarray(frag_m @ self.m_p)

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

    def _commit(self, n: int, i: int, devices: list[int]) -> None:
        self.cpu[n] -= self.p.cpu[i]
        self.mem[n] -= self.p.mem[i]
        for g in devices:
            self.dev[n, g] -= self.p.milli[i]
        self.allocated += int(self.p.ngpu[i] * self.p.milli[i])
        self.where[n].append(i)

    def place_bestfit(self, i: int) -> bool:
        nodes = self._feasible(i)
        if nodes.size == 0:
            return False
        gfree = np.where(self.dev[nodes] > 0, self.dev[nodes], 0).sum(axis=1)
        score = (
            0.5 * (self.cpu[nodes] - self.p.cpu[i]) / self.max_cpu
            + 0.5 * (gfree - self.p.ngpu[i] * self.p.milli[i]) / self.max_gpu
        )
        n = int(nodes[np.argmin(score)])
        self._commit(n, i, self._devices(n, i, None))
        return True

    def place_fgd(self, i: int) -> bool:
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
        delta = after - self.frag[cn]
        j = int(np.argmin(delta))
        n = int(cn[j])
        devices = [int(cd[j])] if cd[j] >= 0 else self._devices(n, i, None)
        self._commit(n, i, devices)
        self.frag[n] = self._frag(
            self.cpu[n : n + 1], self.dev[n : n + 1], self.c.model[n : n + 1]
        )[0]
        return True


def replay(
    cluster: Cluster, pods: Pods, order: np.ndarray, policy: str, keep: list[Replay] | None = None
) -> dict[str, float]:
    r = Replay(cluster, pods)
    if keep is not None:
        keep.append(r)
    place = r.place_fgd if policy == "fgd" else r.place_bestfit
    placed = 0
    for i in order:
        placed += place(int(i))
    return {
        "gpu_alloc_ratio": r.allocated / r.capacity,
        "placed": placed,
        "arrived": len(order),
        "arrived_gpu_ratio": float((pods.ngpu[order] * pods.milli[order]).sum()) / r.capacity,
    }
