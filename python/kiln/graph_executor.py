"""kiln.graph_executor: GraphModule, the Python face of a graph executor module (TVM's
tvm.contrib.graph_executor), and create() for the three-file form.

    gmod = GraphModule(lib["default"](kiln.cpu()))
    gmod.set_input("x", numpy_array)        # or set_input(0, ...), set_input(x=...)
    gmod.run()                              # or run(x=numpy_array)
    y = gmod.get_output(0).numpy()
"""
import json
from typing import Any, Dict, Optional, Tuple, Union

from . import _ffi
from ._ffi import BenchmarkResult, Device, Module, NDArray, ProfileReport
from .nd import array
from .runtime import get_global_func

__all__ = ["GraphModule", "create"]


def _as_array(value: Any) -> NDArray:
    return value if isinstance(value, NDArray) else array(value)


def create(graph_json_str: str, libmod: Module, device: Device) -> "GraphModule":
    """A GraphModule over a graph JSON and the library of its operators (e.g. mod.json and
    kiln.runtime.load_module("mod.so") of the three-file form); load its params with load_params."""
    return GraphModule(get_global_func("tvm.graph_executor.create")(graph_json_str, libmod, device))


class GraphModule:
    """Runs a graph executor module: lib["default"](kiln.cpu()), or
    lib["debug_create"]("default", kiln.cpu()) for the profiling executor.

    One GraphModule is used by one thread at a time; modules that share parameters may run
    concurrently in different threads."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self._set_input = module["set_input"]
        self._run = module["run"]
        self._get_output = module["get_output"]
        self._get_input = module["get_input"]
        self._get_num_outputs = module["get_num_outputs"]
        self._get_num_inputs = module["get_num_inputs"]
        self._get_input_index = module["get_input_index"]
        self._get_input_info = module["get_input_info"]
        self._get_output_info = module["get_output_info"]
        self._load_params = module["load_params"]
        self._share_params = module["share_params"]

    def set_input(self, key: Union[None, int, str] = None, value: Any = None, **params: Any) -> None:
        """Copies values into inputs: set_input("x", v), set_input(0, v) or set_input(x=v, y=w).
        A value is a kiln array or anything kiln.nd.array accepts (numpy arrays of any strides)."""
        if key is not None:
            if value is None:
                raise TypeError(f"set_input: no value given for input {key!r}")
            self._set_input(key, _as_array(value))
        for name, v in params.items():
            self._set_input(name, _as_array(v))

    def run(self, **input_dict: Any) -> None:
        """Sets the given inputs (as set_input(**input_dict)), then runs the graph."""
        if input_dict:
            self.set_input(**input_dict)
        self._run()

    def get_output(self, index: Union[int, str], out: Optional[NDArray] = None) -> NDArray:
        """Output `index`: a view of the executor's memory (valid until the next run), or copied
        into `out` when given. .numpy() makes a numpy copy."""
        if out is not None:
            self._get_output(index, out)
            return out
        return self._get_output(index)

    def get_input(self, index: Union[int, str], out: Optional[NDArray] = None) -> NDArray:
        """Input `index` (a view), or copied into `out`."""
        view = self._get_input(index)
        if out is not None:
            view.copyto(out)
            return out
        return view

    def get_num_outputs(self) -> int:
        """The number of outputs."""
        return self._get_num_outputs()

    def get_num_inputs(self) -> int:
        """The number of inputs, parameters included (as in TVM)."""
        return self._get_num_inputs()

    def get_input_index(self, name: str) -> int:
        """The index of the input `name`, or -1."""
        return self._get_input_index(name)

    def get_input_info(self) -> Tuple[Dict[str, Tuple[int, ...]], Dict[str, str]]:
        """(shapes, dtypes) of the inputs that are not parameters, by name."""
        info = json.loads(self._get_input_info())
        return {k: tuple(v) for k, v in info["shape"].items()}, dict(info["dtype"])

    def get_output_info(self) -> Tuple[Dict[str, Tuple[int, ...]], Dict[str, str]]:
        """(shapes, dtypes) of the outputs, by name."""
        info = json.loads(self._get_output_info())
        return {k: tuple(v) for k, v in info["shape"].items()}, dict(info["dtype"])

    def load_params(self, params_bytes: Union[bytes, bytearray]) -> None:
        """Copies the arrays of a params file (kiln.runtime.save_param_dict, relay.save_param_dict)
        into the inputs of those names and marks them parameters."""
        self._load_params(bytes(params_bytes))

    def share_params(self, other: "GraphModule", params_bytes: Union[bytes, bytearray]) -> None:
        """Makes the parameters named in `params_bytes` use `other`'s arrays (no copy)."""
        self._share_params(other.module, bytes(params_bytes))

    def set_num_threads(self, num_threads: int) -> None:
        """This module's thread count for its operators (0: the process's, from TVM_NUM_THREADS or
        the cores). Modules of different counts may run at once in different threads, as ONNX
        Runtime sessions of different intra_op_num_threads do."""
        self.module["set_num_threads"](num_threads)

    def get_num_threads(self) -> int:
        """This module's thread count (0: the process's)."""
        return self.module["get_num_threads"]()

    def benchmark(self, device: Optional[Device] = None, repeat: int = 5, number: int = 5,
                  min_repeat_ms: Optional[int] = None, end_to_end: bool = False, **kwargs: Any) -> BenchmarkResult:
        """Times whole runs: `repeat` measurements of the mean of `number` runs (after one warm-up
        run), each repeated with more runs until it lasts min_repeat_ms. Inputs given as keywords
        are set first; with end_to_end=True every timed run also copies them in and the outputs
        out. Returns a BenchmarkResult: mean, median, min, max, std and results, in seconds."""
        if device is not None and device.device_type != 1:
            raise ValueError(f"benchmark: kiln runs on the CPU, got device {device!r}")
        inputs = {name: _as_array(v) for name, v in kwargs.items()}
        return _ffi.benchmark(self.module, number, repeat, min_repeat_ms or 0, end_to_end, inputs)

    def profile(self, runs: int = 1) -> ProfileReport:
        """Runs the graph `runs` times timing every node, each node's time its median over the runs
        (the profiling executor's report): str() is the table, slowest first; .nodes, .total_us
        and .chrome_trace() give the details."""
        return _ffi.profile(self.module, runs)

    def __getitem__(self, key: str) -> Any:
        """A packed function of the executor module by name."""
        return self.module[key]
