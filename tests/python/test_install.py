"""`cmake --install` for C and C++ users: the installed tree holds libkiln_runtime, its headers, the
`kiln` command line, the kernel tree and a CMake package; the README's C and C++ examples build
against it with find_package(kiln) alone and run a model library; the installed command line
compiles with the kernel tree it carries and runs a model like ONNX Runtime."""
import os
import pathlib
import subprocess

from python_api_models import check_cli_round_trip

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build"))
TEST_MODEL = os.environ.get("KILN_TEST_MODEL", str(BUILD / "lib/libkiln_test_model_good.so"))


def run(*args, **kwargs):
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, args))} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result


def test_install_tree_find_package_and_cli(tmp_path):
    prefix = tmp_path / "prefix"
    run("cmake", "--install", BUILD, "--prefix", prefix)
    for path in ["lib/libkiln_runtime.so", "include/kiln/c_runtime_api.h", "include/kiln/c_backend_api.h",
                 "include/kiln/runtime/module.h", "include/kiln/runtime/graph_executor_module.h", "bin/kiln",
                 "lib/cmake/kiln/kilnConfig.cmake", "lib/cmake/kiln/kilnConfigVersion.cmake",
                 "share/kiln/kernels/kernels.h", "share/kiln/kernels/gemm/gemm.cc", "share/kiln/kernels/sources.txt",
                 "share/kiln/include/dlpack/dlpack.h"]:
        assert (prefix / path).exists(), path
    assert not (prefix / "kiln").exists()  # the Python package's files are pip's alone

    # The README's examples, as a user's project that knows only the installed tree.
    consumer = tmp_path / "consumer"
    run("cmake", "-S", ROOT / "tests/install", "-B", consumer, f"-DCMAKE_PREFIX_PATH={prefix}",
        f"-DKILN_EXAMPLES={ROOT / 'examples'}", "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF")
    run("cmake", "--build", consumer, "-j", "2")
    for program in ["minimal_c", "minimal_cpp"]:
        linked = run("ldd", consumer / program).stdout
        assert str(prefix / "lib/libkiln_runtime.so") in linked, linked
        out = run(consumer / program, TEST_MODEL).stdout
        assert out.startswith("output 0: "), out
        assert out == run(BUILD / "bin" / program, TEST_MODEL).stdout  # as the example built in the tree

    # The installed command line compiles against its own kernel tree and runs like ONNX Runtime.
    kiln = prefix / "bin/kiln"
    version = run(kiln, "--version").stdout
    assert f"kernel sources: {prefix / 'share/kiln'}" in version, version
    check_cli_round_trip(kiln, tmp_path)
