#!/usr/bin/env python3
"""Reference values for the attention and normalization layers of issue 17, made by REAL Keras 3.

Usage: python3 make_attention_reference.py [OUTDIR]   (OUTDIR defaults to this script's directory)
Requires keras 3 (TensorFlow backend), numpy, h5py. CPU only; deterministic (fixed seeds).

Writes
  attention_reference.json  one entry per case: the layer's class and Keras's get_config() of the
      built layer, its weights (in layer.weights order, with their paths), the call's tensors
      (positional "args", keyword "kwargs"), the masks attached to them (Keras's _keras_mask),
      the non-tensor call options, and every output Keras computed (inference mode).
  mha_model.keras / mha_model.k3.h5  a small functional model (Input -> MultiHeadAttention self-
      attention -> Dense), saved by Keras 3 in both formats; its input and
      output are the "mha_model" entry of attention_reference.json, together with the weights
      tree paths Keras wrote in each file.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import h5py  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras.src import backend  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(17)


def arr(shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype("float32")


def enc(x):
    x = np.asarray(x)
    # float32 holds ~7.2 significant digits; 9 keep every value exact, and the file small.
    data = [float(f"{v:.9g}") for v in x.reshape(-1).tolist()] if x.dtype != bool else x.reshape(-1).tolist()
    return {"shape": list(x.shape), "dtype": str(x.dtype), "data": data}


def fix_weights(layer):
    # Random (not initial) values so every weight matters; biases too.
    layer.set_weights([arr(w.shape, 0.5) for w in layer.weights])


def run_case(name, layer, args, kwargs=None, masks=None, options=None):
    """masks: {"args": [mask or None per arg], "kwargs": {name: mask}} attached as _keras_mask."""
    kwargs = kwargs or {}
    options = options or {}
    masks = masks or {}
    targs = [keras.ops.convert_to_tensor(a) for a in args]
    tkwargs = {k: keras.ops.convert_to_tensor(v) for k, v in kwargs.items()}
    for i, m in enumerate(masks.get("args", [])):
        if m is not None:
            backend.set_keras_mask(targs[i], keras.ops.convert_to_tensor(m))
    for k, m in masks.get("kwargs", {}).items():
        backend.set_keras_mask(tkwargs[k], keras.ops.convert_to_tensor(m))
    call_args = targs if not isinstance(layer, keras.layers.Attention) else [targs]
    layer(*call_args, **tkwargs, **options)  # builds
    fix_weights(layer)
    for i, m in enumerate(masks.get("args", [])):  # a call may have consumed the masks
        if m is not None:
            backend.set_keras_mask(targs[i], keras.ops.convert_to_tensor(m))
    for k, m in masks.get("kwargs", {}).items():
        backend.set_keras_mask(tkwargs[k], keras.ops.convert_to_tensor(m))
    out = layer(*call_args, **tkwargs, **options, training=False)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    out_mask = backend.get_keras_mask(outs[0])
    return name, {
        "class_name": layer.__class__.__name__,
        "config": layer.get_config(),
        "weights": [dict(enc(w.numpy()), path=w.path) for w in layer.weights],
        "args": [enc(a) for a in args],
        "kwargs": {k: enc(v) for k, v in kwargs.items()},
        "arg_masks": [None if m is None else enc(m) for m in masks.get("args", [])],
        "kwarg_masks": {k: enc(m) for k, m in masks.get("kwargs", {}).items()},
        "options": options,
        "outputs": [enc(np.asarray(o)) for o in outs],
        "output_mask": None if out_mask is None else enc(np.asarray(out_mask)),
    }


def cases():
    q, v = arr((2, 4, 6)), arr((2, 5, 6))
    key = arr((2, 5, 4))
    vmask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=bool)
    qmask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=bool)
    amask = rng.random((2, 4, 5)) > 0.4
    amask[0, 2, :] = False  # a fully masked query row
    MHA = keras.layers.MultiHeadAttention
    yield run_case("mha_basic", MHA(num_heads=2, key_dim=3, name="mha"), [q, v])
    yield run_case("mha_key_value_dim_output_shape",
                   MHA(num_heads=2, key_dim=3, value_dim=2, output_shape=(7,), name="mha"), [q, v], {"key": key})
    yield run_case("mha_attention_mask_fused", MHA(num_heads=2, key_dim=3, name="mha"), [q, v],
                   {"attention_mask": amask})
    yield run_case("mha_attention_mask_scores", MHA(num_heads=2, key_dim=3, name="mha"), [q, v],
                   {"attention_mask": amask}, options={"return_attention_scores": True})
    yield run_case("mha_causal_self", MHA(num_heads=2, key_dim=3, name="mha"), [q, q],
                   options={"use_causal_mask": True})
    yield run_case("mha_causal_scores", MHA(num_heads=2, key_dim=3, use_bias=False, name="mha"), [q, v],
                   options={"use_causal_mask": True, "return_attention_scores": True})
    yield run_case("mha_input_masks", MHA(num_heads=2, key_dim=3, name="mha"), [q, v],
                   masks={"args": [qmask, vmask]}, options={"return_attention_scores": True})
    yield run_case("mha_input_masks_fused", MHA(num_heads=2, key_dim=3, name="mha"), [q, v],
                   masks={"args": [qmask, vmask]})
    yield run_case("mha_attention_axes", MHA(num_heads=2, key_dim=2, attention_axes=(2,), name="mha"),
                   [arr((2, 3, 4, 5)), arr((2, 3, 4, 5))], options={"return_attention_scores": True})
    yield run_case("mha_attention_axes_2d", MHA(num_heads=2, key_dim=2, attention_axes=(1, 2), name="mha"),
                   [arr((2, 3, 2, 5)), arr((2, 2, 3, 5))])
    yield run_case("mha_gate_window", MHA(num_heads=2, key_dim=3, use_gate=True, sliding_window=2, name="mha"),
                   [q, v])
    GQA = keras.layers.GroupQueryAttention
    yield run_case("gqa_basic", GQA(head_dim=3, num_query_heads=4, num_key_value_heads=2, name="gqa"), [q, v],
                   options={"return_attention_scores": True})
    yield run_case("gqa_causal_masks", GQA(head_dim=3, num_query_heads=4, num_key_value_heads=2, name="gqa"),
                   [q, v], {"key": arr((2, 5, 6))}, masks={"args": [None, vmask]},
                   options={"use_causal_mask": True})
    Att = keras.layers.Attention
    yield run_case("attention_dot", Att(name="att"), [q, v])
    yield run_case("attention_scale_key_masks", Att(use_scale=True, name="att"), [q, v, arr((2, 5, 6))],
                   masks={"args": [qmask, vmask]}, options={"return_attention_scores": True})
    yield run_case("attention_concat_causal", Att(use_scale=True, score_mode="concat", name="att"),
                   [q, v], masks={"args": [None, vmask]},
                   options={"use_causal_mask": True, "return_attention_scores": True})
    yield run_case("additive_attention", keras.layers.AdditiveAttention(name="add"), [q, v, arr((2, 5, 6))],
                   masks={"args": [qmask, vmask]}, options={"return_attention_scores": True})
    yield run_case("additive_attention_noscale", keras.layers.AdditiveAttention(use_scale=False, name="add"),
                   [q, v])
    yield run_case("unit_normalization", keras.layers.UnitNormalization(name="un"), [arr((2, 3, 4))])
    yield run_case("unit_normalization_axes", keras.layers.UnitNormalization(axis=[1, 2], name="un"),
                   [arr((2, 3, 4))])
    yield run_case("group_normalization", keras.layers.GroupNormalization(groups=2, name="gn"),
                   [arr((2, 3, 4), 2.0) + 1.0])
    yield run_case("group_normalization_instance_axis1",
                   keras.layers.GroupNormalization(groups=-1, axis=1, epsilon=1e-2, name="gn"),
                   [arr((2, 4, 3, 2), 2.0)])


def tree_paths(path):
    out = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.append([n, list(o.shape)]) if isinstance(o, h5py.Dataset) else None)
    return out


def mha_model():
    keras.utils.set_random_seed(3)
    inp = keras.Input((4, 6), name="tokens")
    # No call options: replaying node kwargs such as use_causal_mask is the model serializer's part.
    x = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, name="self_attention")(inp, inp)
    out = keras.layers.Dense(3, name="head")(x)
    model = keras.Model(inp, out, name="mha_model")
    for layer in model.layers:
        if layer.weights:
            fix_weights(layer)
    x_in = arr((2, 4, 6))
    y = model.predict(x_in, verbose=0)
    model.save(os.path.join(OUT, "mha_model.keras"))
    model.save(os.path.join(OUT, "mha_model.k3.h5"))
    import zipfile
    with zipfile.ZipFile(os.path.join(OUT, "mha_model.keras")) as z:
        z.extract("model.weights.h5", "/tmp/mha_model_extract")
    for f in ["mha_model.keras", "mha_model.k3.h5"]:
        back = keras.models.load_model(os.path.join(OUT, f))
        assert np.allclose(back.predict(x_in, verbose=0), y, atol=1e-6), f
    return {"input": enc(x_in), "output": enc(y),
            "keras_tree": tree_paths("/tmp/mha_model_extract/model.weights.h5"),
            "h5_tree": tree_paths(os.path.join(OUT, "mha_model.k3.h5"))}


def main():
    keras.utils.set_random_seed(17)
    ref = {"keras_version": keras.__version__, "cases": dict(cases()), "mha_model": mha_model()}
    with open(os.path.join(OUT, "attention_reference.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
