"""Models of the suite (scripts/export_models.py, cached in ~/.cache/kiln/models) through the
Python API: from_onnx, build, export_library, load_module, GraphModule, against ONNX Runtime on
seeded inputs with the suite's tolerance."""
import onnx
import pytest

import kiln
from kiln import graph_executor
from python_api_models import close, ort_run
from test_model_suite import model_path, seeded_inputs


@pytest.mark.parametrize("name", ["resnet18", "bert_2layer"])
def test_model_through_python_matches_onnxruntime(tmp_path, name):
    path = model_path(name)
    model = onnx.load(str(path), load_external_data=False)
    feeds = seeded_inputs(model)
    want = ort_run(path, feeds)
    mod, params = kiln.frontend.from_onnx(path, shape_dict={k: v.shape for k, v in feeds.items()})
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    lib.export_library(tmp_path / f"{name}.so")
    gmod = graph_executor.GraphModule(kiln.runtime.load_module(tmp_path / f"{name}.so")["default"](kiln.cpu()))
    shapes, dtypes = gmod.get_input_info()
    assert shapes == {k: v.shape for k, v in feeds.items()}
    assert dtypes == {k: str(v.dtype) for k, v in feeds.items()}
    gmod.run(**feeds)
    assert gmod.get_num_outputs() == len(want)
    for i, expected in enumerate(want):
        close(gmod.get_output(i).numpy(), expected)
    result = gmod.benchmark(repeat=2, number=1)
    assert len(result.results) == 2 and result.mean > 0
    assert len(gmod.profile().nodes) > 5
