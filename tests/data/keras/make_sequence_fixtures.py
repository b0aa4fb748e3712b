#!/usr/bin/env python3
"""Sequence-model interop fixtures (issue 17), made by REAL Keras 3 and tf_keras 2.

Usage
  /work/keras-ref/bin/python tests/data/keras/make_sequence_fixtures.py [OUTDIR]
  # OUTDIR defaults to tests/data/keras/sequence next to this script
  ONLY=name,name ... remakes only those models (manifest.json keeps the others)

Requires keras 3 (TensorFlow backend), tf_keras 2, tensorflow, h5py, numpy. CPU only.

For every model NAME below, built once with each generation (`import keras`, `import tf_keras`),
its weights set to seeded random values (so biases, forget gates and recurrent kernels are not
their initial zeros/ones and a gate-order mistake shows), not trained:

  NAME.input<i>.npy        model input i, batch of 3, shared by both generations (int32 token ids
                           with padding zeros for token models, float32 otherwise)
  NAME.keras               Keras 3 model.save
  NAME.k3.h5               Keras 3 legacy HDF5 model.save
  NAME.weights.h5          Keras 3 model.save_weights
  NAME.k3.json             Keras 3 model.to_json()
  NAME.k3.output<i>.npy    Keras 3 prediction of output i
  NAME.k2.h5               tf_keras model.save (HDF5)
  NAME.k2.json             tf_keras model.to_json()
  NAME.k2.output<i>.npy    tf_keras prediction of output i
  manifest.json            versions, descriptions, input/output shapes, files and sizes

The two generations draw their own weights: compare a generation's files with its own outputs.
Layer names are explicit. `keyword_layers` uses three small custom layers (package
"keras_cpp_test", defined below for both generations; the C++ tests define the same classes) whose
calls pass tensors and options by keyword: KeywordScale.call(x, extra=None, scale=1.0) =
(x + extra) * scale, StateSum.call(x, states=None) = x + sum(states),
PairProduct.call(a, b, scale=1.0) = a * b * scale (two positional tensors). Every written file is
reloaded by the Keras that wrote it and must reproduce the outputs, except NAME.k3.h5 of the models
with masks: Keras 3.15 writes the operations that compute masks (NotEqual) into a legacy .h5 without
their module and cannot read them back. manifest.json's keras_facts record that, and which
cross-generation loads Keras manages (none for these models: Keras 3 refuses tf_keras's RNN key
time_major and keyword tensors in Keras 2 nodes; tf_keras refuses Keras 3's configs).
"""

import json
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

SEED = 17
BATCH = 3
RTOL = ATOL = 1e-5
PACKAGE = "keras_cpp_test"


def custom_layers(K):
    """The keyword-call test layers, registered in generation K."""
    register = K.saving.register_keras_serializable(package=PACKAGE)

    @register
    class KeywordScale(K.layers.Layer):
        def call(self, x, extra=None, scale=1.0):
            return (x if extra is None else x + extra) * scale

    @register
    class StateSum(K.layers.Layer):
        def call(self, x, states=None):
            for s in states or []:
                x = x + s
            return x

    @register
    class PairProduct(K.layers.Layer):
        def call(self, a, b, scale=1.0):
            return a * b * scale

    return {c.__name__: c for c in (KeywordScale, StateSum, PairProduct)}


# ---------------------------------------------------------------------------------------------
# Models: each builder takes the keras module K and returns the model.
# ---------------------------------------------------------------------------------------------

def build_text_classifier(K):
    L = K.layers
    ids = K.Input(shape=(6,), dtype="int32", name="tokens")
    x = L.Embedding(12, 4, mask_zero=True, name="embed")(ids)
    x = L.LSTM(5, name="lstm")(x)
    out = L.Dense(3, activation="softmax", name="head")(x)
    return K.Model(ids, out, name="text_classifier")


def build_bilstm_states(K):
    L = K.layers
    x_in = K.Input(shape=(5, 3), name="series")
    x = L.Bidirectional(L.LSTM(4, return_sequences=True, name="lstm1"), name="bi1")(x_in)
    x, fh, fc, bh, bc = L.Bidirectional(L.LSTM(3, return_state=True, name="lstm2"), name="bi2")(x)
    out = L.Dense(2, name="head")(x)
    return K.Model(x_in, [out, fh, fc, bh, bc], name="bilstm_states")


def build_gru_both(K):
    L = K.layers
    x_in = K.Input(shape=(5, 3), name="series")
    x = L.GRU(4, reset_after=True, return_sequences=True, name="gru_after")(x_in)
    x = L.GRU(3, reset_after=False, name="gru_before")(x)
    out = L.Dense(2, name="head")(x)
    return K.Model(x_in, out, name="gru_both")


def build_seq2seq(K):
    L = K.layers
    enc_in = K.Input(shape=(5, 3), name="encoder_in")
    dec_in = K.Input(shape=(4, 2), name="decoder_in")
    _, h, c = L.LSTM(4, return_state=True, name="encoder")(enc_in)
    y = L.LSTM(4, return_sequences=True, name="decoder")(dec_in, initial_state=[h, c])
    out = L.Dense(3, activation="softmax", name="head")(y)
    return K.Model([enc_in, dec_in], out, name="seq2seq")


def build_transformer_block(K):
    L = K.layers
    ids = K.Input(shape=(6,), dtype="int32", name="tokens")
    x = L.Embedding(16, 8, mask_zero=True, name="embed")(ids)
    attn = L.MultiHeadAttention(num_heads=2, key_dim=4, name="mha")(x, x, use_causal_mask=True)
    x = L.LayerNormalization(epsilon=1e-6, name="ln1")(L.Add(name="res1")([x, attn]))
    ff = L.Dense(16, activation="relu", name="ff1")(x)
    ff = L.Dense(8, name="ff2")(ff)
    x = L.LayerNormalization(epsilon=1e-6, name="ln2")(L.Add(name="res2")([x, ff]))
    x = L.GlobalAveragePooling1D(name="pool")(x)
    out = L.Dense(2, activation="softmax", name="head")(x)
    return K.Model(ids, out, name="transformer_block")


def build_gru_forecaster(K):
    L = K.layers
    x_in = K.Input(shape=(8, 2), name="history")
    x = L.GRU(6, return_sequences=True, name="gru1")(x_in)
    x = L.GRU(4, name="gru2")(x)
    out = L.Dense(3, name="forecast")(x)
    return K.Model(x_in, out, name="gru_forecaster")


def build_keyword_layers(K):
    C = custom_layers(K)
    x = K.Input(shape=(4,), name="x")
    e = K.Input(shape=(4,), name="e")
    y = C["KeywordScale"](name="scaled")(x, extra=e, scale=2.0)
    y = C["StateSum"](name="summed")(y, states=[x, e])
    y = C["PairProduct"](name="paired")(y, e, scale=0.5)
    only_option = C["KeywordScale"](name="negated")(e, scale=-1.0)
    y = K.layers.Add(name="add")([y, only_option])
    out = K.layers.Dense(3, name="head")(y)
    return K.Model([x, e], out, name="keyword_layers")


# tf_keras's ConvLSTM default recurrent_activation is its hard_sigmoid, clip(0.2 x + 0.5), which
# Keras 3 reads as its own relu6(x + 3) / 6: the ConvLSTM models name "sigmoid", so that each
# generation's files mean what its outputs show.
def build_conv_lstm2d_forecaster(K):
    L = K.layers
    x_in = K.Input(shape=(4, 6, 6, 2), name="frames")
    x = L.ConvLSTM2D(3, 3, padding="same", recurrent_activation="sigmoid", return_sequences=True, name="clstm1")(x_in)
    x = L.ConvLSTM2D(2, (2, 3), strides=(2, 1), use_bias=False, unit_forget_bias=False, go_backwards=True,
                     recurrent_activation="sigmoid", name="clstm2")(x)
    out = L.Conv2D(1, 1, name="next_frame")(x)
    return K.Model(x_in, out, name="conv_lstm2d_forecaster")


def build_conv_lstm1d(K):
    L = K.layers
    x_in = K.Input(shape=(5, 8, 3), name="signals")
    x = L.ConvLSTM1D(4, 3, dilation_rate=2, padding="same", recurrent_activation="sigmoid", return_sequences=True,
                      name="clstm1")(x_in)
    x, h, c = L.ConvLSTM1D(2, 2, strides=2, activation="relu", recurrent_activation="sigmoid", return_state=True,
                            name="clstm2")(x)
    out = L.Dense(2, name="head")(x)
    return K.Model(x_in, [out, h, c], name="conv_lstm1d")


def build_conv_lstm3d(K):
    L = K.layers
    x_in = K.Input(shape=(3, 4, 5, 3, 2), name="volumes")
    x = L.ConvLSTM3D(2, (2, 3, 2), padding="same", recurrent_activation="sigmoid", return_sequences=True,
                      name="clstm1")(x_in)
    x = L.ConvLSTM3D(2, 2, strides=(1, 2, 1), recurrent_activation="sigmoid", name="clstm2")(x)
    out = L.Dense(1, name="head")(L.Flatten(name="flat")(x))
    return K.Model(x_in, out, name="conv_lstm3d")


def build_masked_series(K):
    L = K.layers
    x_in = K.Input(shape=(5, 3), name="series")
    x = L.Masking(0.0, name="masking")(x_in)
    x = L.LSTM(4, return_sequences=True, name="lstm")(x)
    x = L.Add(name="res")([x, L.Dense(4, name="skip")(x)])
    x = L.GlobalAveragePooling1D(name="pool")(x)
    out = L.Dense(2, name="head")(x)
    return K.Model(x_in, out, name="masked_series")


def build_concat_masks(K):
    L = K.layers
    ids = K.Input(shape=(6,), dtype="int32", name="tokens")
    masked = L.Embedding(12, 3, mask_zero=True, name="embed_masked")(ids)
    # Both masked: with an unmasked input Keras 3's Concatenate mask is any(...) (all true),
    # tf_keras's all(...) (the other input's mask), so the generations would disagree.
    other = L.Embedding(12, 2, mask_zero=True, name="embed_other")(ids)
    x = L.Concatenate(name="concat")([masked, other])
    x = L.LSTM(4, name="lstm")(x)
    out = L.Dense(2, name="head")(x)
    return K.Model(ids, out, name="concat_masks")


def build_nested_masked(K):
    L = K.layers
    # The mask comes out of a nested model: Keras 3 records the LSTM's mask kwarg as null and
    # hands it the encoder output's mask at run time.
    inner_ids = K.Input(shape=(6,), dtype="int32", name="inner_tokens")
    encoder = K.Model(inner_ids, L.Embedding(12, 4, mask_zero=True, name="embed")(inner_ids), name="encoder")
    ids = K.Input(shape=(6,), dtype="int32", name="tokens")
    x = L.LSTM(5, name="lstm")(encoder(ids))
    out = L.Dense(3, activation="softmax", name="head")(x)
    return K.Model(ids, out, name="nested_masked")


def padded_series(rng, shape):
    """Float sequences whose padded steps are all zeros: one row padded at the end, one at the start."""
    x = floats(rng, shape)
    x[0, -2:] = 0.0
    x[1, :1] = 0.0
    return x


def tokens(rng, vocab, length):
    """Token ids with padding zeros: one row padded at the end, one at the start, one full."""
    ids = rng.integers(1, vocab, size=(BATCH, length)).astype(np.int32)
    ids[0, length - 2:] = 0
    ids[1, :2] = 0
    return ids


def floats(rng, shape):
    return rng.standard_normal((BATCH,) + shape).astype(np.float32)


MODELS = {
    "text_classifier": dict(build=build_text_classifier, inputs=lambda r: [tokens(r, 12, 6)],
                            desc="Embedding(12, 4, mask_zero) -> LSTM(5) -> Dense(3 softmax); padded ids"),
    "bilstm_states": dict(build=build_bilstm_states, inputs=lambda r: [floats(r, (5, 3))],
                          desc="Bidirectional(LSTM(4, return_sequences)) -> Bidirectional(LSTM(3, return_state));"
                               " outputs [Dense(2), forward h, forward c, backward h, backward c]"),
    "gru_both": dict(build=build_gru_both, inputs=lambda r: [floats(r, (5, 3))],
                     desc="GRU(4, reset_after=True, return_sequences) -> GRU(3, reset_after=False) -> Dense(2)"),
    "seq2seq": dict(build=build_seq2seq, inputs=lambda r: [floats(r, (5, 3)), floats(r, (4, 2))],
                    desc="LSTM(4, return_state) encoder; its [h, c] as initial_state of an LSTM(4,"
                         " return_sequences) decoder; Dense(3 softmax)"),
    "transformer_block": dict(build=build_transformer_block, inputs=lambda r: [tokens(r, 16, 6)],
                              desc="Embedding(16, 8, mask_zero), MultiHeadAttention(2 heads, key_dim 4,"
                                   " use_causal_mask), Add, LayerNormalization, Dense(16 relu), Dense(8), Add,"
                                   " LayerNormalization, GlobalAveragePooling1D, Dense(2 softmax); padded ids"),
    "gru_forecaster": dict(build=build_gru_forecaster, inputs=lambda r: [floats(r, (8, 2))],
                           desc="GRU(6, return_sequences) -> GRU(4) -> Dense(3): a 3-step forecast"),
    "keyword_layers": dict(build=build_keyword_layers, inputs=lambda r: [floats(r, (4,)), floats(r, (4,))],
                           desc="custom layers called with keyword tensors, a list keyword, options and two"
                                " positional tensors; Add; Dense(3)"),
    "masked_series": dict(build=build_masked_series, inputs=lambda r: [padded_series(r, (5, 3))],
                          desc="Masking(0.0) -> LSTM(4, return_sequences) -> Add with Dense(4) ->"
                               " GlobalAveragePooling1D -> Dense(2); zero-padded steps"),
    "concat_masks": dict(build=build_concat_masks, inputs=lambda r: [tokens(r, 12, 6)],
                         desc="Embedding(12, 3, mask_zero) and Embedding(12, 2, mask_zero) concatenated -> LSTM(4) ->"
                              " Dense(2);"
                              " padded ids"),
    "nested_masked": dict(build=build_nested_masked, inputs=lambda r: [tokens(r, 12, 6)],
                          desc="nested Model(Embedding(12, 4, mask_zero)) -> LSTM(5) -> Dense(3 softmax); padded ids"),
    "conv_lstm2d_forecaster": dict(build=build_conv_lstm2d_forecaster, inputs=lambda r: [floats(r, (4, 6, 6, 2))],
                                   desc="ConvLSTM2D(3, 3, same, return_sequences) -> ConvLSTM2D(2, (2, 3), strides (2, 1),"
                                        " no bias, go_backwards) -> Conv2D(1, 1): the next frame of 4"),
    "conv_lstm1d": dict(build=build_conv_lstm1d, inputs=lambda r: [floats(r, (5, 8, 3))],
                        desc="ConvLSTM1D(4, 3, dilation 2, same, return_sequences) -> ConvLSTM1D(2, 2, strides 2,"
                             " relu, return_state); outputs [Dense(2), h, c]"),
    "conv_lstm3d": dict(build=build_conv_lstm3d, inputs=lambda r: [floats(r, (3, 4, 5, 3, 2))],
                        desc="ConvLSTM3D(2, (2, 3, 2), same, return_sequences) -> ConvLSTM3D(2, 2, strides"
                             " (1, 2, 1)) -> Flatten -> Dense(1)"),
}


def as_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def predict(model, xs):
    y = model.predict(xs if len(xs) > 1 else xs[0], verbose=0, batch_size=BATCH)
    return [np.asarray(v, dtype=np.float32) for v in as_list(y)]


def randomize(model, seed):
    rng = np.random.default_rng(seed)
    model.set_weights([(0.4 * rng.standard_normal(w.shape)).astype(w.dtype) for w in model.get_weights()])


def check(what, got, want):
    for i, (a, b) in enumerate(zip(got, want)):
        if a.shape != b.shape or not np.all(np.abs(a - b) <= ATOL + RTOL * np.abs(b)):
            raise SystemExit("self-check failed: %s output %d" % (what, i))


def make_one(gen, K, name, spec, inputs, out, facts):
    K.backend.clear_session()
    K.utils.set_random_seed(SEED)
    custom = custom_layers(K)
    model = spec["build"](K)
    randomize(model, SEED + (3 if gen == "k3" else 5))
    outputs = predict(model, inputs)
    p = lambda suffix: os.path.join(out, name + suffix)  # noqa: E731
    files = []
    if gen == "k3":
        model.save(p(".keras"))
        model.save_weights(p(".weights.h5"))
        files += [name + ".keras", name + ".weights.h5"]
    model.save(p(".%s.h5" % gen))
    with open(p(".%s.json" % gen), "w") as f:
        f.write(model.to_json())
    files += ["%s.%s.h5" % (name, gen), "%s.%s.json" % (name, gen)]
    for i, o in enumerate(outputs):
        np.save(p(".%s.output%d.npy" % (gen, i)), o)
        files.append("%s.%s.output%d.npy" % (name, gen, i))
    if gen == "k3":
        check("k3 .keras", predict(K.saving.load_model(p(".keras"), custom_objects=custom), inputs), outputs)
        try:  # Keras 3.15 cannot read back the mask operations (NotEqual) its legacy .h5 writes
            check("k3 .h5", predict(K.saving.load_model(p(".k3.h5"), custom_objects=custom), inputs), outputs)
            facts["keras3 reloads k3.h5"] = "ok"
        except Exception as e:
            facts["keras3 reloads k3.h5"] = "fails: %s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:160])
        m = K.models.model_from_json(open(p(".k3.json")).read(), custom_objects=custom)
        m.load_weights(p(".weights.h5"))
        check("k3 json+weights.h5", predict(m, inputs), outputs)
    else:
        check("k2 .h5", predict(K.models.load_model(p(".k2.h5"), custom_objects=custom), inputs), outputs)
    return files, [list(o.shape) for o in outputs]


def cross_loads(keras, tf_keras, name, inputs, out, facts):
    """Records which cross-generation loads Keras itself manages (facts, not failures)."""
    p = lambda suffix: os.path.join(out, name + suffix)  # noqa: E731
    trials = {"keras3 loads k2.h5": (lambda: keras.saving.load_model(
                  p(".k2.h5"), custom_objects=custom_layers(keras)), "k2"),
              "tf_keras loads k3.h5": (lambda: tf_keras.models.load_model(
                  p(".k3.h5"), custom_objects=custom_layers(tf_keras)), "k3")}
    for what, (load, gen) in trials.items():
        keras.backend.clear_session()
        tf_keras.backend.clear_session()
        try:
            got = predict(load(), inputs)
            want = [np.load(p(".%s.output%d.npy" % (gen, i))) for i in range(len(got))]
            same = all(a.shape == b.shape and np.all(np.abs(a - b) <= ATOL + RTOL * np.abs(b))
                       for a, b in zip(got, want))
            facts[what] = "ok" if same else "loads, predictions differ"
        except Exception as e:
            facts[what] = "fails: %s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:160])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "sequence")
    os.makedirs(out, exist_ok=True)
    import tensorflow as tf
    tf.config.set_visible_devices([], "GPU")
    import h5py
    import keras
    import tf_keras
    manifest = {"versions": {"keras": keras.__version__, "tf_keras": tf_keras.__version__,
                             "tensorflow": tf.__version__, "h5py": h5py.__version__, "numpy": np.__version__},
                "seed": SEED, "tolerance": {"rtol": RTOL, "atol": ATOL}, "models": {}}
    only = set(os.environ.get("ONLY", "").split(",")) - {""}
    for name, spec in MODELS.items():
        if only and name not in only:
            continue
        inputs = spec["inputs"](np.random.default_rng(SEED + 7))
        files = []
        for i, x in enumerate(inputs):
            np.save(os.path.join(out, "%s.input%d.npy" % (name, i)), x)
            files.append("%s.input%d.npy" % (name, i))
        facts = {}
        f3, shapes = make_one("k3", keras, name, spec, inputs, out, facts)
        f2, _ = make_one("k2", tf_keras, name, spec, inputs, out, facts)
        cross_loads(keras, tf_keras, name, inputs, out, facts)
        files += f3 + f2
        sizes = {f: os.path.getsize(os.path.join(out, f)) for f in files}
        manifest["models"][name] = {"description": spec["desc"],
                                    "input_shapes": [list(x.shape) for x in inputs],
                                    "input_dtypes": [str(x.dtype) for x in inputs],
                                    "output_shapes": shapes, "keras_facts": facts, "files": sizes}
        print("%-18s %2d files, %7d bytes" % (name, len(files), sum(sizes.values())), flush=True)
    if only:  # keep the other models' entries
        path = os.path.join(out, "manifest.json")
        old = json.load(open(path)) if os.path.exists(path) else {"models": {}}
        old["models"].update(manifest["models"])
        manifest = dict(manifest, models=old["models"])
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
