"""The Open Inference Protocol (KServe v2) over REST, as kiln.serve speaks it: infer requests parsed
and checked against a model's signature (JSON tensors and the binary tensor data extension, whose
JSON header's length comes in the Inference-Header-Content-Length header), and answers encoded the
same way. Plain Python and numpy, no server: kiln.serve.app calls it from its FastAPI routes.

Every check that concerns a tensor's size is made against the model before anything is allocated
from what the request declares: a shape is compared with the model's first (a library with a batch
dimension takes any number of samples in its range along axis 0), so a declared shape of 2^40
elements costs nothing. Problems raise ProtocolError, whose status (400, 404) and message the
server sends back as {"error": message}."""
import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

__all__ = ["HEADER_LENGTH", "BatchDim", "ProtocolError", "Signature", "TensorSpec", "encode_response",
           "parse_request"]

# The binary tensor data extension's HTTP header: the length of the JSON part of the body.
HEADER_LENGTH = "Inference-Header-Content-Length"

# kiln's dtypes and the protocol's datatypes, both ways.
_DATATYPES = {
    "bool": "BOOL", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
    "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
    "float16": "FP16", "float32": "FP32", "float64": "FP64",
}


class ProtocolError(Exception):
    """A request the server refuses: `status` is the HTTP status of the answer (4xx)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class BatchDim:
    """A library's batch dimension (kiln compile --dims N=MIN..MAX): axis 0 of the tensors that
    hold samples takes any number from `smallest` to `largest`."""

    def __init__(self, name: str, smallest: int, largest: int) -> None:
        self.name, self.smallest, self.largest = name, smallest, largest


class TensorSpec:
    """One input or output of a model: its name, kiln dtype, protocol datatype and shape; with
    `batch`, axis 0 (-1 in `shape`, as the protocol marks a variable dimension) is the batch."""

    def __init__(self, name: str, dtype: str, shape: Sequence[int], batch: Optional[BatchDim] = None) -> None:
        if dtype not in _DATATYPES:
            raise ValueError(f"tensor '{name}' is of dtype {dtype}, which the Open Inference Protocol "
                             f"cannot carry through kiln.serve (it serves {', '.join(_DATATYPES)})")
        self.name = name
        self.dtype = dtype
        self.datatype = _DATATYPES[dtype]
        self.numpy_dtype = np.dtype(dtype)
        self.shape = tuple(int(d) for d in shape)
        self.batch = batch if self.shape[:1] == (-1,) else None
        if any(d < 0 for d in self.shape[1 if self.batch else 0:]):
            raise ValueError(f"tensor '{name}' has shape {list(self.shape)}: kiln.serve takes fixed shapes "
                             "and a batch dimension on axis 0")
        largest = (self.batch.largest, *self.shape[1:]) if self.batch else self.shape
        self.count = int(np.prod(largest, dtype=np.int64))  # the largest
        self.nbytes = self.count * self.numpy_dtype.itemsize

    def shape_text(self) -> str:
        if not self.batch:
            return str(list(self.shape))
        b = self.batch
        return f"[{', '.join([b.name, *map(str, self.shape[1:])])}] with {b.name} from {b.smallest} to {b.largest}"

    def check_shape(self, shape: Sequence[int]) -> Tuple[int, ...]:
        """`shape` if this tensor takes it (compared before anything is allocated from it)."""
        shape = tuple(shape)
        fits = shape == self.shape
        if self.batch:
            fits = (len(shape) == len(self.shape) and shape[1:] == self.shape[1:]
                    and self.batch.smallest <= shape[0] <= self.batch.largest)
        if not fits:
            shown = list(shape) if len(shape) <= 8 else list(shape[:8]) + ["..."]
            raise ProtocolError(400, f"input '{self.name}' has shape {shown}; the model takes {self.shape_text()}")
        return shape

    def metadata(self) -> Dict[str, Any]:
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}


class Signature:
    """A model's inputs and outputs (TensorSpecs, in the library's order) and its batch dimension."""

    def __init__(self, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
                 batch: Optional[BatchDim] = None) -> None:
        self.batch = batch
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.input_by_name = {t.name: t for t in self.inputs}
        self.output_by_name = {t.name: t for t in self.outputs}


def _bad(message: str) -> ProtocolError:
    return ProtocolError(400, message)


def _split_body(body: bytes, header_length: Optional[str]) -> Tuple[Dict[str, Any], memoryview]:
    """The request's JSON object and the binary part after it."""
    if header_length is None:
        json_bytes, binary = body, memoryview(b"")
    else:
        try:
            length = int(header_length)
        except ValueError:
            raise _bad(f"the {HEADER_LENGTH} header is not a number: {header_length[:40]!r}") from None
        if length < 0 or length > len(body):
            raise _bad(f"the {HEADER_LENGTH} header says {length} bytes of JSON, but the body holds {len(body)}")
        json_bytes, binary = body[:length], memoryview(body)[length:]
    try:
        request = json.loads(json_bytes)
    except (UnicodeDecodeError, ValueError) as e:
        raise _bad(f"the request is not valid JSON: {e}") from None
    if not isinstance(request, dict):
        raise _bad("the request is not a JSON object")
    return request, binary


def _shape_of(tensor: Mapping[str, Any], spec: TensorSpec) -> Tuple[int, ...]:
    shape = tensor.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise _bad(f"input '{spec.name}': 'shape' must be a list of integers")
    return spec.check_shape(shape)


def _binary_size(tensor: Mapping[str, Any], name: str) -> Optional[int]:
    parameters = tensor.get("parameters", {})
    if not isinstance(parameters, dict):
        raise _bad(f"input '{name}': 'parameters' must be an object")
    for key in ("shared_memory_region", "shared_memory_byte_size", "shared_memory_offset"):
        if key in parameters:
            raise _bad(f"input '{name}': shared memory is not supported by kiln.serve")
    size = parameters.get("binary_data_size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise _bad(f"input '{name}': binary_data_size must be a non-negative integer")
    return size


def _json_data(data: Any, spec: TensorSpec, shape: Tuple[int, ...]) -> np.ndarray:
    """The tensor of a JSON 'data' list (flat or nested, row-major), checked against the spec."""
    if not isinstance(data, list):
        raise _bad(f"input '{spec.name}': 'data' must be a list")
    try:
        array = np.array(data, dtype=object).reshape(-1)
    except ValueError:
        raise _bad(f"input '{spec.name}': 'data' is a ragged nested list") from None
    count = int(np.prod(shape, dtype=np.int64))
    if array.size != count:
        raise _bad(f"input '{spec.name}': 'data' holds {array.size} values; shape {list(shape)} needs {count}")
    kind = spec.numpy_dtype.kind
    for value in array:
        if kind == "b":
            ok = isinstance(value, bool)
        elif kind in "iu":
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok:
            raise _bad(f"input '{spec.name}' ({spec.datatype}): 'data' holds {type(value).__name__} {str(value)[:40]!r}")
    try:
        converted = array.astype(spec.numpy_dtype)
    except OverflowError:
        raise _bad(f"input '{spec.name}': a value is out of range for {spec.datatype}") from None
    if kind in "iu" and not np.array_equal(converted.astype(object), array):
        raise _bad(f"input '{spec.name}': a value is out of range for {spec.datatype}")
    return converted.reshape(shape)


def parse_request(body: bytes, header_length: Optional[str], signature: Signature) -> Tuple[
        Dict[str, np.ndarray], Dict[str, bool], Optional[str]]:
    """Parses an infer request's body (and its Inference-Header-Content-Length header, or None):
    (inputs {name: array of the model's dtype and shape}, requested outputs {name: binary?}, the
    request's id). Raises ProtocolError for anything the model cannot run."""
    request, binary = _split_body(body, header_length)
    tensors = request.get("inputs")
    if not isinstance(tensors, list) or not all(isinstance(t, dict) for t in tensors):
        raise _bad("the request has no 'inputs' list of tensors")
    inputs: Dict[str, np.ndarray] = {}
    offset = 0
    for tensor in tensors:
        name = tensor.get("name")
        if not isinstance(name, str):
            raise _bad("an input has no 'name'")
        spec = signature.input_by_name.get(name)
        if spec is None:
            raise _bad(f"the model has no input '{name[:100]}' (its inputs: {', '.join(signature.input_by_name)})")
        if name in inputs:
            raise _bad(f"input '{name}' is given twice")
        if tensor.get("datatype") != spec.datatype:
            raise _bad(f"input '{name}' has datatype {str(tensor.get('datatype'))[:20]}; the model takes {spec.datatype}")
        shape = _shape_of(tensor, spec)
        size = _binary_size(tensor, name)
        if size is None:
            if "data" not in tensor:
                raise _bad(f"input '{name}' has neither 'data' nor binary_data_size")
            inputs[name] = _json_data(tensor["data"], spec, shape)
            continue
        if "data" in tensor:
            raise _bad(f"input '{name}' has both 'data' and binary_data_size")
        nbytes = int(np.prod(shape, dtype=np.int64)) * spec.numpy_dtype.itemsize
        if size != nbytes:
            raise _bad(f"input '{name}': binary_data_size is {size}; shape {list(shape)} of "
                       f"{spec.datatype} takes {nbytes} bytes")
        if offset + size > len(binary):
            raise _bad(f"input '{name}': the binary data is cut short ({len(binary) - offset} bytes left "
                       f"of the {size} declared)")
        array = np.frombuffer(binary[offset:offset + size], dtype=spec.numpy_dtype).reshape(shape)
        if spec.dtype == "bool":
            array = array.view(np.uint8).astype(bool)  # any nonzero byte is true
        inputs[name] = array
        offset += size
    if offset != len(binary):
        raise _bad(f"the body holds {len(binary)} bytes of binary data, but the inputs declare {offset}")
    missing = [t.name for t in signature.inputs if t.name not in inputs]
    if missing:
        raise _bad(f"the request lacks input(s) {', '.join(missing)}")
    samples = {t.name: inputs[t.name].shape[0] for t in signature.inputs if t.batch}
    if len(set(samples.values())) > 1:
        raise _bad("the inputs that hold the batch hold different numbers of samples: "
                   + ", ".join(f"'{n}' {k}" for n, k in samples.items()))
    return inputs, _requested_outputs(request, signature), _request_id(request)


def _requested_outputs(request: Mapping[str, Any], signature: Signature) -> Dict[str, bool]:
    parameters = request.get("parameters", {})
    if not isinstance(parameters, dict):
        raise _bad("the request's 'parameters' must be an object")
    binary_default = parameters.get("binary_data_output", False) is True
    outputs = request.get("outputs")
    if outputs is None:
        return {t.name: binary_default for t in signature.outputs}
    if not isinstance(outputs, list) or not all(isinstance(o, dict) for o in outputs):
        raise _bad("'outputs' must be a list of objects")
    requested: Dict[str, bool] = {}
    for output in outputs:
        name = output.get("name")
        if not isinstance(name, str) or name not in signature.output_by_name:
            raise _bad(f"the model has no output {str(name)[:100]!r} (its outputs: {', '.join(signature.output_by_name)})")
        own = output.get("parameters", {})
        if not isinstance(own, dict):
            raise _bad(f"output '{name}': 'parameters' must be an object")
        if "shared_memory_region" in own:
            raise _bad(f"output '{name}': shared memory is not supported by kiln.serve")
        requested[name] = own.get("binary_data", binary_default) is True
    return requested


def _request_id(request: Mapping[str, Any]) -> Optional[str]:
    value = request.get("id")
    if value is not None and not isinstance(value, str):
        raise _bad("the request's 'id' must be a string")
    return value


def encode_response(model_name: str, model_version: str, outputs: Mapping[str, np.ndarray],
                    requested: Mapping[str, bool], signature: Signature,
                    request_id: Optional[str]) -> Tuple[bytes, Optional[int]]:
    """The body of an infer answer and, when some output goes as binary data, the length of its
    JSON part (the Inference-Header-Content-Length header's value); None: all JSON."""
    answer: Dict[str, Any] = {"model_name": model_name, "model_version": model_version}
    if request_id is not None:
        answer["id"] = request_id
    tensors: List[Dict[str, Any]] = []
    blobs: List[bytes] = []
    for name, binary in requested.items():
        spec = signature.output_by_name[name]
        array = np.ascontiguousarray(outputs[name])
        tensor: Dict[str, Any] = {"name": name, "datatype": spec.datatype, "shape": list(array.shape)}
        if binary:
            blob = array.tobytes()
            tensor["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            tensor["data"] = array.reshape(-1).tolist()
        tensors.append(tensor)
    answer["outputs"] = tensors
    header = json.dumps(answer, separators=(",", ":")).encode()
    if not blobs:
        return header, None
    return b"".join([header, *blobs]), len(header)
