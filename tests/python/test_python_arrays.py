"""kiln.nd arrays: numpy copies in and out (every dtype numpy shares with kiln, any strides),
zero-copy DLPack exchange with numpy and PyTorch in both directions, lifetimes, and the rejection
of tensors kiln cannot read as they are (non-contiguous, consumed capsules). The PyTorch tests are
skipped, and counted as skipped, where PyTorch is not installed."""
import gc

import numpy as np
import pytest

import kiln
from python_api_models import W, dense_relu, needs_torch, torch

DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16", "bool"]


def sample(shape, dtype):
    values = np.arange(int(np.prod(shape))).reshape(shape) - 3
    return (values % 2 == 0) if dtype == "bool" else values.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3, 4)])
def test_numpy_round_trip(shape, dtype):
    x = sample(shape, dtype)
    a = kiln.nd.array(x)
    assert a.shape == shape and a.dtype == dtype and a.device == kiln.cpu()
    assert a.nbytes == x.nbytes
    y = a.numpy()
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("view", ["transposed", "strided", "reversed", "fortran", "broadcast"])
def test_non_contiguous_numpy_is_copied_correctly(view):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = {"transposed": base.T, "strided": base[:, ::2], "reversed": base[::-1], "fortran": np.asfortranarray(base),
         "broadcast": np.broadcast_to(base[:1], (3, 6))}[view]
    np.testing.assert_array_equal(kiln.nd.array(x).numpy(), x)
    if not x.flags.c_contiguous:
        with pytest.raises((kiln.KilnError, BufferError)):
            kiln.nd.from_dlpack(x)  # rejected, never misread


def test_array_accepts_lists_scalars_kiln_arrays_and_copies():
    np.testing.assert_array_equal(kiln.nd.array([[1.5, 2.5]]).numpy(), [[1.5, 2.5]])
    x = np.ones(3, np.float32)
    copied = kiln.nd.array(x)
    x[0] = 5
    assert copied.numpy()[0] == 1
    assert kiln.nd.array(np.float32(3)).shape == ()
    a = kiln.nd.array(np.ones(3, np.float32))
    b = kiln.nd.array(a)
    a.copyfrom(np.zeros(3, np.float32))
    np.testing.assert_array_equal(b.numpy(), np.ones(3))
    c = kiln.nd.empty((3,), "float32")
    b.copyto(c)
    np.testing.assert_array_equal(c.numpy(), np.ones(3))
    assert c.copyfrom(a) is c and not c.numpy().any()
    assert repr(c) == "<kiln.nd.NDArray float32[3]>"


def test_array_errors():
    with pytest.raises(kiln.KilnError, match="'complex64' is not a dtype"):
        kiln.nd.array(np.zeros(2, np.complex64))
    with pytest.raises(kiln.KilnError, match="bfloat16 has no numpy equivalent"):
        kiln.nd.empty((2,), "bfloat16").numpy()
    with pytest.raises(kiln.KilnError, match="'float33' is not a dtype"):
        kiln.nd.empty((2,), "float33")
    with pytest.raises(kiln.KilnError, match="shape"):
        kiln.nd.empty((3,)).copyfrom(np.zeros(4, np.float32))
    with pytest.raises(kiln.KilnError):
        kiln.nd.empty((2,), device=kiln.Device(2, 0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_dlpack_numpy_is_zero_copy(dtype):
    x = sample((2, 3), dtype)
    a = kiln.nd.from_dlpack(x)
    assert a.shape == (2, 3) and a.dtype == dtype
    np.testing.assert_array_equal(a.numpy(), x)
    x[0, 0] = not x[0, 0] if dtype == "bool" else 42
    assert a.numpy()[0, 0] == x[0, 0]  # shares x's memory


def test_numpy_from_kiln_is_zero_copy_and_keeps_the_array_alive():
    a = kiln.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert a.__dlpack_device__() == (1, 0)
    y = np.from_dlpack(a)  # numpy marks it read-only (DLPack before 1.0 has no such flag)
    a.copyfrom(np.array([[0, 1, 2], [3, 4, -1]], np.float32))
    assert y[1, 2] == -1  # shares a's memory
    del a
    gc.collect()
    np.testing.assert_array_equal(y, [[0, 1, 2], [3, 4, -1]])


def test_kiln_keeps_numpy_memory_alive():
    x = np.arange(1000, dtype=np.float64)
    a = kiln.nd.from_dlpack(x)
    del x
    gc.collect()
    np.testing.assert_array_equal(a.numpy(), np.arange(1000))


@needs_torch
@pytest.mark.parametrize("dtype_name", ["float32", "float64", "int64", "int32", "uint8", "int8"])
def test_torch_round_trip_is_zero_copy(dtype_name):
    dtype = getattr(torch, dtype_name)
    t = torch.arange(12).reshape(3, 4).to(dtype)
    a = kiln.nd.from_dlpack(t)
    assert a.shape == (3, 4)
    t[0, 1] = 7
    assert a.numpy()[0, 1] == 7
    back = torch.utils.dlpack.from_dlpack(a)
    back[2, 3] = 5
    assert t[2, 3] == 5 and back.dtype == dtype
    from_capsule = kiln.nd.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    np.testing.assert_array_equal(from_capsule.numpy(), t.numpy())


def test_non_contiguous_numpy_is_rejected_by_from_dlpack():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for view in (x.T, x[:, ::2], x[::2, 1:]):
        with pytest.raises(kiln.KilnError, match="not compact"):
            kiln.nd.from_dlpack(view)
        np.testing.assert_array_equal(kiln.nd.array(view).numpy(), view)  # a copy reads right


@needs_torch
def test_torch_non_contiguous_is_rejected():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    for view in (t.T, t[:, ::2], torch.zeros(4, 1).expand(4, 3)):
        with pytest.raises(kiln.KilnError, match="not compact"):
            kiln.nd.from_dlpack(view)
        np.testing.assert_array_equal(kiln.nd.array(view.contiguous()).numpy(), view.numpy())
    sliced = t[1:2]  # a contiguous slice with an offset reads right
    np.testing.assert_array_equal(kiln.nd.from_dlpack(sliced).numpy(), [[4, 5, 6, 7]])
    np.testing.assert_array_equal(kiln.nd.from_dlpack(np.arange(10.0)[3:6]).numpy(), [3, 4, 5])


def test_dlpack_errors():
    capsule = np.zeros(3).__dlpack__()
    kiln.nd.from_dlpack(capsule)
    with pytest.raises(ValueError, match="already consumed"):
        kiln.nd.from_dlpack(capsule)
    with pytest.raises(TypeError, match="from_dlpack expects"):
        kiln.nd.from_dlpack([1, 2, 3])
    unused = kiln.nd.array(np.ones(2)).__dlpack__()  # never consumed: freed by the capsule
    del unused
    gc.collect()


def test_graph_executor_with_dlpack_inputs_and_outputs():
    mod, params = kiln.frontend.from_onnx(dense_relu(2))
    gmod = kiln.graph_executor.GraphModule(kiln.build(mod, params=params)["default"](kiln.cpu()))
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    gmod.run(x=kiln.nd.from_dlpack(x))
    y = np.from_dlpack(gmod.get_output(0))  # a view of the executor's output buffer
    np.testing.assert_allclose(y, np.maximum(x @ W, 0), rtol=1e-5, atol=1e-6)
    gmod.run(x=np.zeros((2, 4), np.float32))
    assert not y.any()  # the view shows the new run's output


@needs_torch
def test_graph_executor_with_torch_inputs_and_outputs():
    mod, params = kiln.frontend.from_onnx(dense_relu(2))
    gmod = kiln.graph_executor.GraphModule(kiln.build(mod, params=params)["default"](kiln.cpu()))
    x = torch.randn(2, 4)
    gmod.run(x=kiln.nd.from_dlpack(x))
    y = torch.utils.dlpack.from_dlpack(gmod.get_output(0))  # a view of the executor's output buffer
    np.testing.assert_allclose(y.numpy(), np.maximum(x.numpy() @ W, 0), rtol=1e-5, atol=1e-6)
    gmod.run(x=torch.zeros(2, 4))  # a torch tensor is copied in like a numpy array
    assert not y.any()  # the view shows the new run's output
