"""kiln.nd: n-dimensional arrays (TVM's tvm.nd). kiln.nd.array copies from numpy (or anything numpy
accepts); kiln.nd.from_dlpack and NDArray.__dlpack__ share memory with numpy, PyTorch and other
DLPack users without copying."""
from typing import Any, Optional, Sequence

from . import _ffi
from ._ffi import Device, NDArray

__all__ = ["NDArray", "array", "empty", "from_dlpack"]


def _device(device: Optional[Device]) -> Device:
    return Device(1, 0) if device is None else device


def array(value: Any, device: Optional[Device] = None) -> NDArray:
    """A new kiln array holding a copy of `value`: a kiln NDArray, a numpy array (any strides: a
    non-contiguous array is made contiguous first), or anything numpy.asarray accepts. The dtype
    is kept (float32, int64, bool, ...)."""
    if isinstance(value, NDArray):
        copy = _ffi.empty(list(value.shape), value.dtype, _device(device))
        return copy.copyfrom(value)
    return _ffi.array_from_numpy(value, _device(device))


def empty(shape: Sequence[int], dtype: str = "float32", device: Optional[Device] = None) -> NDArray:
    """An uninitialised array (64-byte aligned)."""
    return _ffi.empty([int(d) for d in shape], dtype, _device(device))


def from_dlpack(value: Any) -> NDArray:
    """A zero-copy kiln array over the memory of `value`: an object with __dlpack__ (numpy array,
    torch tensor, kiln NDArray) or a DLPack capsule. The memory stays alive while the kiln array
    does. Non-contiguous tensors and tensors not on the CPU raise KilnError (nothing is misread);
    copy them first (numpy.ascontiguousarray, tensor.contiguous()) or use kiln.nd.array."""
    return _ffi.array_from_dlpack(value)
