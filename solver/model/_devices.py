"""GPU devices and the shares pods ask of them, in each sharing dialect's own words.

Pure functions of node labels/allocatable and pod requests/annotations, shared by the
snapshot (where running pods sit on devices), the device policy and the verifier (which
does its own accounting).

Units: a device's compute share in milli (1000 = the whole device), its memory in MiB.

**Devices of a node**: `nvidia.com/gpu` allocatable devices (else `koordinator.sh/gpu-core`
/ 100, as Koordinator's koordlet reports 100 per GPU); memory per device from the GPU
feature discovery label `nvidia.com/gpu.memory` (MiB), else `koordinator.sh/gpu-memory`
allocatable / devices; 0 = unknown (memory is then counted as the ratio of 1000 milli, and
memory asked in MiB is not checked). openb nodes: allocatable `alibabacloud.com/gpu-count`.

**Demand of a pod** (`device_demand`), first dialect that applies:

* Koordinator DeviceShare: requests `koordinator.sh/gpu-core` (percent of one GPU),
  `koordinator.sh/gpu-memory-ratio` (percent of its memory), `koordinator.sh/gpu-memory`
  (bytes), or `koordinator.sh/gpu` (both percents). Above 100 a percent must be a multiple
  of 100 and means that many whole GPUs (koordinator `pkg/scheduler/plugins/deviceshare`
  `validateCommonDeviceRequest`). Assignment: pod annotation
  `scheduling.koordinator.sh/device-allocated`, `{"gpu":[{"minor":1,"resources":
  {"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory":"11520Mi",
  "koordinator.sh/gpu-memory-ratio":"50"}}]}` (koordinator `apis/extension/device_share.go`
  `AnnotationDeviceAllocated`, `DeviceAllocations`; docs `fine-grained-device-scheduling`).
* Volcano / HAMi vGPU: requests `volcano.sh/vgpu-number` (devices), `volcano.sh/vgpu-memory`
  (MiB per device; unset = the whole memory), `volcano.sh/vgpu-cores` (percent per device).
  The assignment annotation `volcano.sh/vgpu-ids-new` names device UUIDs
  (`UUID,NVIDIA,<mem>,<cores>:` per device, `;` per container: volcano
  `pkg/scheduler/api/devices/nvidia/vgpu/utils.go` `encodeContainerDevices`), which gangplan's
  node model does not carry: the demand is placed and checked, the annotation not written.
* KAI scheduler: annotation `gpu-fraction` (0 < f ≤ 1 of one GPU, `gpu-fraction-num-devices`
  devices) or `gpu-memory` (MiB); the device index is the annotation `runai-gpu`
  (run-ai/fake-gpu-operator `internal/status-updater/common/constants/constants.go`
  `GpuIdxAnnotation`, `GpuFractionAnnotation`).
* Alibaba / openb (the FGD simulator, hkust-adsl/kubernetes-scheduler-simulator
  `pkg/type/const.go`): annotations `alibabacloud.com/gpu-milli` (milli per device) and
  `alibabacloud.com/gpu-count`; the assignment `alibabacloud.com/gpu-index`, device indices
  joined by `-` (`utils.GpuIndexAnnotation`).
* Whole GPUs: `nvidia.com/gpu: k` — k devices, each entirely free.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

from solver.json_limits import read_json
from solver.model._cluster import Node
from solver.model._workload import Pod
from solver.quantity import parse_quantity

__all__ = [
    "DEVICE_ANNOTATIONS",
    "GPU_RESOURCE",
    "WHOLE",
    "DeviceDemand",
    "DeviceError",
    "DeviceUse",
    "allocated_devices",
    "assignment_annotations",
    "device_demand",
    "node_devices",
]

WHOLE = 1000  # milli of one device
MIB = 1 << 20
MAX_DEVICE_MIB = 1 << 30  # 1 PiB: a device label beyond it is not a GPU's memory
GPU_RESOURCE = "nvidia.com/gpu"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
KOORD_CORE = "koordinator.sh/gpu-core"
KOORD_RATIO = "koordinator.sh/gpu-memory-ratio"
KOORD_MEMORY = "koordinator.sh/gpu-memory"
KOORD_SHARED = "koordinator.sh/gpu"
KOORD_ALLOCATED = "scheduling.koordinator.sh/device-allocated"
HAMI_NUMBER = "volcano.sh/vgpu-number"
HAMI_MEMORY = "volcano.sh/vgpu-memory"
HAMI_CORES = "volcano.sh/vgpu-cores"
KAI_FRACTION = "gpu-fraction"
KAI_DEVICES = "gpu-fraction-num-devices"
KAI_MEMORY = "gpu-memory"
KAI_INDEX = "runai-gpu"
OPENB_MILLI = "alibabacloud.com/gpu-milli"
OPENB_COUNT = "alibabacloud.com/gpu-count"
OPENB_INDEX = "alibabacloud.com/gpu-index"

DEVICE_ANNOTATIONS = (
    KOORD_ALLOCATED,
    KAI_FRACTION,
    KAI_DEVICES,
    KAI_MEMORY,
    KAI_INDEX,
    OPENB_MILLI,
    OPENB_COUNT,
    OPENB_INDEX,
)
"""Pod annotations the device model reads (a snapshot keeps them raw for the verifier)."""

Dialect = Literal["whole", "koordinator", "hami", "kai", "openb"]


class DeviceError(ValueError):
    """A device request the dialect's own scheduler would reject."""


@dataclass(frozen=True)
class DeviceDemand:
    """`devices` distinct GPUs of one node, each giving `core` milli of compute and memory
    `memory_mib` + `memory_ratio`/1000 of its total."""

    dialect: Dialect
    devices: int
    core: int
    memory_ratio: int = 0
    memory_mib: int = 0

    @property
    def fractional(self) -> bool:
        return self.core < WHOLE or self.memory_ratio < WHOLE

    @property
    def sharing(self) -> bool:
        """Asked the device-sharing way (any dialect but plain `nvidia.com/gpu`): its GPU use
        is not a plain `nvidia.com/gpu` request, so only the device model sees it."""
        return self.dialect != "whole"

    def memory_on(self, total_mib: int) -> int:
        """Memory taken on a device of `total_mib` MiB; on a device of unknown memory
        (`total_mib` 0) the ratio in milli of a capacity of 1000 (MiB asks go unchecked)."""
        if total_mib <= 0:
            return self.memory_ratio
        return self.memory_mib + self.memory_ratio * total_mib // WHOLE

    @property
    def share(self) -> int:
        """Milli-GPUs the pod holds in all (what a quota counts): devices × compute share,
        or its memory share when it asks for memory only."""
        return self.devices * (self.core or self.memory_ratio)


@dataclass(frozen=True)
class DeviceUse:
    """One device a running pod holds: index, compute milli, memory ratio milli, MiB."""

    index: int
    core: int
    memory_ratio: int = 0
    memory_mib: int = 0


MAX_DEVICES_PER_NODE = 4096
"""More GPU devices than any node holds: each device is a row of the device table."""


def device_count_problem(allocatable: Mapping[str, int]) -> tuple[str, str] | None:
    """(resource, why) when a node's allocatable claims more devices than any node holds."""
    for resource, per_device in ((GPU_RESOURCE, 1), (KOORD_CORE, 100), (OPENB_COUNT, 1)):
        if allocatable.get(resource, 0) > MAX_DEVICES_PER_NODE * per_device:
            return resource, (
                f"more than {MAX_DEVICES_PER_NODE} GPU devices on one node: {allocatable[resource]}"
            )
    return None


def device_memory_label(node: Node) -> int | None:
    """The node's `nvidia.com/gpu.memory` (MiB per device); None when it is absent or not
    a device's memory (not ASCII digits, or beyond MAX_DEVICE_MIB)."""
    label = node.labels.get(GPU_MEMORY_LABEL, "")
    if label.isascii() and label.isdigit() and int(label) <= MAX_DEVICE_MIB:
        return int(label)
    return None


def node_devices(node: Node) -> tuple[int, int]:
    """(GPU devices, MiB per device — 0 when unknown) of a node."""
    alloc = node.allocatable
    count = (
        alloc.get(GPU_RESOURCE, 0) or alloc.get(KOORD_CORE, 0) // 100 or alloc.get(OPENB_COUNT, 0)
    )
    if count <= 0:
        return 0, 0
    memory = 0
    if (label := device_memory_label(node)) is not None:
        memory = label
    elif alloc.get(KOORD_MEMORY, 0) > 0:
        memory = alloc[KOORD_MEMORY] // MIB // count
    return int(count), memory


def _percent(resource: str, value: int) -> tuple[int, int]:
    """(devices, milli per device) of a Koordinator percent request."""
    if value > 100:
        if value % 100:
            raise DeviceError(f"{resource}: {value} above 100 must be a multiple of 100")
        return value // 100, WHOLE
    return 1, value * 10


def _number(text: str, what: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise DeviceError(f"annotation {what}: not a number: {text!r}") from None
    if not value.is_finite():
        raise DeviceError(f"annotation {what}: not a number: {text!r}")
    return value


def _whole_count(text: str, what: str) -> int:
    value = _number(text, what)
    if value != value.to_integral_value() or value < 1:
        raise DeviceError(f"annotation {what}: must be a positive integer, got {text!r}")
    return int(value)


def _koordinator(requests: Mapping[str, int]) -> DeviceDemand | None:
    shared = requests.get(KOORD_SHARED, 0)
    core = requests.get(KOORD_CORE, 0) or shared
    ratio = requests.get(KOORD_RATIO, 0) or shared
    memory = requests.get(KOORD_MEMORY, 0)
    if not (core or ratio or memory):
        return None
    devices, core_milli = _percent(KOORD_CORE, core) if core else (1, 0)
    ratio_devices, ratio_milli = _percent(KOORD_RATIO, ratio) if ratio else (devices, 0)
    if core and ratio and ratio_devices != devices:
        raise DeviceError(f"{KOORD_CORE} {core} and {KOORD_RATIO} {ratio} name different GPUs")
    mib = -(-memory // MIB) // max(devices, 1) if memory and not ratio else 0
    return DeviceDemand("koordinator", max(devices, ratio_devices), core_milli, ratio_milli, mib)


def _hami(requests: Mapping[str, int]) -> DeviceDemand | None:
    number = requests.get(HAMI_NUMBER, 0)
    if number <= 0:
        return None
    cores = requests.get(HAMI_CORES, 0)
    if cores > 100:
        raise DeviceError(f"{HAMI_CORES}: {cores} is above 100 percent of one GPU")
    memory = requests.get(HAMI_MEMORY, 0)
    return DeviceDemand("hami", number, cores * 10, 0 if memory else WHOLE, memory)


def _kai(annotations: Mapping[str, str]) -> DeviceDemand | None:
    fraction = annotations.get(KAI_FRACTION)
    memory = annotations.get(KAI_MEMORY)
    if fraction is None and memory is None:
        return None
    devices = _whole_count(annotations.get(KAI_DEVICES, "1"), KAI_DEVICES)
    if fraction is not None:
        value = _number(fraction, KAI_FRACTION)
        if not 0 < value <= 1:
            raise DeviceError(f"annotation {KAI_FRACTION}: must be in (0, 1], got {fraction!r}")
        milli = max(1, int(value * WHOLE))
        return DeviceDemand("kai", devices, milli, milli)
    mib = _whole_count(memory or "", KAI_MEMORY)
    return DeviceDemand("kai", devices, 0, 0, mib)


def _openb(annotations: Mapping[str, str]) -> DeviceDemand | None:
    milli = annotations.get(OPENB_MILLI)
    if milli is None:
        return None
    value = _whole_count(milli, OPENB_MILLI)
    if value > WHOLE:
        raise DeviceError(f"annotation {OPENB_MILLI}: {value} is above 1000 milli of one GPU")
    count = _whole_count(annotations.get(OPENB_COUNT, "1"), OPENB_COUNT)
    return DeviceDemand("openb", count, value, value)


def device_demand(
    requests: Mapping[str, int], annotations: Mapping[str, str]
) -> DeviceDemand | None:
    """What a pod asks of GPU devices (None: no GPU); DeviceError when the request is invalid."""
    for found in (
        _koordinator(requests),
        _hami(requests),
        _kai(annotations),
        _openb(annotations),
    ):
        if found is not None:
            return found
    whole = requests.get(GPU_RESOURCE, 0)
    return DeviceDemand("whole", whole, WHOLE, WHOLE) if whole > 0 else None


def _indices(text: str, sep: str) -> list[int]:
    return [int(part) for part in text.strip().split(sep) if part.strip().isdigit()]


def allocated_devices(annotations: Mapping[str, str]) -> tuple[DeviceUse, ...] | None:
    """The devices a bound pod holds, as its dialect recorded them; None when not recorded
    (or unreadable)."""
    text = annotations.get(KOORD_ALLOCATED)
    if text:
        try:
            value = read_json(text)
            out = []
            for entry in value.get("gpu") or []:
                res = entry.get("resources") or {}
                core = int(res.get(KOORD_CORE, 0)) * 10
                ratio = int(res.get(KOORD_RATIO, 0)) * 10
                mib = 0 if ratio else math.ceil(parse_quantity(str(res.get(KOORD_MEMORY, 0))) / MIB)
                out.append(DeviceUse(int(entry["minor"]), core, ratio, mib))
            return tuple(out)
        except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError):
            return None
    try:
        kai = annotations.get(KAI_INDEX)
        demand = _kai(annotations)
        if kai and demand is not None:
            return tuple(
                DeviceUse(i, demand.core, demand.memory_ratio, demand.memory_mib)
                for i in _indices(kai, ",")
            )
        openb = annotations.get(OPENB_INDEX)
        demand = _openb(annotations)
        if openb and demand is not None:
            return tuple(
                DeviceUse(i, demand.core, demand.memory_ratio) for i in _indices(openb, "-")
            )
    except DeviceError:
        return None
    return None


def assignment_annotations(
    demand: DeviceDemand, indices: tuple[int, ...], memory_mib: int
) -> dict[str, str]:
    """The annotation the dialect's device plugin reads for a pod given `indices` on a node
    whose devices have `memory_mib` each ({} for dialects gangplan cannot write)."""
    if demand.dialect == "koordinator":
        resources = {
            KOORD_CORE: str(demand.core // 10),
            KOORD_MEMORY: f"{demand.memory_on(memory_mib)}Mi",
            KOORD_RATIO: str(demand.memory_ratio // 10),
        }
        if not demand.memory_ratio:
            del resources[KOORD_RATIO]
        gpu = [{"minor": i, "resources": resources} for i in indices]
        return {KOORD_ALLOCATED: json.dumps({"gpu": gpu}, separators=(",", ":"))}
    if demand.dialect == "kai":
        return {KAI_INDEX: ",".join(str(i) for i in indices)}
    if demand.dialect == "openb":
        return {OPENB_INDEX: "-".join(str(i) for i in indices)}
    return {}


# ---------------------------------------------------------------------------- quota shares

GPU_MILLI = "nvidia.com/gpu-milli"
"""The quota dimension `nvidia.com/gpu` becomes while GPU shares are in play: milli-GPUs."""
SHARE_RESOURCES = (GPU_RESOURCE, KOORD_CORE, KOORD_RATIO, KOORD_MEMORY, KOORD_SHARED, HAMI_NUMBER)
REFERENCE_MEMORY_MIB = 81920
"""A share asked in MiB only counts as that part of an 80 GiB GPU in quotas (a quota does
not know which node, hence which device size, the pod lands on)."""


def gpu_milli(requests: Mapping[str, int], annotations: Mapping[str, str]) -> tuple[int, bool]:
    """(milli-GPUs the pod holds, whether it asks the device-sharing way): its compute
    share, else its memory share — never 0 for a GPU pod, never a whole device for a share."""
    try:
        demand = device_demand(requests, annotations)
    except DeviceError:
        demand = None
    if demand is None:
        return requests.get(GPU_RESOURCE, 0) * WHOLE, False
    per = demand.core or demand.memory_ratio
    if not per:
        per = min(WHOLE, max(1, demand.memory_mib * WHOLE // REFERENCE_MEMORY_MIB))
    return demand.devices * per, demand.sharing


def any_sharing(pods: Iterable[Pod]) -> bool:
    """Some pod asks for GPUs the device-sharing way (an invalid request does not count)."""
    seen: set[tuple[int, int]] = set()
    for pod in pods:
        maps = (id(pod.requests), id(pod.annotations))  # a gang's members share theirs
        if maps in seen:
            continue
        seen.add(maps)
        try:
            demand = device_demand(pod.requests, pod.annotations)
        except DeviceError:
            continue
        if demand is not None and demand.sharing:
            return True
    return False


def in_gpu_milli(resources: Mapping[str, int], unlimited: int) -> dict[str, int]:
    """A quota map with `nvidia.com/gpu` counted in milli-GPUs under `GPU_MILLI`."""
    out = {r: v for r, v in resources.items() if r != GPU_RESOURCE}
    if GPU_RESOURCE in resources:
        value = resources[GPU_RESOURCE]
        out[GPU_MILLI] = value if value >= unlimited else min(value * WHOLE, unlimited)
    return out
