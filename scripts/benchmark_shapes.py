"""One library for every shape beside a library compiled for each shape (issue 30's "fast at every
shape"): ResNet-50 exported with a symbolic batch N (compiled once with --dims N=1..8), a 2-layer
BERT encoder with a symbolic sequence length S (--dims S=1..512) and the DB text detector with a
symbolic height and width (--dims H=320..1280:32,W=320..1280:32), each also compiled once per
shape measured with that shape fixed. Each library runs in its own `kiln run --print-time`
process, the variants alternated over the rounds, and the table gives the best of the rounds'
medians and the ratio one-library / fixed (1.10 is the issue's bound).

    PYTHONPATH=build/python python scripts/benchmark_shapes.py [--models resnet50_batched,...]
        [--threads 2,1] [--rounds 3] [--runs 10] [--markdown FILE]
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import model_suite  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def compile_library(kiln, model, library, *flags):
    subprocess.run([kiln, "compile", str(model), "-O3", "-o", str(library), *flags], check=True, capture_output=True)


def median_ms(kiln, library, inputs, threads, runs):
    """The median of `runs` timed runs of `library` in a process of its own."""
    result = subprocess.run([kiln, "run", str(library), "--inputs", str(inputs), "--print-time", "--repeat", str(runs)],
                            check=True, capture_output=True, text=True, env={**os.environ, "KILN_NUM_THREADS": str(threads)})
    rows = [line.split() for line in result.stdout.splitlines() if re.match(r"^\s*[\d.]+(\s+[\d.]+){4}\s*$", line)]
    return float(rows[-1][1])


# model -> (--dims of the one library, input name, the shapes measured: label -> input array maker,
# --input-shapes of that shape's fixed library).
CASES = {
    "resnet50_batched": ("N=1..8", "input", {
        f"batch {b}": (lambda rng, b=b: rng.standard_normal((b, 3, 224, 224)).astype(np.float32), f"input:[{b},3,224,224]")
        for b in (1, 3, 8)}),
    "bert_2layer_dynamic": ("S=1..512", "input_ids", {
        f"S = {s}": (lambda rng, s=s: rng.integers(0, 30522, size=(1, s)).astype(np.int64), f"input_ids:[1,{s}]")
        for s in (7, 128, 384)}),
    "db_text_detector_dynamic": ("H=320..1280:32,W=320..1280:32", "input", {
        f"{h}x{w}": (lambda rng, h=h, w=w: rng.standard_normal((1, 3, h, w)).astype(np.float32), f"input:[1,3,{h},{w}]")
        for h, w in ((320, 320), (640, 480), (1280, 736))}),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(CASES))
    parser.add_argument("--threads", default="2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--kiln", default=str(ROOT / "build/bin/kiln"))
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    lines = ["| model | threads | shape | fixed-shape library ms | one library ms | ratio |", "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        for name in args.models.split(","):
            dims, input_name, shapes = CASES[name]
            model = model_suite.model_path(name)
            one = work / f"{name}.so"
            compile_library(args.kiln, model, one, "--dims", dims)
            fixed, inputs = {}, {}
            for k, (label, (make, input_shapes)) in enumerate(shapes.items()):
                fixed[label] = work / f"{name}_{k}.so"
                compile_library(args.kiln, model, fixed[label], "--input-shapes", input_shapes)
                inputs[label] = work / f"{name}_{k}.npz"
                np.savez(inputs[label], **{input_name: make(rng)})
            for threads in [int(t) for t in args.threads.split(",")]:
                for label in shapes:
                    best = {"fixed": float("inf"), "one": float("inf")}
                    for _ in range(args.rounds):  # alternated, each in its own process
                        best["fixed"] = min(best["fixed"], median_ms(args.kiln, fixed[label], inputs[label], threads,
                                                                     args.runs))
                        best["one"] = min(best["one"], median_ms(args.kiln, one, inputs[label], threads, args.runs))
                    lines.append(f"| {name} (--dims {dims}) | {threads} | {label} | {best['fixed']:.2f} | "
                                 f"{best['one']:.2f} | {best['one'] / best['fixed']:.2f} |")
                    print(lines[-1], flush=True)
    table = "\n".join(lines) + "\n"
    print(table)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(table)


if __name__ == "__main__":
    main()
