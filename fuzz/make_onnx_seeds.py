"""Writes the seed corpus of fuzz_onnx_import into the directory given: small single-op models cut
from the frontend's op cases (tests/python/onnx_op_cases.py: a node with the nodes it depends on,
one per op type and opset form -- before 13 many ops take attributes that later became inputs --
skipping ones with large weights) and the small multi-node models
of the Python API tests. Deterministic: the same files on every run.

    python fuzz/make_onnx_seeds.py build-fuzz/seeds/onnx_import
"""
import pathlib
import sys

from onnx import helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "python"))
import onnx_op_cases  # noqa: E402

MAX_INITIALIZER_BYTES = 4096


def node_models(group):
    """One model per node of the group: the node, the nodes it depends on, and their inputs."""
    producers = {out: node for node in group.nodes for out in node.output}
    inputs = {value.name: value for value in group.inputs}
    inits = {tensor.name: tensor for tensor in group.inits}
    for node in group.nodes:
        needed, stack = [], [node]
        while stack:
            current = stack.pop()
            if current in needed:
                continue
            needed.append(current)
            stack.extend(producers[name] for name in current.input if name in producers)
        nodes = [n for n in group.nodes if n in needed]  # in the group's (topological) order
        names = {name for n in nodes for name in n.input}
        used_inits = [inits[name] for name in sorted(names) if name in inits]
        if sum(len(t.SerializeToString()) for t in used_inits) > MAX_INITIALIZER_BYTES:
            continue
        graph = helper.make_graph(nodes, f"{group.name}_{node.op_type}", [inputs[n] for n in sorted(names) if n in inputs],
                                  [helper.make_empty_tensor_value_info(out) for out in node.output], used_inits)
        yield node.op_type, helper.make_model(graph, opset_imports=[helper.make_opsetid("", group.opset)], ir_version=8)


def api_models():
    """The Python API tests' multi-node models (python_api_models needs onnxruntime and pytest)."""
    try:
        import python_api_models as m
    except ImportError:
        return []
    return [("dense_relu", m.dense_relu(2)), ("two_inputs_two_outputs", m.two_inputs_two_outputs()),
            ("weights_as_input", m.weights_as_input())]


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    written_keys = set()
    written = 0
    for make_group, opsets in onnx_op_cases.GROUPS:
        for opset in (opsets[0], opsets[-1]):
            for op_type, model in node_models(make_group(opset)):
                key = (op_type, opset < 13)
                if key in written_keys:
                    continue
                written_keys.add(key)
                (out / f"{op_type}_opset{opset}.onnx").write_bytes(model.SerializeToString())
                written += 1
    for name, model in api_models():
        (out / f"{name}.onnx").write_bytes(model.SerializeToString())
        written += 1
    print(f"wrote {written} ONNX seeds into {out}")


if __name__ == "__main__":
    main()
