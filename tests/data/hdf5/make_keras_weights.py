"""Writes real-Keras weight files the weight readers are checked against.

The model (same as tests/support/weights_models.h `nested()`):
    input(4) -> inner = Sequential[Dense(3) frozen, BatchNormalization, Dense(2)] -> Dense "head"(2)
trained for two steps with Adam, so that BatchNormalization statistics and optimizer slots are
non-trivial. Files:
    keras3_nested.weights.h5   Keras 3 save_weights (the weights tree, with optimizer/vars)
    tf_keras_nested.h5         tf_keras (Keras 2) save_weights, the legacy layout
    tf_keras_nested_full.h5    tf_keras model.save: /model_weights and /optimizer_weights
    nested_expected.h5         x (3, 4) and each model's predict(x) in inference mode
Run from this directory: python3 make_keras_weights.py (needs keras 3, tf_keras, h5py, numpy).
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import h5py
import numpy as np

rng = np.random.default_rng(7)
x_train = rng.normal(size=(16, 4)).astype("float32")
y_train = rng.normal(size=(16, 2)).astype("float32")
x_test = rng.normal(size=(3, 4)).astype("float32")


def build(k, input_layer):
    inner = k.Sequential([input_layer, k.layers.Dense(3), k.layers.BatchNormalization(), k.layers.Dense(2)],
                         name="inner")
    inner.layers[0].trainable = False
    inp = k.Input((4,))
    model = k.Model(inp, k.layers.Dense(2, name="head")(inner(inp)))
    model.compile(optimizer=k.optimizers.Adam(learning_rate=0.01), loss="mse")
    # Non-trivial BatchNormalization parameters, then two training steps.
    bn = inner.layers[1]
    bn.set_weights([rng.uniform(0.5, 1.5, 3).astype("float32"), rng.normal(size=3).astype("float32"),
                    rng.normal(size=3).astype("float32"), rng.uniform(0.5, 2.0, 3).astype("float32")])
    model.fit(x_train, y_train, batch_size=8, epochs=1, verbose=0)
    return model


import keras  # noqa: E402

k3 = build(keras, keras.Input((4,)))
k3.save_weights("keras3_nested.weights.h5")

import tf_keras  # noqa: E402

k2 = build(tf_keras, tf_keras.layers.InputLayer((4,)))
k2.save_weights("tf_keras_nested.h5")
k2.save("tf_keras_nested_full.h5")

with h5py.File("nested_expected.h5", "w") as f:
    f["x"] = x_test
    f["keras3"] = k3.predict(x_test, verbose=0)
    f["tf_keras"] = k2.predict(x_test, verbose=0)
