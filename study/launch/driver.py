"""Load cubins and launch them on torch tensors, through NVIDIA's cuda.core.

cuda.core does the work: `ObjectCode.from_cubin` loads a cubin into torch's (primary) context, `Kernel.
arguments_info` reports an entry's real parameter list (the driver's cuFuncGetParamInfo), `Kernel.occupancy`
sizes a persistent grid, `StridedMemoryView.as_tensor_map` encodes a TMA descriptor, and `launch` runs the
kernel on torch's current stream (`Device.create_stream` wraps it), so kernels order correctly with torch
work and with the runner's CUDA events.  One call cuda.core lacks, opting a kernel into more than 48 KiB of
dynamic shared memory, is cuda.bindings' cuKernelSetAttribute on the kernel cuda.core loaded.

A launcher names every argument (`Param`).  When an entry is loaded, its declared parameters are checked
against the driver's list, count and size of each: a launcher that passes the wrong arguments fails there,
before any launch, instead of computing a silent wrong answer.  Every failure raises.
"""
from __future__ import annotations

import ctypes
import functools
import threading
from dataclasses import dataclass
from pathlib import Path

import torch

from study.launch.build import NVCC_FLAGS, Cubin, arch_for_capability, build


class CudaLaunchError(RuntimeError):
    pass


def _core():
    try:
        import cuda.core as core
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise CudaLaunchError("cuda.core is missing: pip install -e '.[gpu]' (the GPU image has it)") from e
    return core


# --- parameters ------------------------------------------------------------------------------------------------
# C type of a kernel parameter -> (its size in bytes, how a Python value is passed).  cuda.core takes ctypes
# scalars by their type and a Python int as a 64-bit pointer; a tensor map is its own TensorMapDescriptor.
CTYPES = {"int": (4, ctypes.c_int), "i64": (8, ctypes.c_longlong), "float": (4, ctypes.c_float),
          "double": (8, ctypes.c_double), "ptr": (8, None), "tmap": (128, None)}


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str          # a key of CTYPES

    def __post_init__(self):
        if self.ctype not in CTYPES:
            raise ValueError(f"parameter {self.name}: unknown C type {self.ctype!r}; known: {sorted(CTYPES)}")


def params(spec: str) -> tuple[Param, ...]:
    """A kernel's parameter list from its C signature written as "M:int N:int alpha:float A:ptr ..."."""
    return tuple(Param(*item.split(":")) for item in spec.split())


def _value(ctype: str, v):
    if ctype == "ptr":
        return v.data_ptr() if isinstance(v, torch.Tensor) else int(v)
    if ctype == "tmap":
        return v
    return CTYPES[ctype][1](v)


# --- loading ---------------------------------------------------------------------------------------------------
_lock = threading.Lock()
_current = threading.local()


def device_arch(device: torch.device) -> str:
    major, minor = torch.cuda.get_device_capability(device)
    return arch_for_capability(major, minor)


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def _set_current(index: int) -> None:
    """Make the device's primary context (torch's) current on this thread, once per thread and device."""
    if getattr(_current, "index", None) != index:
        _core().Device(index).set_current()
        _current.index = index


@dataclass(frozen=True)
class LoadedKernel:
    kernel: object                  # cuda.core Kernel
    cubin: Cubin
    entry: str
    params: tuple[Param, ...]
    names: frozenset
    smem: int                       # bytes of dynamic shared memory it is launched with

    @property
    def exports(self) -> dict[str, int]:
        return self.cubin.exports


def check_exports(source: str | Path, exports: dict[str, int], expect: dict[str, int]) -> None:
    """The facts a launcher declares must be what the kernel exports (STUDY_EXPORT)."""
    wrong = {k: (v, exports.get(k)) for k, v in expect.items() if exports.get(k) != v}
    if wrong:
        raise CudaLaunchError(f"{Path(source).name}: the launcher declares " + ", ".join(
            f"{k} = {v} where the kernel exports {e}" for k, (v, e) in wrong.items()))


def check_params(source: str | Path, entry: str, declared: tuple[Param, ...], sizes: list[int]) -> None:
    """The declared parameters must be the kernel's: as many, each of the size the driver reports (cuda.core's
    arguments_info on a GPU; the cubin's EIATTR_KPARAM_INFO records offline, study/launch/cubin_key.py)."""
    if sizes != [CTYPES[p.ctype][0] for p in declared]:
        raise CudaLaunchError(
            f"{entry} ({Path(source).name}) takes {len(sizes)} parameters of {sizes} bytes, but its launcher "
            f"declares {len(declared)}: {' '.join(f'{p.name}:{p.ctype}' for p in declared)}")


@functools.lru_cache(maxsize=None)
def _load(source: str, entry: str, device_index: int, flags: tuple[str, ...], declared: tuple[Param, ...],
          smem_fact: str, expect: tuple[tuple[str, int], ...]) -> LoadedKernel:
    core = _core()
    with _lock:
        cubin = build(source, device_arch(torch.device("cuda", device_index)), flags)
        check_exports(source, cubin.exports, dict(expect))
        if smem_fact and smem_fact not in cubin.exports:
            raise CudaLaunchError(f"{Path(source).name} exports no {smem_fact} (STUDY_ENTRY_FACTS)")
        max_dynamic_smem = cubin.exports[smem_fact] if smem_fact else 0
        _set_current(device_index)
        k = core.ObjectCode.from_cubin(str(cubin.path)).get_kernel(entry)
        check_params(source, entry, declared, [i.size for i in k.arguments_info])
        if max_dynamic_smem > 48 * 1024:  # above 48 KiB a kernel must opt in explicitly
            from cuda.bindings import driver as drv
            attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            err, = drv.cuKernelSetAttribute(attr, max_dynamic_smem, k.handle, device_index)
            if err != drv.CUresult.CUDA_SUCCESS:
                raise CudaLaunchError(f"cuKernelSetAttribute({entry}, {max_dynamic_smem} bytes of dynamic shared "
                                      f"memory) failed: {err.name}")
    return LoadedKernel(k, cubin, entry, declared, frozenset(p.name for p in declared), max_dynamic_smem)


def kernel(source: str | Path, entry: str, device: torch.device, declared: tuple[Param, ...], smem_fact: str = "",
           expect: dict[str, int] | None = None, flags: tuple[str, ...] = NVCC_FLAGS) -> LoadedKernel:
    """The entry `entry` of `source`, built for the device and loaded once, its parameters checked against
    `declared` and its exports against `expect`; launched with the dynamic shared memory it exports as
    `smem_fact` (none if empty)."""
    return _load(str(source), entry, _index(device), tuple(flags), tuple(declared), smem_fact,
                 tuple(sorted((expect or {}).items())))


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def sm_count(device: torch.device) -> int:
    return _sm_count(_index(device))


_streams: dict[tuple[int, int], object] = {}


def _stream(device: torch.device):
    """cuda.core's view of torch's current stream on `device` (made once per stream)."""
    ts = torch.cuda.current_stream(device)
    key = (_index(device), ts.cuda_stream)
    s = _streams.get(key)
    if s is None:
        s = _streams[key] = _core().Device(key[0]).create_stream(ts)
    return s


_resident: dict[tuple, int] = {}


def resident_blocks(k: LoadedKernel, block: tuple[int, int, int], smem: int, cluster: int, device: torch.device) -> int:
    """How many blocks of a persistent kernel (clusters of `cluster` blocks, its __cluster_dims__) the GPU holds
    at once: more would wait for a free SM and serialize."""
    if cluster == 1:
        return sm_count(device)
    key = (str(k.cubin.path), k.entry, block, smem, cluster, _index(device))
    if key not in _resident:
        core = _core()
        _set_current(_index(device))
        cfg = core.LaunchConfig(grid=cluster, block=block, shmem_size=smem)
        _resident[key] = cluster * k.kernel.occupancy.max_active_clusters(cfg, stream=_stream(device))
    return _resident[key]


# --- tensor maps -----------------------------------------------------------------------------------------------
_TMA_DTYPES = {1: "uint8", 2: "uint16", 4: "uint32"}     # the copy engine moves bytes: only the width matters


def tensor_map_2d(t: torch.Tensor, box: tuple[int, int]):
    """A TMA descriptor of the row-major matrix t (rows may be padded) in boxes of box = (rows, cols), with the
    128-byte swizzle and 256-byte L2 promotion (128 bytes, Triton's choice, measured no different for stage 14:
    docs/14_wgmma.md); elements outside t read as zeros.  The copy engine needs a 16-byte aligned start and row pitch (a
    single row's pitch is never used, so it is rounded up here)."""
    import numpy as np
    from cuda.core._tensor_map import TensorMapL2Promotion, TensorMapSwizzle   # not re-exported in cuda.core 1.2
    rows, cols = t.shape
    esize = t.element_size()
    if rows == 1:
        t = t.as_strided(t.shape, (-(-cols * esize // 16) * 16 // esize, 1))
    if t.data_ptr() % 16 or (t.stride(0) * esize) % 16 or t.stride(1) != 1:
        raise ValueError(f"a tensor map needs a row-major matrix with a 16-byte aligned start and pitch, got "
                         f"strides {t.stride()} at {t.data_ptr():#x}")
    view = _core().utils.StridedMemoryView.from_dlpack(t, stream_ptr=-1)
    return view.as_tensor_map(box, data_type=np.dtype(_TMA_DTYPES[esize]), swizzle=TensorMapSwizzle.SWIZZLE_128B,
                              l2_promotion=TensorMapL2Promotion.L2_256B)


# --- launching -------------------------------------------------------------------------------------------------
def prepared(k: LoadedKernel, grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
             args: dict[str, object], device: torch.device):
    """A launch of `k` with its arguments by name (every declared parameter, and nothing else), checked and
    packed once: calling the result launches it on the stream current at that time, with no other host work."""
    if args.keys() != k.names:
        raise CudaLaunchError(f"{k.entry}: arguments {sorted(args)} do not match its parameters "
                              f"{[p.name for p in k.params]}")
    core = _core()
    index = _index(device)
    config = core.LaunchConfig(grid=grid, block=block, shmem_size=smem)
    values = tuple(_value(p.ctype, args[p.name]) for p in k.params)

    def run():
        _set_current(index)
        core.launch(_stream(device), config, k.kernel, *values)
    return run


def launch(k: LoadedKernel, grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
           args: dict[str, object], device: torch.device) -> None:
    """One launch (see prepared)."""
    prepared(k, grid, block, smem, args, device)()
