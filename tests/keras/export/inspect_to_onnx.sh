#!/bin/sh
# ctest keras_inspect_to_onnx: `keras-inspect --to-onnx` converts Keras files made by real Keras
# (tests/data/keras) to ONNX; ONNX Runtime on the result gives Keras's own recorded outputs
# (within 1e-5 of their largest magnitude), masked, recurrent and ConvLSTM models included; a
# conversion that cannot be done (an opset the exporter does not write) fails with exit status 1
# and writes nothing. Exit 77 (skip) without the test venv's onnx/onnxruntime.
#   inspect_to_onnx.sh KERAS_INSPECT SOURCE_DIR WORK_DIR
set -eu
tool=$1 src=$2 work=$3/inspect_to_onnx
data=$src/tests/data/keras
rm -rf "$work" && mkdir -p "$work"
# Recurrent (generic RNN over stacked cells, ConvLSTM) and masked (Embedding mask_zero, Masking) models too.
for stem in cnn nested_shared rnn_model sequence/text_classifier sequence/masked_series sequence/transformer_block \
            sequence/conv_lstm2d_forecaster sequence/conv_lstm1d sequence/conv_lstm3d; do
  "$tool" --to-onnx "$data/$stem.keras" "$work/$(basename $stem).onnx"
  "$tool" --to-onnx "$data/$stem.k2.h5" "$work/$(basename $stem).k2.onnx" --opset 18
done
if "$tool" --to-onnx "$data/cnn.keras" "$work/bad.onnx" --opset 12 2>"$work/bad.err"; then
  echo "expected --opset 12 to fail"; exit 1
fi
grep -q "opset 17 to 21" "$work/bad.err" || { echo "error does not name the opsets:"; cat "$work/bad.err"; exit 1; }
[ ! -e "$work/bad.onnx" ] || { echo "a failed conversion left $work/bad.onnx"; exit 1; }
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
# The padded token and series inputs of the sequence fixtures exercise the masks.
cases = []
for stem in ["cnn", "nested_shared", "rnn_model", "sequence/text_classifier", "sequence/masked_series",
             "sequence/transformer_block", "sequence/conv_lstm2d_forecaster", "sequence/conv_lstm1d", "sequence/conv_lstm3d"]:
    name = stem.split("/")[-1]
    cases += [(stem, name, "k3"), (stem, name + ".k2", "k2")]
for stem, model, ref in cases:
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
