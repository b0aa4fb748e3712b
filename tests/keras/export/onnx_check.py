"""Checks exported ONNX files with the reference tools (test-only): onnx.checker (full check,
with shape inference) and ONNX Runtime's predictions against the framework's model.predict.

    onnx_check.py MANIFEST.json

The manifest lists cases {"name", "model", "runs": [{"inputs": {name: npy}, "outputs": [npy]}]}.
Prints one JSON object {name: {"error": str} or {"max_rel_err": float, "runs": n}}, where the
error of a run is max|ort - keras| / max(max|keras|, 1e-6) over its outputs. Exits 77 when onnx or
onnxruntime is missing (the test then skips)."""
import json
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except Exception as e:  # noqa: BLE001 - any import failure means "skip"
    print(repr(e), file=sys.stderr)
    sys.exit(77)


def check(case):
    onnx.checker.check_model(case["model"], full_check=True)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(case["model"], options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    worst = 0.0
    for run in case["runs"]:
        if sorted(run["inputs"]) != sorted(names):
            raise ValueError(f"ONNX inputs {names}, expected {sorted(run['inputs'])}")
        feeds = {k: np.load(v) for k, v in run["inputs"].items()}
        got = session.run(None, feeds)
        if len(got) != len(run["outputs"]):
            raise ValueError(f"{len(got)} outputs, expected {len(run['outputs'])}")
        for g, path in zip(got, run["outputs"]):
            want = np.load(path)
            if g.shape != want.shape:
                raise ValueError(f"output shape {g.shape}, expected {want.shape}")
            scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-6)
            err = float(np.max(np.abs(g.astype(np.float64) - want))) / scale if want.size else 0.0
            worst = max(worst, err)
    return {"max_rel_err": worst, "runs": len(case["runs"]),
            "outputs": [o.name for o in session.get_outputs()], "inputs": names}


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    results = {}
    for case in cases:
        try:
            results[case["name"]] = check(case)
        except Exception as e:  # noqa: BLE001 - reported per case
            results[case["name"]] = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
