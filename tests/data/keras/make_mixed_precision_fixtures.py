#!/usr/bin/env python3
"""Mixed-precision interop fixtures, made by REAL Keras 3 and tf_keras 2.

Usage
  /work/keras-ref/bin/python tests/data/keras/make_mixed_precision_fixtures.py [OUTDIR]
  # OUTDIR defaults to tests/data/keras/mixed next to this script

One small convnet per generation, built under a global mixed policy (Keras 3: mixed_bfloat16,
tf_keras: mixed_float16, the policy tf_keras users of GPUs save), its last Dense kept float32 as
the Keras mixed-precision guide says, compiled with Adam and trained 2 epochs on seeded random
data so BatchNormalization statistics and weights move:

  Input(10, 10, 3) Conv2D(8, 3, relu) BatchNormalization MaxPooling2D Conv2D(8, 3)
  GlobalAveragePooling2D Dense(16, relu) Dense(4, softmax, dtype float32)

Files: mixed.input0.npy (float32, batch 5), mixed_bf16.keras (Keras 3 model.save) with
mixed_bf16.output0.npy, mixed_f16.k2.h5 (tf_keras model.save) with mixed_f16.k2.output0.npy, and
manifest.json (versions, policies, each layer's saved dtype policy).
"""

import json
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "0")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

SEED = 5


def build(K, policy):
    K.mixed_precision.set_global_policy(policy)
    L = K.layers
    model = K.Sequential([
        K.Input((10, 10, 3)),
        L.Conv2D(8, 3, activation="relu", name="conv_a"),
        L.BatchNormalization(name="bn"),
        L.MaxPooling2D(name="pool"),
        L.Conv2D(8, 3, name="conv_b"),
        L.GlobalAveragePooling2D(name="gap"),
        L.Dense(16, activation="relu", name="hidden"),
        L.Dense(4, activation="softmax", dtype="float32", name="probs"),
    ], name="mixed")
    model.compile(optimizer=K.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(64, 10, 10, 3)).astype("float32")
    y = rng.integers(0, 4, size=(64,))
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    K.mixed_precision.set_global_policy("float32")
    return model


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "mixed")
    os.makedirs(out, exist_ok=True)
    import keras
    import tensorflow as tf
    import tf_keras

    keras.utils.set_random_seed(SEED)
    x = np.random.default_rng(SEED + 1).normal(size=(5, 10, 10, 3)).astype("float32")
    np.save(os.path.join(out, "mixed.input0.npy"), x)
    manifest = {"keras": keras.__version__, "tensorflow": tf.__version__, "tf_keras": tf_keras.__version__,
                "models": {}}

    m3 = build(keras, "mixed_bfloat16")
    path = os.path.join(out, "mixed_bf16.keras")
    m3.save(path)
    y3 = np.asarray(m3.predict(x, verbose=0), dtype="float32")
    np.save(os.path.join(out, "mixed_bf16.output0.npy"), y3)
    back = keras.models.load_model(path)
    np.testing.assert_allclose(np.asarray(back.predict(x, verbose=0), dtype="float32"), y3, rtol=1e-6, atol=1e-6)
    manifest["models"]["mixed_bf16.keras"] = {l.name: l.dtype_policy.name for l in m3.layers}

    tf_keras.utils.set_random_seed(SEED)
    m2 = build(tf_keras, "mixed_float16")
    path = os.path.join(out, "mixed_f16.k2.h5")
    m2.save(path)
    y2 = np.asarray(m2.predict(x, verbose=0), dtype="float32")
    np.save(os.path.join(out, "mixed_f16.k2.output0.npy"), y2)
    manifest["models"]["mixed_f16.k2.h5"] = {l.name: l.dtype_policy.name for l in m2.layers}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
