"""Writes sequence_basics.json into this directory: what real
Keras 3 (3.15.1, TensorFlow backend, CPU) does with the embedding, masking and 1-D shape layers.

    CUDA_VISIBLE_DEVICES= /work/keras-ref/bin/python tests/data/keras/make_sequence_basics_reference.py

sequence_basics.json:
  configs  : {case: {"class_name", "config"}}: get_config() of each layer built with the options
             in the case's name, so the C++ config can be compared key for key.
  configs_k2: the same for tf_keras 2 (Keras 2), for the cases it has.
  models   : {case: Model.to_json()} of Input -> layer (what a saved functional model records:
             build_config, node kwargs), for every new class.
  cases    : {case: {"inputs": [...], "weights": [...], "outputs": [...], "masks": [...]}}: eager
             calls on fixed inputs and weights (arrays as {"shape", "dtype", "data"}); "masks" are
             the output masks Keras attaches (null where none); "error" instead of outputs where
             Keras refuses the call. Masks of inputs are made by a
             Masking or Embedding(mask_zero) layer in front, as in a model.
  text_classifier: Input(int32, (None,)) -> Embedding(12, 4, mask_zero) -> GlobalAveragePooling1D
             -> Dense(3, softmax) with random weights: its weights, padded inputs and Keras's
             predictions, and each row's prediction without its padding.
"""
import json
import os

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
import numpy as np
import keras
from keras import ops

L = keras.layers
here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(17)


def arr(a):
    a = np.asarray(a)
    dtype = "bool" if a.dtype == bool else str(a.dtype)
    data = a.astype(np.float64 if dtype.startswith("float") else np.int64).ravel().tolist()
    return {"shape": list(a.shape), "dtype": dtype, "data": data}


def mask_of(t):
    m = getattr(t, "_keras_mask", None)  # keras.src.backend.get_keras_mask
    return None if m is None else arr(ops.convert_to_numpy(m))


configs = {}


def config(case, layer):
    configs[case] = {"class_name": layer.__class__.__name__, "config": layer.get_config()}


config("Embedding", L.Embedding(10, 4, name="layer"))
config("Embedding_mask_zero", L.Embedding(10, 4, mask_zero=True, name="layer"))
config("Embedding_options", L.Embedding(
    7, 3, embeddings_initializer=keras.initializers.RandomNormal(stddev=0.5, seed=3),
    embeddings_regularizer=keras.regularizers.L2(0.01), embeddings_constraint=keras.constraints.MaxNorm(2.0),
    name="layer"))
config("Masking", L.Masking(name="layer"))
config("Masking_value", L.Masking(mask_value=-1.5, name="layer"))
config("RepeatVector", L.RepeatVector(3, name="layer"))
config("Permute", L.Permute((2, 1), name="layer"))
config("Permute_3d", L.Permute((3, 1, 2), name="layer"))
config("Cropping1D", L.Cropping1D(name="layer"))
config("Cropping1D_pair", L.Cropping1D((2, 0), name="layer"))
config("ZeroPadding1D", L.ZeroPadding1D(name="layer"))
config("ZeroPadding1D_pair", L.ZeroPadding1D((0, 2), name="layer"))
config("UpSampling1D", L.UpSampling1D(name="layer"))
config("UpSampling1D_3", L.UpSampling1D(3, name="layer"))
config("Identity", L.Identity(name="layer"))

# The same layers as tf_keras 2 (Keras 2 files) configures them, for the cases both generations have.
import tf_keras

K2 = tf_keras.layers
configs_k2 = {}
for case, layer in [
    ("Embedding", K2.Embedding(10, 4, name="layer")),
    ("Embedding_mask_zero", K2.Embedding(10, 4, mask_zero=True, name="layer")),
    ("Embedding_options", K2.Embedding(
        7, 3, embeddings_initializer=tf_keras.initializers.RandomNormal(stddev=0.5, seed=3),
        embeddings_regularizer=tf_keras.regularizers.L2(0.01), embeddings_constraint=tf_keras.constraints.MaxNorm(2.0),
        name="layer")),
    ("Masking_value", K2.Masking(mask_value=-1.5, name="layer")),
    ("RepeatVector", K2.RepeatVector(3, name="layer")), ("Permute_3d", K2.Permute((3, 1, 2), name="layer")),
    ("Cropping1D_pair", K2.Cropping1D((2, 0), name="layer")), ("ZeroPadding1D_pair", K2.ZeroPadding1D((0, 2), name="layer")),
    ("UpSampling1D_3", K2.UpSampling1D(3, name="layer")),
]:
    configs_k2[case] = {"class_name": layer.__class__.__name__, "config": layer.get_config()}

seq = (5, 3)
single = {
    "Embedding": (lambda **k: L.Embedding(10, 4, **k), (5,), "int32"),
    "Embedding_mask_zero": (lambda **k: L.Embedding(10, 4, mask_zero=True, **k), (5,), "int32"),
    "Masking": (lambda **k: L.Masking(**k), seq, "float32"),
    "RepeatVector": (lambda **k: L.RepeatVector(3, **k), (4,), "float32"),
    "Permute": (lambda **k: L.Permute((2, 1), **k), seq, "float32"),
    "Cropping1D": (lambda **k: L.Cropping1D(**k), seq, "float32"),
    "ZeroPadding1D": (lambda **k: L.ZeroPadding1D(**k), seq, "float32"),
    "UpSampling1D": (lambda **k: L.UpSampling1D(**k), seq, "float32"),
    "Identity": (lambda **k: L.Identity(**k), seq, "float32"),
}
models = {}
for name, (make, shape, dtype) in single.items():
    x = keras.Input(shape, dtype=dtype, name="x")
    models[name] = json.loads(keras.Model(x, make(name="layer")(x), name=name).to_json())

cases = {}
ids = np.array([[3, 1, 0, 0, 0], [9, 2, 7, 4, 0]], dtype="int32")
table = rng.normal(size=(10, 4)).astype("float32")

emb = L.Embedding(10, 4, mask_zero=True)
emb.build()
emb.set_weights([table])
y = emb(ids)
cases["Embedding_mask_zero"] = {"inputs": [arr(ids)], "weights": [arr(table)], "outputs": [arr(y)], "masks": [mask_of(y)]}
y64 = emb(ids.astype("int64"))
cases["Embedding_int64"] = {"inputs": [arr(ids.astype("int64"))], "weights": [arr(table)], "outputs": [arr(y64)],
                            "masks": [mask_of(y64)]}
fids = np.array([[3.0, 1.7, 0.0], [9.9, 2.2, 7.5]], dtype="float32")
yf = L.Embedding(10, 4, weights=table)(fids)
cases["Embedding_float_ids"] = {"inputs": [arr(fids)], "weights": [arr(table)], "outputs": [arr(yf)], "masks": [mask_of(yf)]}

# Embedding(mask_zero) -> GlobalAveragePooling1D: the mean over the real tokens only.
gap = L.GlobalAveragePooling1D()(y)
cases["GlobalAveragePooling1D_masked"] = {"inputs": [arr(ids)], "weights": [arr(table)], "outputs": [arr(gap)],
                                          "masks": [mask_of(gap)]}
gmp = L.GlobalMaxPooling1D()(y)
cases["GlobalMaxPooling1D_masked"] = {"inputs": [arr(ids)], "weights": [arr(table)], "outputs": [arr(gmp)],
                                      "masks": [mask_of(gmp)]}

xs = rng.normal(size=(2, 4, 3)).astype("float32")
xs[0, 1, :] = 0.0
xs[1, 3, :] = 0.0
xs[1, 0, 1] = 0.0  # one zero feature does not mask the step
masked = L.Masking()(xs)
cases["Masking"] = {"inputs": [arr(xs)], "weights": [], "outputs": [arr(masked)], "masks": [mask_of(masked)]}
xv = xs.copy()
xv[0, 2, :] = -1.5
masked_v = L.Masking(mask_value=-1.5)(xv)
cases["Masking_value"] = {"inputs": [arr(xv)], "weights": [], "outputs": [arr(masked_v)], "masks": [mask_of(masked_v)]}

# Layers after a Masking: which pass the mask on, which compute their own, which drop it.
after = {
    "Dense": L.Dense(2, kernel_initializer="ones", bias_initializer="zeros"),
    "Activation": L.Activation("tanh"), "ReLU": L.ReLU(), "LeakyReLU": L.LeakyReLU(), "ELU": L.ELU(),
    "Dropout": L.Dropout(0.5), "LayerNormalization": L.LayerNormalization(),
    "BatchNormalization": L.BatchNormalization(), "Rescaling": L.Rescaling(2.0),
    "Identity": L.Identity(), "Softmax": L.Softmax(),
    "RepeatVector_flat": None, "Permute": L.Permute((2, 1)), "Cropping1D": L.Cropping1D(),
    "ZeroPadding1D": L.ZeroPadding1D(), "UpSampling1D": L.UpSampling1D(),
    "Flatten": L.Flatten(), "Reshape": L.Reshape((12,)), "Reshape_same": L.Reshape((4, 3)),
}
for name, layer in after.items():
    if layer is None:
        continue
    try:
        out = layer(masked)
    except ValueError as e:  # Softmax: a (batch, steps) mask does not broadcast from the right
        cases["after_masking_" + name] = {"inputs": [arr(xs)], "error": str(e).splitlines()[0]}
        continue
    cases["after_masking_" + name] = {"inputs": [arr(xs)], "weights": [arr(w) for w in layer.get_weights()],
                                      "outputs": [arr(out)], "masks": [mask_of(out)]}

# Softmax with an explicit mask broadcast from the right (masked entries get 0).
logits = rng.normal(size=(2, 3, 4)).astype("float32")
smask = np.array([[True, False, True, True], [False, False, False, False], [True, True, False, True]])
ysm = L.Softmax()(logits, mask=smask)
cases["Softmax_mask"] = {"inputs": [arr(logits), arr(smask)], "weights": [], "outputs": [arr(ysm)], "masks": [mask_of(ysm)]}

# BatchNormalization in training with a mask: moments over the unmasked steps only.
bn = L.BatchNormalization(momentum=0.5)
bx = rng.normal(size=(2, 4, 3)).astype("float32") * 2 + 1
bmask = np.array([[True, True, False, False], [True, True, True, False]])
by = bn(bx, training=True, mask=bmask)
cases["BatchNormalization_training_mask"] = {
    "inputs": [arr(bx), arr(bmask)], "weights": [arr(w) for w in bn.get_weights()], "outputs": [arr(by)],
    "masks": [mask_of(by)]}

# Merges of masked inputs: OR of the masks (none when one input has none); Concatenate's masks.
xa = rng.normal(size=(2, 4, 3)).astype("float32")
xb = rng.normal(size=(2, 4, 3)).astype("float32")
xa[0, 0, :] = 0.0
xa[1, 2, :] = 0.0
xb[0, 0, :] = 0.0
xb[0, 3, :] = 0.0
ma, mb = L.Masking()(xa), L.Masking()(xb)
for name in ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate"]:
    out = getattr(L, name)()([ma, mb])
    cases["merge_" + name] = {"inputs": [arr(xa), arr(xb)], "weights": [], "outputs": [arr(out)], "masks": [mask_of(out)]}
out = L.Add()([ma, xb])
cases["merge_Add_one_unmasked"] = {"inputs": [arr(xa), arr(xb)], "weights": [], "outputs": [arr(out)], "masks": [mask_of(out)]}
out = L.Concatenate(axis=1)([ma, xb])
cases["merge_Concatenate_axis1_one_unmasked"] = {"inputs": [arr(xa), arr(xb)], "weights": [], "outputs": [arr(out)],
                                                 "masks": [mask_of(out)]}
out = L.Concatenate()([ma, xb])
cases["merge_Concatenate_one_unmasked"] = {"inputs": [arr(xa), arr(xb)], "weights": [], "outputs": [arr(out)],
                                           "masks": [mask_of(out)]}
out = L.Dot(axes=2)([ma, mb])
cases["merge_Dot"] = {"inputs": [arr(xa), arr(xb)], "weights": [], "outputs": [arr(out)], "masks": [mask_of(out)]}

# The shape layers on plain inputs.
x3 = rng.normal(size=(2, 5, 3)).astype("float32")
x2 = rng.normal(size=(2, 4)).astype("float32")
x4 = rng.normal(size=(2, 2, 3, 4)).astype("float32")
for name, layer, x in [
    ("RepeatVector", L.RepeatVector(3), x2), ("Permute", L.Permute((2, 1)), x3),
    ("Permute_3d", L.Permute((3, 1, 2)), x4), ("Cropping1D", L.Cropping1D(), x3),
    ("Cropping1D_pair", L.Cropping1D((2, 0)), x3), ("ZeroPadding1D", L.ZeroPadding1D(), x3),
    ("ZeroPadding1D_pair", L.ZeroPadding1D((0, 2)), x3), ("UpSampling1D", L.UpSampling1D(), x3),
    ("UpSampling1D_3", L.UpSampling1D(3), x3),
]:
    y = layer(x)
    cases[name] = {"inputs": [arr(x)], "weights": [], "outputs": [arr(y)], "masks": [mask_of(y)]}

# The text classifier of issue 17: Keras's predictions for fixed weights, padded and unpadded.
# (Keras's own .keras/.h5 files of such models, with their recorded mask operations, are the
# saving fixtures of make_sequence_fixtures.py.)
keras.utils.set_random_seed(17)
inp = keras.Input((None,), dtype="int32", name="tokens")
h = L.Embedding(12, 4, mask_zero=True, embeddings_initializer=keras.initializers.RandomNormal(stddev=1.0),
                name="embedding")(inp)
h = L.GlobalAveragePooling1D(name="pool")(h)
out = L.Dense(3, activation="softmax", name="classifier")(h)
model = keras.Model(inp, out, name="text_classifier")
tokens = np.array([[5, 2, 11, 0, 0, 0], [1, 0, 0, 0, 0, 0], [3, 4, 5, 6, 7, 8]], dtype="int32")
text_classifier = {
    "inputs": [arr(tokens)], "weights": [arr(w) for w in model.get_weights()],
    "outputs": [arr(model.predict(tokens, verbose=0))],
    "unpadded_outputs": [arr(model.predict(tokens[i:i + 1, :n], verbose=0)) for i, n in enumerate([3, 1, 6])],
}

with open(os.path.join(here, "sequence_basics.json"), "w") as f:
    json.dump({"keras_version": keras.__version__, "tf_keras_version": tf_keras.__version__, "configs": configs,
               "configs_k2": configs_k2, "models": models, "cases": cases,
               "text_classifier": text_classifier}, f, separators=(",", ":"))
print("wrote", len(configs), "configs,", len(models), "models,", len(cases), "cases")
