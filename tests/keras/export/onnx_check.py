"""Checks exported ONNX files with the reference tools (test-only): onnx.checker (full check,
with shape inference) and ONNX Runtime's predictions against the framework's model.predict.

    onnx_check.py MANIFEST.json

The manifest lists cases {"name", "model", "runs": [{"inputs": {name: npy}, "outputs": [npy]}]}.
"outputs" may also be {output name: npy}. A run may also have "carry": {input: output}, feeding those inputs from the named outputs of the
run before it (a stateful model's states, keras/export/stateful.h).
Prints one JSON object {name: {"error": str} or {"max_rel_err": float, "runs": n, "inputs",
"outputs", "doc", "metadata"}}, where the error of a run is max|ort - keras| / max(max|keras|,
1e-6) over its outputs, and doc / metadata are the model's doc_string and metadata_props. Exits 77
when onnx or onnxruntime is missing (the test then skips)."""
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
    out_names = [o.name for o in session.get_outputs()]
    worst = 0.0
    previous = {}
    for run in case["runs"]:
        feeds = {k: np.load(v) for k, v in run["inputs"].items()}
        for name, source in run.get("carry", {}).items():
            feeds[name] = previous[source]
        if sorted(feeds) != sorted(names):
            raise ValueError(f"ONNX inputs {names}, expected {sorted(feeds)}")
        got = session.run(None, feeds)
        previous = dict(zip(out_names, got))
        expected = run["outputs"]
        if isinstance(expected, dict):  # by output name
            if sorted(expected) != sorted(out_names):
                raise ValueError(f"ONNX outputs {out_names}, expected {sorted(expected)}")
            pairs = [(previous[k], v) for k, v in expected.items()]
        else:
            if len(got) != len(expected):
                raise ValueError(f"{len(got)} outputs, expected {len(expected)}")
            pairs = list(zip(got, expected))
        for g, path in pairs:
            want = np.load(path)
            if g.shape != want.shape:
                raise ValueError(f"output shape {g.shape}, expected {want.shape}")
            scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-6)
            err = float(np.max(np.abs(g.astype(np.float64) - want))) / scale if want.size else 0.0
            worst = max(worst, err)
    meta = session.get_modelmeta()
    return {"max_rel_err": worst, "runs": len(case["runs"]), "outputs": out_names, "inputs": names,
            "doc": meta.description, "metadata": dict(meta.custom_metadata_map)}


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
