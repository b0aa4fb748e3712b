#!/bin/sh
# ctest keras_inspect_to_onnx: `keras-inspect --to-onnx` converts Keras files made by real Keras
# (tests/data/keras) to ONNX; ONNX Runtime on the result gives Keras's own recorded outputs
# (within 1e-5 of their largest magnitude); a file with a layer that does not export fails with
# exit status 1 and writes nothing. Exit 77 (skip) without the test venv's onnx/onnxruntime.
#   inspect_to_onnx.sh KERAS_INSPECT SOURCE_DIR WORK_DIR
set -eu
tool=$1 src=$2 work=$3/inspect_to_onnx
data=$src/tests/data/keras
rm -rf "$work" && mkdir -p "$work"
for stem in cnn nested_shared; do
  "$tool" --to-onnx "$data/$stem.keras" "$work/$stem.onnx"
  "$tool" --to-onnx "$data/$stem.k2.h5" "$work/$stem.k2.onnx" --opset 18
done
if "$tool" --to-onnx "$data/rnn_model.keras" "$work/rnn.onnx" 2>"$work/rnn.err"; then
  echo "expected rnn_model.keras (generic RNN cells) to fail"; exit 1
fi
grep -q "(RNN)" "$work/rnn.err" || { echo "error does not name the RNN layer:"; cat "$work/rnn.err"; exit 1; }
[ ! -e "$work/rnn.onnx" ] || { echo "a failed conversion left $work/rnn.onnx"; exit 1; }
python=$src/.venv/bin/python3
[ -x "$python" ] || { echo "no test venv ($python): bash scripts/setup.sh"; exit 77; }
"$python" - "$data" "$work" <<'PY' || exit $?
import sys
try:
    import numpy as np, onnx, onnxruntime as ort
except Exception as e:
    print("skip:", e); sys.exit(77)
data, work = sys.argv[1], sys.argv[2]
# Each file against the outputs its own Keras recorded: Keras 3 for .keras, tf_keras for .k2.h5.
for stem, model, ref in [("cnn", "cnn", "k3"), ("cnn", "cnn.k2", "k2"), ("nested_shared", "nested_shared", "k3"),
                         ("nested_shared", "nested_shared.k2", "k2")]:
    path = f"{work}/{model}.onnx"
    onnx.checker.check_model(path, full_check=True)
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(f"{data}/{stem}.input{k}.npy") for k, i in enumerate(s.get_inputs())}
    for k, got in enumerate(s.run(None, feeds)):
        want = np.load(f"{data}/{stem}.{ref}.output{k}.npy")
        err = float(np.max(np.abs(got - want))) / max(float(np.max(np.abs(want))), 1e-6)
        print(f"{model}.onnx output {k}: max relative error {err:.3g} against Keras")
        if err > 1e-5:
            sys.exit(1)
PY
