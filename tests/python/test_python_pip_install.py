"""`pip install .` of the source tree works offline (--no-build-isolation --no-index, against what
`make deps` installed) and gives a package that runs on its own: installed into a scratch
directory, imported from there alone, it compiles a model with the kernel sources it carries.
KILN_PIP_WORK_DIR (set by CMake) keeps scikit-build-core's build directory and the install
between runs, so later runs rebuild little and find the kernels in the object cache."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

CHECK = r"""
import os, sys
import numpy as np
import kiln
from kiln import graph_executor
package = os.path.dirname(kiln.__file__)
assert package.startswith(sys.argv[1]), package
assert os.path.isfile(os.path.join(package, "share", "kernels", "kernels.h"))
assert os.path.isfile(os.path.join(package, "py.typed")) and os.path.isfile(os.path.join(package, "_ffi.pyi"))
mod = kiln.ir.IRModule.from_text("fn (%x: Tensor[(2, 3), float32]) { %0 = nn.relu(%x); %0 }")
with kiln.transform.PassContext(opt_level=3):
    lib = kiln.build(mod, target="cpu")
lib.export_library(sys.argv[2])
gmod = graph_executor.GraphModule(kiln.runtime.load_module(sys.argv[2])["default"](kiln.cpu()))
x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
gmod.run(x=kiln.nd.from_dlpack(x))
np.testing.assert_array_equal(gmod.get_output(0).numpy(), np.maximum(x, 0))
try:
    gmod.set_input("y", x)
except kiln.KilnError as e:
    assert "no input named 'y'" in str(e), e
print("installed kiln works")
"""


def test_pip_install_from_the_source_tree(tmp_path):
    work = pathlib.Path(os.environ.get("KILN_PIP_WORK_DIR") or tmp_path)
    target, build_dir = work / "site", work / "build"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
         "--disable-pip-version-check", "--upgrade", "--target", str(target), f"--config-settings=build-dir={build_dir}",
         str(ROOT)], env=env, capture_output=True, text=True, timeout=2400)
    assert installed.returncode == 0, installed.stdout[-4000:] + installed.stderr[-4000:]
    assert "Successfully installed kiln" in installed.stdout
    env["PYTHONPATH"] = str(target)
    ran = subprocess.run([sys.executable, "-c", CHECK, str(target), str(tmp_path / "m.so")], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "installed kiln works" in ran.stdout
