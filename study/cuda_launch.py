"""Launch cubins on torch tensors through NVIDIA's cuda-python driver bindings (cuda.bindings.driver).

No torch C++ extension: the cubin is loaded with cuModuleLoad into torch's own (primary) context and
launched with cuLaunchKernel on torch's current stream, so kernels order correctly with torch work and
with the runner's CUDA events.  Every driver call's status is checked.
"""
from __future__ import annotations

import ctypes
import functools
import threading
from dataclasses import dataclass

import torch

from .cuda_build import NVCC_FLAGS, Cubin, arch_for_capability, build


class CudaLaunchError(RuntimeError):
    pass


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise CudaLaunchError("cuda-python is missing: pip install cuda-bindings (the GPU image has it)") from e
    return driver


def check(result, what: str):
    """cuda.bindings returns (CUresult, *values); raise on anything but CUDA_SUCCESS."""
    drv = _driver()
    err, *vals = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(err)
        _, text = drv.cuGetErrorString(err)
        raise CudaLaunchError(f"{what} failed: {name.decode() if name else err}: {text.decode() if text else ''}")
    return vals[0] if len(vals) == 1 else tuple(vals)


_lock = threading.Lock()


@functools.lru_cache(maxsize=None)
def _primary_context(device_index: int):
    drv = _driver()
    check(drv.cuInit(0), "cuInit")
    dev = check(drv.cuDeviceGet(device_index), "cuDeviceGet")
    return check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")


def device_arch(device: torch.device) -> str:
    major, minor = torch.cuda.get_device_capability(device)
    return arch_for_capability(major, minor)


@dataclass
class LoadedKernel:
    function: object
    cubin: Cubin
    entry: str


@functools.lru_cache(maxsize=None)
def _load(source: str, entry: str, device_index: int, max_dynamic_smem: int, flags: tuple[str, ...]) -> LoadedKernel:
    drv = _driver()
    with _lock:
        cubin = build(source, device_arch(torch.device("cuda", device_index)), flags)
        check(drv.cuCtxSetCurrent(_primary_context(device_index)), "cuCtxSetCurrent")
        module = check(drv.cuModuleLoad(str(cubin.path).encode()), f"cuModuleLoad({cubin.path.name})")
        fn = check(drv.cuModuleGetFunction(module, entry.encode()), f"cuModuleGetFunction({entry})")
        if max_dynamic_smem > 48 * 1024:  # above 48 KiB a kernel must opt in explicitly
            attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(drv.cuFuncSetAttribute(fn, attr, max_dynamic_smem), f"cuFuncSetAttribute({entry})")
    return LoadedKernel(fn, cubin, entry)


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def sm_count(device: torch.device) -> int:
    return _sm_count(_index(device))


def kernel(source: str, entry: str, device: torch.device, max_dynamic_smem: int = 0,
           flags: tuple[str, ...] = NVCC_FLAGS) -> LoadedKernel:
    return _load(str(source), entry, _index(device), max_dynamic_smem, tuple(flags))


_resident: dict[tuple, int] = {}


def resident_blocks(k: LoadedKernel, block: tuple[int, int, int], smem: int, cluster: int, device: torch.device) -> int:
    """How many blocks of a persistent kernel (clusters of `cluster` blocks, its __cluster_dims__) the GPU holds
    at once: more would wait for a free SM and serialize."""
    if cluster == 1:
        return sm_count(device)
    key = (str(k.cubin.path), k.entry, block, smem, cluster, _index(device))
    if key not in _resident:
        drv = _driver()
        cfg = drv.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = cluster, 1, 1
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
        cfg.sharedMemBytes = smem
        with torch.cuda.device(device):
            check(drv.cuCtxSetCurrent(_primary_context(_index(device))), "cuCtxSetCurrent")
            n = check(drv.cuOccupancyMaxActiveClusters(k.function, cfg), f"cuOccupancyMaxActiveClusters({k.entry})")
        _resident[key] = cluster * n
    return _resident[key]


# Python value -> ctypes type, by the kernel's C signature.  Pointers are passed as c_void_p of data_ptr().
# "tmap": a CUtensorMap (tensor_map_2d), passed by value: cuda.bindings copies the 128 bytes behind its getPtr().
CTYPES = {"int": ctypes.c_int, "i64": ctypes.c_longlong, "float": ctypes.c_float, "double": ctypes.c_double,
          "ptr": ctypes.c_void_p, "tmap": None}
_TMA_DTYPES = {1: "CU_TENSOR_MAP_DATA_TYPE_UINT8", 2: "CU_TENSOR_MAP_DATA_TYPE_UINT16", 4: "CU_TENSOR_MAP_DATA_TYPE_UINT32"}


def tensor_map_2d(t: torch.Tensor, box: tuple[int, int]):
    """A TMA descriptor of the row-major matrix t (rows may be padded) in boxes of box = (rows, cols), with the
    128-byte swizzle; elements outside t read as zeros.  The copy engine needs a 16-byte aligned start and row
    pitch (a single row's pitch is never used, so it is rounded up here)."""
    drv = _driver()
    rows, cols = t.shape
    esize = t.element_size()
    pitch = t.stride(0) * esize if rows > 1 else -(-cols * esize // 16) * 16
    if t.data_ptr() % 16 or pitch % 16 or t.stride(1) != 1:
        raise ValueError(f"a tensor map needs a row-major matrix with a 16-byte aligned start and pitch, got "
                         f"strides {t.stride()} at {t.data_ptr():#x}")
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    return check(drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType, _TMA_DTYPES[esize]), 2, t.data_ptr(), [u64(cols), u64(rows)], [u64(pitch)],
        [u32(box[1]), u32(box[0])], [u32(1), u32(1)], drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B, drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), "cuTensorMapEncodeTiled")


def launch(k: LoadedKernel, grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
           args: list[tuple[str, object]], device: torch.device) -> None:
    drv = _driver()
    values = tuple(a.data_ptr() if isinstance(a, torch.Tensor) else a for _, a in args)
    types = tuple(CTYPES[t] for t, _ in args)
    stream = torch.cuda.current_stream(device).cuda_stream
    with torch.cuda.device(device):
        check(drv.cuCtxSetCurrent(_primary_context(_index(device))), "cuCtxSetCurrent")
        check(drv.cuLaunchKernel(k.function, *grid, *block, smem, drv.CUstream(stream), (values, types), 0),
              f"cuLaunchKernel({k.entry})")
