"""One library for every batch beside a library compiled for each batch (issue 30's "fast at every
shape"): ResNet-50 exported with a symbolic batch N is compiled once with --dims N=1..MAX and once
per batch with that batch fixed; each library runs in its own `kiln run --print-time` process,
the variants alternated over the rounds, and the table gives the best of the rounds' medians and
the ratio one-library / fixed (1.10 is the issue's bound).

    PYTHONPATH=build/python python scripts/benchmark_shapes.py [--batches 1,3,8] [--threads 2]
        [--rounds 3] [--runs 10] [--markdown FILE]
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50_batched")
    parser.add_argument("--batches", default="1,3,8")
    parser.add_argument("--threads", default="2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--kiln", default=str(ROOT / "build/bin/kiln"))
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    model = model_suite.model_path(args.model)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        libraries = {"one library": work / "all.so"}
        compile_library(args.kiln, model, libraries["one library"], "--dims", f"N=1..{max(batches)}")
        inputs = {}
        for b in batches:
            libraries[b] = work / f"fixed{b}.so"
            compile_library(args.kiln, model, libraries[b], "--input-shapes", f"input:[{b},3,224,224]")
            inputs[b] = work / f"in{b}.npz"
            np.savez(inputs[b], input=rng.standard_normal((b, 3, 224, 224)).astype(np.float32))
        lines = [f"| model | threads | batch | fixed-batch library ms | one library (N=1..{max(batches)}) ms | ratio |",
                 "|---|---|---|---|---|---|"]
        for threads in [int(t) for t in args.threads.split(",")]:
            for b in batches:
                best = {"fixed": float("inf"), "one": float("inf")}
                for _ in range(args.rounds):  # alternated, each in its own process
                    best["fixed"] = min(best["fixed"], median_ms(args.kiln, libraries[b], inputs[b], threads, args.runs))
                    best["one"] = min(best["one"], median_ms(args.kiln, libraries["one library"], inputs[b], threads,
                                                             args.runs))
                lines.append(f"| {args.model} | {threads} | {b} | {best['fixed']:.2f} | {best['one']:.2f} | "
                             f"{best['one'] / best['fixed']:.2f} |")
                print(lines[-1], flush=True)
    table = "\n".join(lines) + "\n"
    print(table)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(table)


if __name__ == "__main__":
    main()
