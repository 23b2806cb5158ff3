"""The demo behind `make demo`: a real architecture (ResNet-18 from torchvision, seeded random
weights, exported once into the model cache) is compiled with `kiln compile` and run with
`kiln run`; it prints the top-5 classes, kiln's latency, ONNX Runtime's latency on the same
input, and the largest difference between the two outputs.

    python scripts/demo.py --kiln build/bin/kiln [--model resnet18] [--repeat 20]
"""
import argparse
import pathlib
import re
import subprocess
import time

import numpy as np
import onnxruntime as ort

from model_suite import ROOT, model_path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln", default=str(ROOT / "build/bin/kiln"))
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--work", default=str(ROOT / "build/demo"))
    args = parser.parse_args()
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    model = model_path(args.model)
    library = work / f"{args.model}.so"
    print(f"$ kiln compile {model.name} -o {library}", flush=True)
    subprocess.run([args.kiln, "compile", str(model), "-o", str(library)], check=True)

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    x = np.random.default_rng(0).standard_normal([d for d in inp.shape]).astype(np.float32)
    np.savez(work / "input.npz", **{inp.name: x})
    print(f"$ kiln run {library.name} --inputs input.npz --print-time --print-top 5", flush=True)
    ran = subprocess.run([args.kiln, "run", str(library), "--inputs", str(work / "input.npz"), "--outputs",
                          str(work / "output.npz"), "--print-time", "--repeat", str(args.repeat), "--print-top", "5"],
                         check=True, capture_output=True, text=True)
    print(ran.stdout, end="")
    kiln_median = float(re.search(r"median \(ms\).*\n\s*\S+\s+(\S+)", ran.stdout).group(1))

    reference = session.run(None, {inp.name: x})[0]
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        session.run(None, {inp.name: x})
        times.append((time.perf_counter() - start) * 1000)
    ort_median = float(np.median(times))
    got = np.load(work / "output.npz")["output_0"]
    top5 = np.argsort(-reference.ravel())[:5]
    print(f"\nONNX Runtime top-5 classes: {top5.tolist()}")
    print(f"kiln median latency:         {kiln_median:.2f} ms")
    print(f"ONNX Runtime median latency: {ort_median:.2f} ms  (kiln / ORT = {kiln_median / ort_median:.2f})")
    print(f"largest |kiln - ORT|:        {np.abs(got - reference).max():.3g}")


if __name__ == "__main__":
    main()
