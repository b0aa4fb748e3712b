"""Writes call_records.json into this directory: for every layer class keras-cpp implements, the
to_json() of a small functional model Input -> layer (two inputs for the merges), as real Keras 3
(3.15.1, TensorFlow backend, CPU) writes it, plus calls whose kwargs Keras records differently:
explicit `training`, inputs of another dtype, nested Functional and Sequential models (one and
two inputs, with and without `training`). What it settles, per class: whether the layer entry has
a build_config (Keras records one unless the class is built at construction) and which call
defaults the node's kwargs hold (layers/keras_signature.h).

    CUDA_VISIBLE_DEVICES= python3 tests/data/keras/make_call_records.py
"""
import json
import os

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
import keras
from keras.src.applications.convnext import LayerScale, StochasticDepth
from keras.src.applications.inception_resnet_v2 import CustomScaleLayer

L = keras.layers
here = os.path.dirname(os.path.abspath(__file__))
img, seq, vec = (8, 8, 3), (6, 3), (4,)

single = {
    "Activation": (lambda **k: L.Activation("relu", **k), img), "AveragePooling1D": (lambda **k: L.AveragePooling1D(2, **k), seq),
    "AveragePooling2D": (lambda **k: L.AveragePooling2D(2, **k), img), "BatchNormalization": (lambda **k: L.BatchNormalization(**k), img),
    "CenterCrop": (lambda **k: L.CenterCrop(4, 4, **k), img), "Conv1D": (lambda **k: L.Conv1D(2, 3, **k), seq),
    "Conv2D": (lambda **k: L.Conv2D(2, 3, **k), img), "Conv2DTranspose": (lambda **k: L.Conv2DTranspose(2, 3, **k), img),
    "Cropping2D": (lambda **k: L.Cropping2D(1, **k), img), "Dense": (lambda **k: L.Dense(2, **k), vec),
    "DepthwiseConv2D": (lambda **k: L.DepthwiseConv2D(3, **k), img), "Dropout": (lambda **k: L.Dropout(0.5, **k), vec),
    "ELU": (lambda **k: L.ELU(**k), vec), "Flatten": (lambda **k: L.Flatten(**k), img),
    "GlobalAveragePooling1D": (lambda **k: L.GlobalAveragePooling1D(**k), seq),
    "GlobalAveragePooling2D": (lambda **k: L.GlobalAveragePooling2D(**k), img),
    "GlobalMaxPooling1D": (lambda **k: L.GlobalMaxPooling1D(**k), seq), "GlobalMaxPooling2D": (lambda **k: L.GlobalMaxPooling2D(**k), img),
    "LayerNormalization": (lambda **k: L.LayerNormalization(**k), vec), "LeakyReLU": (lambda **k: L.LeakyReLU(**k), vec),
    "MaxPooling1D": (lambda **k: L.MaxPooling1D(2, **k), seq), "MaxPooling2D": (lambda **k: L.MaxPooling2D(2, **k), img),
    "Normalization": (lambda **k: L.Normalization(mean=0.5, variance=2.0, **k), vec),
    "RandomBrightness": (lambda **k: L.RandomBrightness(0.1, seed=1, **k), img),
    "RandomContrast": (lambda **k: L.RandomContrast(0.1, seed=1, **k), img), "RandomCrop": (lambda **k: L.RandomCrop(4, 4, seed=1, **k), img),
    "RandomFlip": (lambda **k: L.RandomFlip(seed=1, **k), img), "RandomRotation": (lambda **k: L.RandomRotation(0.1, seed=1, **k), img),
    "RandomTranslation": (lambda **k: L.RandomTranslation(0.1, 0.1, seed=1, **k), img),
    "RandomZoom": (lambda **k: L.RandomZoom(0.1, seed=1, **k), img), "ReLU": (lambda **k: L.ReLU(**k), vec),
    "Rescaling": (lambda **k: L.Rescaling(0.5, **k), img), "Reshape": (lambda **k: L.Reshape((2, 2), **k), vec),
    "Resizing": (lambda **k: L.Resizing(4, 4, **k), img), "SeparableConv2D": (lambda **k: L.SeparableConv2D(2, 3, **k), img),
    "Softmax": (lambda **k: L.Softmax(**k), vec), "SpatialDropout2D": (lambda **k: L.SpatialDropout2D(0.5, **k), img),
    "UpSampling2D": (lambda **k: L.UpSampling2D(**k), img), "ZeroPadding2D": (lambda **k: L.ZeroPadding2D(**k), img),
    "LayerScale": (lambda **k: LayerScale(1e-6, 3, **k), img), "StochasticDepth": (lambda **k: StochasticDepth(0.1, **k), img),
}
# name -> (layer factory, input shape, input dtype, call kwargs)
calls = {name: (make, shape, "float32", {}) for name, (make, shape) in single.items()}
calls.update({
    "BatchNormalization_training_false": (lambda **k: L.BatchNormalization(**k), img, "float32", {"training": False}),
    "Dropout_training_true": (lambda **k: L.Dropout(0.5, seed=1, **k), vec, "float32", {"training": True}),
    "Dense_training_true": (lambda **k: L.Dense(2, **k), vec, "float32", {"training": True}),
    "Softmax_training_true": (lambda **k: L.Softmax(**k), vec, "float32", {"training": True}),
    "RandomFlip_training_false": (lambda **k: L.RandomFlip(seed=1, **k), img, "float32", {"training": False}),
    "Resizing_int32": (lambda **k: L.Resizing(4, 4, **k), img, "int32", {}),
    "RandomFlip_int32": (lambda **k: L.RandomFlip(seed=1, **k), img, "int32", {}),
})

records = {}
for name, (make, shape, dtype, kwargs) in sorted(calls.items()):
    inputs = keras.Input(shape, dtype=dtype, name="x")
    records[name] = json.loads(keras.Model(inputs, make(name="layer")(inputs, **kwargs), name=name).to_json())

for name in ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "Dot"]:
    a, b = keras.Input(vec, name="a"), keras.Input(vec, name="b")
    layer = getattr(L, name)(name="layer", **({"axes": 1} if name == "Dot" else {}))
    records[name] = json.loads(keras.Model([a, b], layer([a, b]), name=name).to_json())
CustomScaleLayer_inputs = [keras.Input((4, 4, 2), name="a"), keras.Input((4, 4, 2), name="b")]
records["CustomScaleLayer"] = json.loads(keras.Model(
    CustomScaleLayer_inputs, CustomScaleLayer(0.5, name="layer")(CustomScaleLayer_inputs), name="CustomScaleLayer").to_json())


def inner_functional(n_inputs):
    ins = [keras.Input(vec, name=f"in{k}") for k in range(n_inputs)]
    out = L.Dense(2, name="inner_dense")(ins[0] if n_inputs == 1 else L.Add(name="inner_add")(ins))
    return keras.Model(ins[0] if n_inputs == 1 else ins, out, name="inner")


for name, n_inputs, kwargs in [("nested_functional", 1, {}), ("nested_functional_training_false", 1, {"training": False}),
                               ("nested_functional_two_inputs", 2, {})]:
    xs = [keras.Input(vec, name=f"x{k}") for k in range(n_inputs)]
    inner = inner_functional(n_inputs)
    out = inner(xs[0] if n_inputs == 1 else xs, **kwargs)
    records[name] = json.loads(keras.Model(xs[0] if n_inputs == 1 else xs, out, name=name).to_json())
for name, kwargs in [("nested_sequential", {}), ("nested_sequential_training_true", {"training": True})]:
    x = keras.Input(vec, name="x")
    inner = keras.Sequential([keras.Input(vec), L.Dense(2, name="inner_dense"), L.Dropout(0.5, seed=1, name="inner_dropout")],
                             name="inner")
    records[name] = json.loads(keras.Model(x, inner(x, **kwargs), name=name).to_json())

with open(os.path.join(here, "call_records.json"), "w") as f:
    json.dump({"keras_version": keras.__version__, "models": records}, f, indent=1, sort_keys=True)
print(len(records), "models")
