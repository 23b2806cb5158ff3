"""A kiln library loaded from its bytes, as one kiln.serve replica holds it: the bytes (which reach
the replica through Ray, not through a shared file system) go to a temporary file of the replica's
own, which kiln's runtime loads; the file is removed once loaded. The runtime's checks apply at
load, so a library built for instructions this node's CPU lacks is refused here with the runtime's
message. run() takes one request's inputs at the library's fixed shapes."""
import os
import tempfile
from typing import Dict, Union

import numpy as np

from .. import KilnError
from ..graph_executor import GraphModule
from ..runtime import cpu, load_module
from .protocol import Signature, TensorSpec

__all__ = ["LibraryLoadError", "LoadedModel"]


class LibraryLoadError(RuntimeError):
    """A library that this node cannot serve (damaged, not a kiln library, built for instructions
    this CPU lacks, or with tensors the protocol cannot carry)."""


class LoadedModel:
    """One graph executor over a library given as bytes. Used by one thread at a time."""

    def __init__(self, library: Union[bytes, bytearray], name: str, num_threads: int = 0) -> None:
        self.name = name
        descriptor, path = tempfile.mkstemp(prefix="kiln-serve-", suffix=".so")
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(library)
            try:
                module = load_module(path)
                self.executor = GraphModule(module["default"](cpu()))
            except KilnError as e:
                raise LibraryLoadError(f"model '{name}': kiln cannot load this library on "
                                       f"{os.uname().nodename}: {e}") from None
        finally:
            os.unlink(path)
        if num_threads > 0:
            self.executor.set_num_threads(num_threads)
        # Outputs are output_0, output_1, ... (as `kiln run`, tvmc and kiln's Triton backend name them).
        shapes, dtypes = self.executor.get_input_info()
        outputs = [self.executor.get_output(i) for i in range(self.executor.get_num_outputs())]
        try:
            self.signature = Signature([TensorSpec(n, dtypes[n], shape) for n, shape in shapes.items()],
                                       [TensorSpec(f"output_{i}", out.dtype, out.shape) for i, out in enumerate(outputs)])
        except ValueError as e:
            raise LibraryLoadError(f"model '{name}': {e}") from None

    def run(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """The outputs {name: numpy array} for inputs of the library's names, dtypes and shapes."""
        for name, value in inputs.items():
            self.executor.set_input(name, np.ascontiguousarray(value))
        self.executor.run()
        return {spec.name: self.executor.get_output(index).numpy()
                for index, spec in enumerate(self.signature.outputs)}
