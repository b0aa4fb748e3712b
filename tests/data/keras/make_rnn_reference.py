#!/usr/bin/env python3
"""Reference numbers for the fused recurrent op (tests/backend/test_rnn_keras.cpp), made by REAL Keras.

Usage: /work/keras-ref/bin/python make_rnn_reference.py [OUT]   (default: rnn_reference.json here)

For each case a Keras 3 layer (LSTM, GRU with reset_after True and False, SimpleRNN, or RNN over a
cell for zero_output_for_mask=True) with return_sequences=True and return_state=True is built on
x of shape (2, 5, 3), given seeded random weights with set_weights, and called with optional
initial states and a boolean mask (row 1 has a masked first step, so that the output before the
first valid step is seen). The JSON holds, per case: the layer options, x, mask, initial states,
the weights (kernel, recurrent_kernel, bias) in Keras's layouts, the output sequence and final
states, and the gradients (tf.GradientTape) of
    L = sum(outputs * P) + sum(h_T * Q) [+ sum(c_T * Q)]
w.r.t. x, the weights and the initial states, with P and Q stored too. All values float32 (9 significant digits) lists.
"""
import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

B, T, I, U = 2, 5, 3, 4
MASK = [[1, 1, 1, 0, 0], [0, 1, 1, 0, 1]]

CASES = [
    dict(name="lstm", kind="lstm"),
    dict(name="lstm_backwards_mask_state", kind="lstm", go_backwards=True, mask=True, state=True),
    dict(name="lstm_mask_state", kind="lstm", mask=True, state=True),
    dict(name="lstm_relu_hard_sigmoid", kind="lstm", activation="relu", recurrent_activation="hard_sigmoid"),
    dict(name="lstm_zero_output_for_mask", kind="lstm", mask=True, state=True, zero_output_for_mask=True),
    dict(name="gru", kind="gru", reset_after=True, state=True),
    dict(name="gru_reset_before", kind="gru", reset_after=False, state=True),
    dict(name="gru_backwards_mask", kind="gru", reset_after=True, go_backwards=True, mask=True, state=True),
    dict(name="gru_reset_before_mask", kind="gru", reset_after=False, mask=True),
    dict(name="simple_rnn", kind="simple_rnn", state=True),
    dict(name="simple_rnn_relu_backwards_mask", kind="simple_rnn", activation="relu", go_backwards=True, mask=True,
         state=True),
    dict(name="simple_rnn_softsign_mask_zero_output", kind="simple_rnn", activation="softsign", mask=True,
         zero_output_for_mask=True, state=True),
    # Unmasked go_backwards cases: the oneDNN path of the float32 default test.
    dict(name="lstm_backwards_state", kind="lstm", go_backwards=True, state=True),
    dict(name="gru_backwards", kind="gru", reset_after=True, go_backwards=True),
    dict(name="simple_rnn_relu_backwards", kind="simple_rnn", activation="relu", go_backwards=True, state=True),
]


def make_layer(c):
    kw = dict(return_sequences=True, return_state=True, go_backwards=c.get("go_backwards", False))
    act = dict(activation=c.get("activation", "tanh"))
    if c["kind"] != "simple_rnn":
        act["recurrent_activation"] = c.get("recurrent_activation", "sigmoid")
    if c["kind"] == "gru":
        act["reset_after"] = c["reset_after"]
    cell_cls = {"lstm": keras.layers.LSTMCell, "gru": keras.layers.GRUCell, "simple_rnn": keras.layers.SimpleRNNCell}
    layer_cls = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU, "simple_rnn": keras.layers.SimpleRNN}
    if c.get("zero_output_for_mask"):
        return keras.layers.RNN(cell_cls[c["kind"]](U, **act), zero_output_for_mask=True, **kw)
    return layer_cls[c["kind"]](U, **act, **kw)


def run_case(c, rng):
    layer = make_layer(c)
    x = rng.normal(size=(B, T, I)).astype("float32")
    layer.build((B, T, I))
    weights = [rng.normal(scale=0.5, size=w.shape).astype("float32") for w in layer.get_weights()]
    layer.set_weights(weights)
    n_states = 2 if c["kind"] == "lstm" else 1
    states = [rng.normal(scale=0.5, size=(B, U)).astype("float32") for _ in range(n_states)] if c.get("state") else []
    mask = np.array(MASK, dtype=bool) if c.get("mask") else None
    P = rng.normal(size=(B, T, U)).astype("float32")
    Q = [rng.normal(size=(B, U)).astype("float32") for _ in range(n_states)]
    xv = tf.Variable(x)
    sv = [tf.Variable(s) for s in states]
    with tf.GradientTape() as tape:
        kwargs = {}
        if sv:
            kwargs["initial_state"] = list(sv)
        if mask is not None:
            kwargs["mask"] = tf.constant(mask)
        out = layer(xv, **kwargs)
        seq, finals = out[0], out[1:]
        loss = tf.reduce_sum(seq * P) + sum(tf.reduce_sum(f * q) for f, q in zip(finals, Q))
    targets = [xv] + list(layer.trainable_variables) + sv
    grads = tape.gradient(loss, targets)
    names = [v.path.split("/")[-1] for v in layer.trainable_variables]
    assert names == ["kernel", "recurrent_kernel", "bias"], names
    # 9 significant digits: exact for float32, half the text of float64 reprs.
    lst = lambda a: np.vectorize(lambda v: float("%.9g" % v), otypes=[float])(np.asarray(a, "float32")).tolist()  # noqa: E731,E501
    return dict(
        name=c["name"], kind=c["kind"], activation=c.get("activation", "tanh"),
        recurrent_activation=c.get("recurrent_activation", "sigmoid"), reset_after=c.get("reset_after", True),
        go_backwards=c.get("go_backwards", False), zero_output_for_mask=c.get("zero_output_for_mask", False),
        x=lst(x), mask=mask.tolist() if mask is not None else None, initial_states=[lst(s) for s in states],
        kernel=lst(weights[0]), recurrent_kernel=lst(weights[1]), bias=lst(weights[2]),
        outputs=lst(seq), final_states=[lst(f) for f in finals], P=lst(P), Q=[lst(q) for q in Q],
        grad_x=lst(grads[0]), grad_kernel=lst(grads[1]), grad_recurrent_kernel=lst(grads[2]),
        grad_bias=lst(grads[3]), grad_initial_states=[lst(g) for g in grads[4:]])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                             "rnn_reference.json")
    rng = np.random.default_rng(17)
    cases = [run_case(c, rng) for c in CASES]
    doc = dict(keras_version=keras.__version__, tensorflow_version=tf.__version__, shape=dict(B=B, T=T, I=I, U=U),
               cases=cases)
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"wrote {out}: {len(cases)} cases")


if __name__ == "__main__":
    main()
