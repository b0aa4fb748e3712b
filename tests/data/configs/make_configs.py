#!/usr/bin/env python3
"""Model-config fixtures made by real Keras, for tests/keras/saving/test_model_config_keras.cpp.

Usage: python3 make_configs.py [OUTDIR]      (OUTDIR defaults to this script's directory)
Requires keras 3 (TensorFlow backend), tf_keras (Keras 2), h5py, numpy.

For every model below and each generation (k3 = `import keras`, k2 = `import tf_keras`) writes
NAME.GEN.json = {
  "keras_version": ...,
  "configs": {"GEN_json": model.to_json() parsed, "GEN_h5": the model_config attribute of model.save(".h5")},
  "weights": {layer name: [{"shape", "data"}...] | {"nested": {...}}}   (layer.get_weights(), by name),
  "inputs": [{"shape", "data"}], "outputs": [{"shape", "data"}]       (model.predict, inference mode)
}
The C++ test rebuilds each config with model_from_config, sets the weights by layer name and
compares its predictions with Keras's. Models cover Sequential, a CNN of most layer classes, two
inputs with a shared layer, nested Functional models (called twice, used as outputs), a nested
Sequential, shared layers at different depths, a frozen nested Sequential, and a zoo of the
remaining layer classes.
"""
import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import h5py  # noqa: E402
import numpy as np  # noqa: E402


def models(K, gen):
    L = K.layers
    yield "mlp", K.Sequential([K.Input((8,)), L.Dense(16, activation="relu"), L.Dropout(0.25),
                               L.Dense(4, activation="softmax")], name="mlp"), [(8,)]
    if gen == "k2":  # Keras 2 only: input_shape on the first layer
        yield "inshape", K.Sequential([L.Dense(5, input_shape=(3,), name="first"), L.LeakyReLU(name="lr")],
                                      name="inshape"), [(3,)]
    x = K.Input((8, 8, 3), name="img")
    y = L.Conv2D(4, 3, padding="same", name="c1")(x)
    y = L.BatchNormalization(name="bn")(y)
    y = L.ReLU(name="relu")(y)
    y = L.MaxPooling2D(2, name="pool")(y)
    y = L.SeparableConv2D(3, 3, name="sep")(y)
    y = L.DepthwiseConv2D(3, padding="same", name="dw")(y)
    y = L.Conv2DTranspose(2, 3, strides=2, name="ct")(y)
    y = L.ZeroPadding2D(1, name="zp")(y)
    y = L.Cropping2D(1, name="crop")(y)
    y = L.UpSampling2D(2, name="up")(y)
    y = L.GlobalAveragePooling2D(name="gap")(y)
    y = L.LayerNormalization(name="ln")(y)
    yield "cnn", K.Model(x, L.Dense(3, activation="softmax", name="out")(y), name="cnn"), [(8, 8, 3)]
    a, b = K.Input((3,), name="a"), K.Input((3,), name="b")
    shared = L.Dense(3, activation="tanh", name="shared")
    s = L.Add(name="add")([shared(a), shared(b)])
    c = L.Concatenate(name="cat")([s, a])
    d = L.Dot(axes=1, name="dot")([shared(a), b])
    yield "two_in", K.Model([a, b], [L.Dense(2, name="head")(c), d], name="two_in"), [(3,), (3,)]
    ii = K.Input((3,))
    inner = K.Model(ii, L.Dense(3, activation="relu", name="d_in")(ii), name="inner")
    x = K.Input((3,), name="x")
    y1 = inner(x)
    y2 = inner(y1)
    cat = L.Concatenate(name="cat")([y1, y2])
    yield "nested", K.Model(x, [y2, L.Dense(2, name="head")(cat)], name="outer"), [(3,)]
    ii = K.Input((3,))
    inner = K.Model(ii, L.Dense(3, name="d_in")(ii), name="inner")
    x = K.Input((3,), name="x")
    mid = K.Model(x, L.Dense(2, name="d_mid")(inner(x)), name="middle")
    seq = K.Sequential([K.Input((2,)), L.Dense(2, name="d_seq")], name="seq")
    x2 = K.Input((3,), name="x2")
    m = mid(x2)
    yield "nested2", K.Model(x2, [L.Dense(1, name="head")(seq(m)), m], name="outer2"), [(3,)]
    x = K.Input((3,), name="x")
    A, B = L.Dense(3, name="A"), L.Dense(3, name="B")
    yield "deep", K.Model(x, A(B(A(B(x)))), name="deep"), [(3,)]
    seq = K.Sequential([K.Input((4,)), L.Dense(3, name="s1")], name="inner_seq")
    x = K.Input((4,), name="x")
    yield "seq_out", K.Model(x, seq(x), name="seq_out"), [(4,)]
    x = K.Input((8, 3), name="seq_in")  # the remaining layer classes
    p = L.MaxPooling1D(2, name="mp1")(L.AveragePooling1D(2, name="ap1")(L.Conv1D(4, 3, padding="same", name="c1d")(x)))
    r = L.Reshape((2, 4), name="reshape")(L.Flatten(name="flat")(p))
    g1, g2 = L.GlobalAveragePooling1D(name="gap1")(r), L.GlobalMaxPooling1D(name="gmp1")(r)
    s, m = L.Subtract(name="sub")([g1, g2]), L.Multiply(name="mul")([g1, g2])
    y = L.Minimum(name="min")([L.Maximum(name="max")([L.Average(name="avg")([s, m]), g1]), g2])
    y = L.LeakyReLU(name="lrelu")(L.ELU(name="elu")(L.Activation("tanh", name="act")(y)))
    y = L.Softmax(name="softmax")(L.Dropout(0.3, name="drop")(L.Rescaling(0.5, offset=0.1, name="rescale")(y)))
    img = K.Input((6, 6, 2), name="img")
    z = L.GlobalMaxPooling2D(name="gmp2")(L.AveragePooling2D(2, name="ap2")(L.SpatialDropout2D(0.2, name="sdrop")(img)))
    yield "zoo", K.Model([x, img], [y, L.Dense(2, name="dz")(z)], name="zoo"), [(8, 3), (6, 6, 2)]
    bb = K.Sequential([K.Input((4,)), L.Dense(3, name="s1"), L.BatchNormalization(name="bn2")], name="bb")
    bb.trainable = False
    x = K.Input((4,), name="x")
    yield "frozen", K.Model(x, L.Dense(2, name="h")(bb(x, training=False)), name="frozen"), [(4,)]


def array_json(a):
    a = np.asarray(a, dtype=np.float32)
    return {"shape": list(a.shape), "data": [float(v) for v in a.ravel()]}


def weights(K, model):
    out = {}
    for layer in model.layers:
        if isinstance(layer, K.Model):
            out[layer.name] = {"nested": weights(K, layer)}
        elif layer.get_weights():
            out[layer.name] = [array_json(w) for w in layer.get_weights()]
    return out


def generate(K, gen, out):
    K.utils.set_random_seed(1234)
    rng = np.random.default_rng(1234)
    for name, model, shapes in models(K, gen):
        for layer in model.layers:  # BN statistics away from their initial values
            if isinstance(layer, K.layers.BatchNormalization):
                layer.set_weights([rng.uniform(0.5, 1.5, w.shape).astype("float32") for w in layer.get_weights()])
        xs = [rng.normal(size=(2,) + s).astype("float32") for s in shapes]
        ys = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
        ys = ys if isinstance(ys, list) else [ys]
        fd, path = tempfile.mkstemp(suffix=".h5")
        os.close(fd)
        try:
            model.save(path)
            with h5py.File(path, "r") as f:
                h5_config = json.loads(f.attrs["model_config"])
        finally:
            os.remove(path)
        doc = {"keras_version": K.__version__,
               "configs": {gen + "_json": json.loads(model.to_json()), gen + "_h5": h5_config},
               "weights": weights(K, model),
               "inputs": [array_json(x) for x in xs],
               "outputs": [array_json(y) for y in ys]}
        with open(os.path.join(out, "%s.%s.json" % (name, gen)), "w") as f:
            json.dump(doc, f)
        print("wrote %s.%s.json" % (name, gen))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    import keras
    generate(keras, "k3", out)
    import tf_keras
    generate(tf_keras, "k2", out)


if __name__ == "__main__":
    main()
