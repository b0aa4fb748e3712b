#!/usr/bin/env python3
"""Reference values of the recurrent layers, made by REAL Keras 3 (TensorFlow backend, CPU).

Usage
  /work/keras-ref/bin/python tests/data/keras/make_rnn_layers_reference.py [OUT]
  (OUT defaults to rnn_layers_reference.json next to this script)

For every case below: the layer is built by Keras, its weights are set to fixed seeded values
(normal * 0.5), and it is called in inference mode on fixed inputs (a boolean mask where given,
initial states by keyword where given). The JSON holds, per case:
  class_name, config      serialize_keras_object(layer) after the call (shared_object_id removed):
                          the C++ test builds the layer from it and compares its own get_config
  weights                 [{"shape", "values"}] in layer.weights order (what set_weights takes)
  x, mask, initial_state  the call's inputs ({"shape", "values"}; mask values are 0/1)
  outputs                 every output of the call, in order
  calls                   stateful cases only: several calls in sequence, each with x and
                          outputs; "reset": true means reset_states() ran before that call
  cell_call               cell cases only: the cell called as cell(x, states)
Sizes are tiny (batch 2, 5 steps, 4 features, 3 units) so the file stays a few tens of KB.

It also writes a small functional model of these layers (LSTM, Bidirectional(GRU), RNN over
stacked cells, TimeDistributed(Dense), RNN(GRUCell)) next to OUT, for the saving tests:
  rnn_model.keras, rnn_model.weights.h5, rnn_model.k3.h5   Keras 3
  rnn_model.k2.h5                                           tf_keras (Keras 2), its own weights
  rnn_model.input0.npy, rnn_model.k3.output0.npy, rnn_model.k2.output0.npy
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers as L  # noqa: E402

B, T, F, U = 2, 5, 4, 3
rng = np.random.default_rng(20261125)


def arr(a):
    a = np.asarray(a)
    # float32 values printed with 9 significant digits: exact, and short.
    return {"shape": list(a.shape), "values": [float(f"{v:.9g}") for v in a.astype(np.float32).ravel()]}


def strip_ids(j):
    if isinstance(j, dict):
        return {k: strip_ids(v) for k, v in j.items() if k != "shared_object_id"}
    if isinstance(j, list):
        return [strip_ids(v) for v in j]
    return j


def seq(batch=B, steps=T, features=F):
    return rng.normal(size=(batch, steps, features)).astype("float32")


# Row 0 full length, row 1 padded at the end (length 3).
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=bool)


def set_fixed_weights(layer):
    layer.set_weights([(rng.normal(size=w.shape) * 0.5).astype("float32") for w in layer.weights])


def as_list(y):
    # Keras 3 nests a StackedRNNCells' states per cell; the C++ layer returns them flat.
    return keras.tree.flatten(y)


def case(name, layer, x, mask=None, initial_state=None):
    kwargs = {}
    if mask is not None:
        kwargs["mask"] = mask
    if initial_state is not None:
        kwargs["initial_state"] = initial_state
    # Built symbolically first (unknown batch), as in a model, so nested build_configs read None.
    sym = {"initial_state": [keras.Input(batch_shape=(None,) + s.shape[1:]) for s in initial_state]} if initial_state else {}
    layer(keras.Input(batch_shape=(None,) + x.shape[1:]), **sym)
    set_fixed_weights(layer)
    y = as_list(layer(x, training=False, **kwargs))
    out = {"name": name, "class_name": layer.__class__.__name__,
           "config": strip_ids(keras.saving.serialize_keras_object(layer)),
           "weights": [arr(w.numpy()) for w in layer.weights], "x": arr(x),
           "outputs": [arr(t.numpy()) for t in y]}
    if mask is not None:
        out["mask"] = arr(mask.astype(np.float32))
    if initial_state is not None:
        out["initial_state"] = [arr(s) for s in initial_state]
    return out


def states(n, units=U):
    return [rng.normal(size=(B, units)).astype("float32") for _ in range(n)]


def cell_case(name, cell, n_states):
    x = rng.normal(size=(B, F)).astype("float32")
    s = states(n_states)
    cell(x, s)
    set_fixed_weights(cell)
    out, new_states = cell(x, s)
    return {"name": name, "class_name": cell.__class__.__name__,
            "config": strip_ids(keras.saving.serialize_keras_object(cell)),
            "weights": [arr(w.numpy()) for w in cell.weights],
            "cell_call": {"x": arr(x), "states": [arr(v) for v in s],
                          "outputs": [arr(out.numpy())] + [arr(v.numpy()) for v in as_list(new_states)]}}


def stateful_case():
    layer = L.LSTM(U, stateful=True, return_state=True, name="stateful_lstm")
    x1, x2 = seq(), seq()
    layer(x1)
    set_fixed_weights(layer)
    layer.reset_states()
    calls = []
    for x, reset in ((x1, False), (x2, False), (x2, True)):
        if reset:
            layer.reset_states()
        calls.append({"x": arr(x), "reset": reset, "outputs": [arr(t.numpy()) for t in as_list(layer(x))]})
    return {"name": "lstm_stateful", "class_name": "LSTM",
            "config": strip_ids(keras.saving.serialize_keras_object(layer)),
            "weights": [arr(w.numpy()) for w in layer.weights], "calls": calls}


def rnn_model(K):
    Lk = K.layers
    inp = K.Input((T, F), name="seq")
    x = Lk.LSTM(4, return_sequences=True, name="lstm")(inp)
    x = Lk.Bidirectional(Lk.GRU(2, return_sequences=True), name="bi")(x)
    x = Lk.RNN([Lk.SimpleRNNCell(3), Lk.LSTMCell(2)], return_sequences=True, name="stacked")(x)
    x = Lk.TimeDistributed(Lk.Dense(2), name="td")(x)
    out = Lk.RNN(Lk.GRUCell(2), name="last")(x)
    return K.Model(inp, out, name="rnn_model")


def write_models(folder):
    x = seq(3)
    np.save(os.path.join(folder, "rnn_model.input0.npy"), x)
    m = rnn_model(keras)
    m.set_weights([(rng.normal(size=w.shape) * 0.5).astype("float32") for w in m.weights])
    np.save(os.path.join(folder, "rnn_model.k3.output0.npy"), m.predict(x, verbose=0))
    m.save(os.path.join(folder, "rnn_model.keras"))
    m.save_weights(os.path.join(folder, "rnn_model.weights.h5"))
    m.save(os.path.join(folder, "rnn_model.k3.h5"))
    import tf_keras
    m2 = rnn_model(tf_keras)
    m2.set_weights([(rng.normal(size=w.shape) * 0.5).astype("float32") for w in m2.weights])
    np.save(os.path.join(folder, "rnn_model.k2.output0.npy"), m2.predict(x, verbose=0))
    m2.save(os.path.join(folder, "rnn_model.k2.h5"))


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "rnn_layers_reference.json")
    keras.utils.set_random_seed(7)
    cases = [
        case("lstm_sequences_states_mask", L.LSTM(U, return_sequences=True, return_state=True, name="lstm"), seq(), MASK),
        case("lstm_backwards_mask", L.LSTM(U, go_backwards=True, return_sequences=True, unit_forget_bias=False,
                                           name="lstm_back"), seq(), MASK),
        case("lstm_initial_state", L.LSTM(U, return_state=True, recurrent_activation="hard_sigmoid", name="lstm_init"),
             seq(), None, states(2)),
        case("gru_reset_after_mask", L.GRU(U, return_sequences=True, return_state=True, name="gru"), seq(), MASK),
        case("gru_reset_before_mask", L.GRU(U, reset_after=False, return_sequences=True, name="gru_v1"), seq(), MASK),
        case("gru_initial_state_backwards", L.GRU(U, go_backwards=True, name="gru_back"), seq(), None, states(1)),
        case("simple_rnn_mask", L.SimpleRNN(U, name="simple_rnn"), seq(), MASK),
        case("simple_rnn_relu_no_bias", L.SimpleRNN(U, activation="relu", use_bias=False, return_sequences=True,
                                                    name="simple_rnn_relu"), seq()),
        case("rnn_stacked_cells_mask", L.RNN([L.SimpleRNNCell(U), L.LSTMCell(2)], return_sequences=True,
                                             return_state=True, name="rnn_stacked"), seq(), MASK),
        case("rnn_gru_cell_backwards", L.RNN(L.GRUCell(2, reset_after=False), go_backwards=True, name="rnn_gru"), seq()),
        case("bidirectional_concat_lstm_mask", L.Bidirectional(L.LSTM(U, return_sequences=True), name="bi_concat"),
             seq(), MASK),
        case("bidirectional_sum_gru_mask", L.Bidirectional(L.GRU(U, return_sequences=True), merge_mode="sum",
                                                           name="bi_sum"), seq(), MASK),
        case("bidirectional_mul_simple_rnn", L.Bidirectional(L.SimpleRNN(U), merge_mode="mul", name="bi_mul"), seq()),
        case("bidirectional_ave_lstm_mask", L.Bidirectional(L.LSTM(U), merge_mode="ave", name="bi_ave"), seq(), MASK),
        case("bidirectional_none_states_mask", L.Bidirectional(L.LSTM(U, return_sequences=True, return_state=True),
                                                               merge_mode=None, name="bi_none"), seq(), MASK),
        case("bidirectional_backward_layer_states", L.Bidirectional(
            L.GRU(U, return_state=True), backward_layer=L.GRU(2, return_state=True, go_backwards=True, name="gru_bw"),
            name="bi_bw"), seq(), None, states(1) + states(1, 2)),
        case("time_distributed_dense_mask", L.TimeDistributed(L.Dense(2, activation="tanh"), name="td"), seq(), MASK),
        cell_case("lstm_cell", L.LSTMCell(U, name="lstm_cell"), 2),
        cell_case("gru_cell_reset_before", L.GRUCell(U, reset_after=False, name="gru_cell"), 1),
        cell_case("simple_rnn_cell", L.SimpleRNNCell(U, name="simple_rnn_cell"), 1),
        stateful_case(),
    ]
    doc = {"keras_version": keras.__version__, "backend": keras.backend.backend(), "cases": cases}
    with open(out_path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"wrote {out_path}: {len(cases)} cases, {os.path.getsize(out_path)} bytes")
    write_models(os.path.dirname(os.path.abspath(out_path)))


if __name__ == "__main__":
    main()
