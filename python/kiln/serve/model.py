"""A kiln library loaded from its bytes, as one kiln.serve replica holds it: the bytes (which reach
the replica through Ray, not through a shared file system) go to a temporary file of the replica's
own, which kiln's runtime loads; the file is removed once loaded. The runtime's checks apply at
load, so a library built for instructions this node's CPU lacks is refused here with the runtime's
message. run_many() runs the requests of a batch: a library of fixed shapes runs them one after
another; a library with a batch dimension (kiln compile --dims N=MIN..MAX) runs their samples
together, as many as it takes per run."""
import json
import os
import tempfile
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from .. import KilnError
from ..graph_executor import GraphModule
from ..runtime import cpu, load_module
from .protocol import BatchDim, Signature, TensorSpec

__all__ = ["LibraryLoadError", "LoadedModel"]

Inputs = Dict[str, np.ndarray]


class LibraryLoadError(RuntimeError):
    """A library that this node cannot serve (damaged, not a kiln library, built for instructions
    this CPU lacks, or with tensors the protocol cannot carry)."""


class LoadedModel:
    """One graph executor over a library given as bytes. Used by one thread at a time. `runs`
    counts the library's runs."""

    def __init__(self, library: Union[bytes, bytearray], name: str, num_threads: int = 0) -> None:
        self.name = name
        self.runs = 0
        descriptor, path = tempfile.mkstemp(prefix="kiln-serve-", suffix=".so")
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(library)
            try:
                module = load_module(path)
                self.executor = GraphModule(module["default"](cpu()))
                graph = json.loads(module["get_graph_json"]())
            except KilnError as e:
                raise LibraryLoadError(f"model '{name}': kiln cannot load this library on "
                                       f"{os.uname().nodename}: {e}") from None
        finally:
            os.unlink(path)
        if num_threads > 0:
            self.executor.set_num_threads(num_threads)
        # The graph's "kiln_batch_dim" attribute: ["list_str", [name, smallest, largest]].
        batch_attr = graph.get("attrs", {}).get("kiln_batch_dim")
        batch = BatchDim(batch_attr[1][0], int(batch_attr[1][1]), int(batch_attr[1][2])) if batch_attr else None
        # Outputs are output_0, output_1, ... (as `kiln run`, tvmc and kiln's Triton backend name them).
        shapes, dtypes = self.executor.get_input_info()
        out_shapes, out_dtypes = self.executor.get_output_info()
        num_outputs = self.executor.get_num_outputs()
        try:
            inputs = [TensorSpec(n, dtypes[n], shape, batch) for n, shape in shapes.items()]
            if batch is not None and len(out_shapes) == num_outputs:  # -1 on axis 0: the batch
                outputs = [TensorSpec(f"output_{i}", out_dtypes[n], shape, batch)
                           for i, (n, shape) in enumerate(out_shapes.items())]
            elif batch is not None:
                raise ValueError("two of its outputs are one tensor, which kiln.serve cannot split by request")
            else:  # fixed shapes: the output arrays' own
                arrays = [self.executor.get_output(i) for i in range(num_outputs)]
                outputs = [TensorSpec(f"output_{i}", a.dtype, a.shape) for i, a in enumerate(arrays)]
            self.signature = Signature(inputs, outputs, batch)
        except ValueError as e:
            raise LibraryLoadError(f"model '{name}': {e}") from None
        # Requests are run together only when every input holds the batch (no input to agree on).
        self._joins = batch is not None and all(spec.batch for spec in inputs)

    def run(self, inputs: Inputs) -> Dict[str, np.ndarray]:
        """The outputs {name: numpy array} of one run on inputs the signature accepts."""
        for name, value in inputs.items():
            self.executor.set_input(name, np.ascontiguousarray(value))
        self.executor.run()
        self.runs += 1
        return {spec.name: self.executor.get_output(index).numpy()
                for index, spec in enumerate(self.signature.outputs)}

    def run_many(self, requests: List[Inputs]) -> List[Tuple[bool, Any]]:
        """(True, outputs) or (False, error message) per request, in order."""
        results: List[Tuple[bool, Any]] = []
        for group in self._groups(requests):
            if len(group) == 1:
                results.append(self._run_alone(group[0]))
                continue
            try:
                joined = self.run({n: np.concatenate([r[n] for r in group]) for n in group[0]})
            except Exception:  # noqa: BLE001 (each request again alone, so that an error is its own)
                results.extend(self._run_alone(r) for r in group)
                continue
            samples = np.array([self._samples(r) for r in group])
            ends = np.cumsum(samples)[:-1]
            # An output may hold several rows per sample ("16*N"): split at sample boundaries.
            parts = {spec.name: np.split(joined[spec.name], ends * (joined[spec.name].shape[0] // samples.sum()))
                     if spec.batch else None for spec in self.signature.outputs}
            for k in range(len(group)):
                results.append((True, {n: parts[n][k] if parts[n] is not None else joined[n].copy()
                                       for n in joined}))
        return results

    def _samples(self, inputs: Inputs) -> int:
        return next(iter(inputs.values())).shape[0]

    def _groups(self, requests: List[Inputs]) -> List[List[Inputs]]:
        """Consecutive requests whose samples together fit one run (one request per group without
        a batch dimension)."""
        if not self._joins:
            return [[r] for r in requests]
        groups: List[List[Inputs]] = []
        total: Optional[int] = None
        for inputs in requests:
            samples = self._samples(inputs)
            if total is not None and total + samples <= self.signature.batch.largest:
                groups[-1].append(inputs)
                total += samples
            else:
                groups.append([inputs])
                total = samples
        return groups

    def _run_alone(self, inputs: Inputs) -> Tuple[bool, Any]:
        try:
            return True, self.run(inputs)
        except Exception as e:  # noqa: BLE001 (inputs were checked: a failure is the server's, and this request's)
            return False, str(e) if isinstance(e, KilnError) else f"{type(e).__name__}: {e}"
