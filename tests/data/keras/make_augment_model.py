"""Writes augment.keras (+ augment.input0.npy, augment.output0.npy, named as `make_fixtures.py
verify` reads them) into this directory: a model with every image preprocessing layer keras-cpp
implements in front of a small conv head, saved by real Keras 3 (3.15.1, TensorFlow backend, CPU),
and its inference outputs (the Random* layers are the identity at inference; CenterCrop and
Resizing apply).

    CUDA_VISIBLE_DEVICES= python3 tests/data/keras/make_augment_model.py
"""
import os

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
import numpy as np
import keras

here = os.path.dirname(os.path.abspath(__file__))
keras.utils.set_random_seed(3)
L = keras.layers
inputs = keras.Input((10, 12, 3))
x = L.RandomFlip("horizontal", seed=1)(inputs)
x = L.RandomRotation(0.1, fill_mode="constant", seed=2)(x)
x = L.RandomZoom(0.2, (-0.1, 0.1), seed=3)(x)
x = L.RandomTranslation(0.1, 0.2, fill_mode="nearest", seed=4)(x)
x = L.RandomContrast(0.3, value_range=(0, 1), seed=5)(x)
x = L.RandomBrightness(0.2, value_range=(0, 1), seed=6)(x)
x = L.RandomCrop(9, 11, seed=7)(x)  # the identity at inference in Keras 3 (10 x 12 passes)
x = L.CenterCrop(8, 9)(x)
x = L.Resizing(6, 7, interpolation="bilinear")(x)
x = L.Conv2D(4, 3, activation="relu")(x)
x = L.GlobalAveragePooling2D()(x)
outputs = L.Dense(3)(x)
model = keras.Model(inputs, outputs, name="augment")
sample = np.random.default_rng(0).uniform(size=(2, 10, 12, 3)).astype("float32")
model.save(os.path.join(here, "augment.keras"))
np.save(os.path.join(here, "augment.input0.npy"), sample)
np.save(os.path.join(here, "augment.output0.npy"), model.predict(sample, verbose=0))
