"""Records how Keras 3.15 and tf_keras 2.21 write the configs of the image preprocessing layers
in a model's JSON (the legacy .h5 `model_config`), for tests/keras/saving/test_keras2_preprocessing.cpp.

  /work/keras-ref/bin/python make_keras2_preprocessing_configs.py   # writes keras2_preprocessing_configs.json

Each case is one layer built with the same arguments in both generations, inside a Sequential
model on a (6, 8, 3) image input; the test asserts to_keras2(keras3) == tf_keras's layer config
and that our loader reads tf_keras's config back to the Keras 3 one.
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402
import tf_keras  # noqa: E402

CASES = {
    "Resizing": dict(height=4, width=5, interpolation="nearest", crop_to_aspect_ratio=True),
    "CenterCrop": dict(height=4, width=4),
    "RandomCrop": dict(height=4, width=5, seed=3),
    "RandomFlip": dict(mode="vertical", seed=3),
    "RandomRotation": dict(factor=(-0.2, 0.1), fill_mode="nearest", interpolation="nearest", seed=3),
    "RandomZoom": dict(height_factor=(-0.3, 0.2), width_factor=0.1, fill_mode="constant", fill_value=1.5, seed=3),
    "RandomTranslation": dict(height_factor=0.1, width_factor=(-0.2, 0.3), fill_mode="wrap", seed=3),
    "RandomContrast": dict(factor=(0.1, 0.3), seed=3),
    "RandomBrightness": dict(factor=(-0.2, 0.4), value_range=(0, 1), seed=3),
    "Rescaling": dict(scale=1 / 127.5, offset=-1.0),
    "Normalization": dict(axis=-1, mean=[0.5, 0.25, 0.125], variance=[0.25, 1.0, 4.0]),
}


def layer_config(module, cls, kwargs):
    model = module.Sequential([module.Input((6, 8, 3)), getattr(module.layers, cls)(name="layer", **kwargs)])
    layers = json.loads(model.to_json())["config"]["layers"]
    return next(entry for entry in layers if entry["class_name"] != "InputLayer")


def main():
    out = {}
    for cls, kwargs in CASES.items():
        out[cls] = {"keras3": layer_config(keras, cls, kwargs), "tf_keras": layer_config(tf_keras, cls, kwargs)}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras2_preprocessing_configs.json")
    with open(path, "w") as f:
        json.dump({"keras": keras.__version__, "tf_keras": tf_keras.__version__, "cases": out}, f, indent=1,
                  sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
