#!/usr/bin/env python3
"""Structural fixtures of keras.applications constructors called with their own options
(minimalistic, alpha, dropout_rate, include_preprocessing, classifier_activation, name, ...),
which the 32x32 classes=10 fixtures of make_applications.py leave at Keras's defaults.

    /work/keras-ref/bin/python tests/data/keras/applications/make_variants.py

writes variants/<STEM>.k3.json.gz and variants/<STEM>.manifest.json.gz (Keras 3.15.1 and tf_keras
2.21.0, weights=None; the manifest as make_applications.py's, with "k2" where tf_keras builds the
same call). A subfolder, so that the tests iterating over the public models do not see them.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_applications as M  # noqa: E402

# stem -> (constructor, keyword arguments)
VARIANTS = {
    "MobileNetV3Large_minimalistic": (
        "MobileNetV3Large",
        dict(input_shape=(32, 32, 3), alpha=0.75, minimalistic=True, classes=10, dropout_rate=0.0,
             include_preprocessing=False)),
    "MobileNetV3Small_wide": (
        "MobileNetV3Small",
        dict(input_shape=(48, 40, 1), alpha=1.25, classes=7, classifier_activation=None, name="wide")),
    "MobileNetV3Small_features": (
        "MobileNetV3Small", dict(include_top=False, pooling="max")),
    "ConvNeXtTiny_options": (
        "ConvNeXtTiny",
        dict(input_shape=(32, 32, 3), include_preprocessing=False, classes=5, classifier_activation=None,
             name="my_convnext")),
    "ConvNeXtTiny_features": (
        "ConvNeXtTiny", dict(include_top=False, input_shape=(32, 32, 1))),
}


def main():
    tf, keras, tf_keras = M.import_generations()
    out = os.path.join(HERE, "variants")
    os.makedirs(out, exist_ok=True)
    for stem, (ctor, kw) in VARIANTS.items():
        mans = {}
        for gen, K in (("k3", keras), ("k2", tf_keras)):
            M.fresh(K)
            model = M.call(getattr(K.applications, ctor), weights=None, **kw)  # tf_keras: no name
            man, cfg = M.manifest_of(gen, K, model, keras)
            mans[gen] = man
            if gen == "k3":
                M.write_json(os.path.join(out, stem + ".k3.json"), cfg, True)
            del model
        M.write_json(os.path.join(out, stem + ".manifest.json"), mans, True)
        print(stem, mans["k3"]["params"]["total"], flush=True)


if __name__ == "__main__":
    main()
