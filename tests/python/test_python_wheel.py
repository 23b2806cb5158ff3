"""The wheel, as a user gets kiln: `pip wheel .` with build isolation (pip fetches the build
requirements, scikit-build-core and pybind11, from PyPI) is built once, then installed into two fresh
venvs that see no system packages and no source tree:

- "latest": numpy 2 and the newest onnx and onnxruntime from PyPI. Besides the API tests, it runs the
  op cases and a model of each kind from the suite (convolutions, depthwise, attention, channel
  shuffle, transposed convolution and resize) at -O3 with the newest ONNX Runtime as the reference,
  so a change in either shows up (the pinned venv of scripts/python_env.sh keeps the pinned
  references for the whole suite at both levels).
- "numpy1": numpy 1.26 with the pinned onnx and onnxruntime.

In each: the Python API tests, the array and DLPack tests and the README quick start against the
installed package (PyTorch tests are skipped there: Debian's torch 1.13 needs numpy 1 and the system
packages), and `kiln` from PATH, which must behave like build/bin/kiln. The models come from the
model cache (exported by the pinned venv first). KILN_WHEEL_WORK_DIR keeps the wheel's build
directory between runs; the venvs live in ~/.cache/kiln (KILN_VENV_ROOT)."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from python_api_models import check_cli_round_trip
from test_model_suite import MODELS, model_path

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests/python"
BUILD_KILN = os.environ.get("KILN_BIN", str(ROOT / "build/bin/kiln"))
VENV_ROOT = pathlib.Path(os.environ.get("KILN_VENV_ROOT", pathlib.Path.home() / ".cache/kiln"))
VENVS = {
    "latest": {"pins": ["numpy", "onnx", "onnxruntime", "pytest"], "upgrade": True, "numpy_major": 2,
               "tests": ["test_python_api.py", "test_python_arrays.py", "test_python_quickstart.py",
                         "test_onnx_ops.py", "test_model_suite.py"]},
    "numpy1": {"pins": ["numpy==1.26.4", "onnx==1.16.2", "onnxruntime==1.19.2", "pytest==8.3.3"], "upgrade": False,
               "numpy_major": 1, "tests": ["test_python_api.py", "test_python_arrays.py", "test_python_quickstart.py"]},
}


def run(args, **kwargs):
    kwargs.setdefault("timeout", 2400)
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, args))} failed:\n{result.stdout[-6000:]}{result.stderr[-4000:]}"
    return result


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KILN_BIN", "VIRTUAL_ENV")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    work = pathlib.Path(os.environ.get("KILN_WHEEL_WORK_DIR") or tmp_path_factory.mktemp("wheel"))
    dist = work / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    env = clean_env()
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-w", dist,
         f"--config-settings=build-dir={work / 'build'}", ROOT], env=env)
    wheels = list(dist.glob("kiln-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def venv_with(name, wheel):
    """The venv `name` (made once, without system site packages), its pins installed, then the wheel."""
    spec = VENVS[name]
    venv = VENV_ROOT / f"venv-{name}"
    python = venv / "bin/python"
    stamp, pins = venv / ".kiln-pins", " ".join(spec["pins"])
    if not python.exists() or not stamp.exists() or stamp.read_text() != pins:
        shutil.rmtree(venv, ignore_errors=True)
        run(["/usr/bin/python3", "-m", "venv", venv])
        run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *spec["pins"]])
        stamp.write_text(pins)
    elif spec["upgrade"]:
        run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade", *spec["pins"]])
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--force-reinstall", "--no-deps", wheel])
    return venv


@pytest.mark.parametrize("name", list(VENVS))
def test_wheel_in_a_fresh_venv(name, wheel, tmp_path):
    for model in MODELS:
        model_path(model)  # exported by this (the pinned) venv, which has PyTorch
    venv = venv_with(name, wheel)
    python = venv / "bin/python"
    env = clean_env(PATH=f"{venv / 'bin'}:{os.environ['PATH']}")
    probe = run([python, "-c", "import kiln, numpy, onnx, onnxruntime; "
                 "print(kiln.__file__, kiln.__version__, numpy.__version__, onnx.__version__, onnxruntime.__version__)"],
                env=env, cwd=tmp_path).stdout.split()
    print(f"{name}: kiln {probe[1]} from {probe[0]}, numpy {probe[2]}, onnx {probe[3]}, onnxruntime {probe[4]}")
    assert probe[0].startswith(str(venv)), probe
    assert int(probe[2].split(".")[0]) == VENVS[name]["numpy_major"], probe

    # The Triton backend: Triton's --backend-directory is <package>/lib/triton/backends; the backend
    # finds the wheel's runtime by its rpath.
    package = pathlib.Path(probe[0]).parent
    backend = package / "lib/triton/backends/kiln/libtriton_kiln.so"
    assert backend.is_file(), sorted(str(p.relative_to(package)) for p in (package / "lib").rglob("*"))
    found = re.search(r"libkiln_runtime\.so => (\S+)", run(["ldd", backend]).stdout)
    assert found and pathlib.Path(found.group(1)).resolve() == (package / "lib/libkiln_runtime.so").resolve(), found

    # The Python tests against the installed package; `kiln` from PATH is the wheel's.
    env["KILN_BIN"] = shutil.which("kiln", path=env["PATH"])
    # -O0 and the larger models of each kind are checked against the pinned references.
    env["KILN_SUITE_OPT_LEVELS"] = "3"
    env["KILN_SUITE_MODELS"] = "resnet18,mobilenet_v2,bert_2layer,shufflenet_v2_x1_0,db_text_detector"
    assert env["KILN_BIN"] == str(venv / "bin/kiln")
    tests = [TESTS / t for t in VENVS[name]["tests"]]
    result = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *tests], env=env, cwd=tmp_path)
    print(result.stdout[-3000:])

    check_cli_from_path(env, tmp_path)


def check_cli_from_path(env, tmp_path):
    """`kiln` from PATH compiles and runs a model like ONNX Runtime, with the kernel tree of the
    package, and answers bad input with build/bin/kiln's messages and exit codes."""
    version = run(["kiln", "--version"], env=env).stdout
    assert "kiln 0.2" in version and "site-packages/kiln/share" in version, version
    check_cli_round_trip("kiln", tmp_path, env)
    model = tmp_path / "m.onnx"

    for args in [[], ["--help"], ["frobnicate"], ["compile", tmp_path / "missing.onnx"], ["run", model],
                 ["run", tmp_path / "m.so", "--inputs", tmp_path / "missing.npz"], ["inspect"]]:
        ours = subprocess.run(["kiln", *map(str, args)], env=env, capture_output=True, text=True)
        built = subprocess.run([BUILD_KILN, *map(str, args)], env=env, capture_output=True, text=True)
        assert (ours.returncode, ours.stdout, ours.stderr) == (built.returncode, built.stdout, built.stderr), args
        assert ours.returncode != 0 or args == ["--help"], args
