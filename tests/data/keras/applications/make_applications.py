#!/usr/bin/env python3
"""keras.applications fixtures made by REAL Keras 3 and tf_keras: structure of every public model,
weighted files of small members of every family.

Usage
  python3 make_applications.py generate [OUTDIR] [--big BIGDIR] [--only NAME ...]
      OUTDIR defaults to this script's directory. --big also writes the full-size ResNet50 file set
      (about 94 MB a weights file, too large to commit) into BIGDIR. --only limits the run to the
      named public models / tiny fixtures (applications.json is then written only for those).

Requires: keras 3.15.1 (TensorFlow backend), tf_keras 2.21.0, tensorflow 2.21.0, h5py, numpy; CPU.
TensorFlow runs with one intra-op and one inter-op thread. Everything is seeded (SEED below):
two runs give the same weights, outputs and JSON (the .keras zips carry a save date, so their bytes
differ; HDF5 files may differ in their metadata bytes, never in values).

generate writes:

1. Structure of EVERY public constructor of keras.applications (listed programmatically: every
   upper-case callable of the keras.applications namespace; the run stops if one cannot be
   built), built with weights=None, include_top=True, classes=10 at the smallest input size Keras
   accepts (32x32; 75x75 for InceptionV3/InceptionResNetV2; 71x71 for Xception), once with Keras 3
   and once with the tf_keras constructor of the same name:
     NAME.k3.json(.gz)      Keras 3 model.to_json()
     NAME.k2.json(.gz)      tf_keras model.to_json()
     NAME.manifest.json(.gz) per generation: the layers of the config in order (name, class_name,
                            module/registered_name where not plain keras.layers, the index of the
                            layer in model.layers, the weight names of its legacy-HDF5 group in
                            the order of its `weight_names` attribute) and the weights in the
                            order of model.weights (Keras 3: variable.path and the dataset path
                            in a .weights.h5 / the .keras zip; tf_keras: variable.name; shape,
                            dtype, trainable), parameter counts, output shape; plus the same
                            model built with include_top=False, pooling="avg" (output shape and
                            parameter count only).
   These are compressed with gzip (mtime 0) when together they exceed GZIP_OVER bytes.

2. Weighted fixtures of small but genuine members of every family (names tiny_*; see TINY):
   built by Keras's own family builders (EfficientNet(...), ResNet(stack_fn, ...), DenseNet(
   blocks), ConvNeXt(depths, dims), NASNet(...)) or by the public constructor itself with the
   number of filters of some layers narrowed while it builds (a patched Conv2D / SeparableConv2D /
   Dense __init__ active only during the build; the saved configs are ordinary ones). Models are
   NEVER compiled (the way a backbone is saved). Weights: Keras's initialisers, then every
   BatchNormalization/LayerNormalization gamma, beta, moving mean and variance, every bias and
   every LayerScale gamma and the mean/variance of an adapted Normalization (EfficientNet) set to
   seeded random values (so none is the identity, see README):
     NAME.input0.npy          float32 input, batch of 2 (shared by both generations)
     NAME.keras               Keras 3 model.save
     NAME.weights.h5          Keras 3 model.save_weights
     NAME.k3.h5               Keras 3 model.save (legacy HDF5)
     NAME.k3.json             Keras 3 model.to_json()
     NAME.k3.output0.npy      Keras 3 prediction (inference mode)
     NAME.k2.h5               tf_keras model.save
     NAME.k2.weights_only.h5  tf_keras model.save_weights (legacy weights-only HDF5)
     NAME.k2.json             tf_keras model.to_json()
     NAME.k2.output0.npy      tf_keras prediction
   (their manifests are checked but not written, WRITE_TINY_MANIFESTS: the public models'
   manifests describe the same structures)
   Every file is reloaded by the Keras that wrote it and must reproduce the outputs (1e-5); the
   Keras 3 weight paths of the manifest are checked against the .weights.h5 written, the legacy
   weight names against both .h5 files.

3. applications.json: versions, per public model and per tiny fixture: input shape, parameters,
   files with sizes and sha256; the union over the whole zoo of layer classes (Keras 3:
   module.class_name; tf_keras: class_name, TFOpLambda by function), activations (layer
   `activation` keys and Activation layers, nested configs included), custom/registered classes,
   config keys per class, and per class and activation the models that use it; and which tiny
   fixture covers each of them.

The two generations initialise their own weights: compare a generation's files only with that
generation's outputs. File conventions are those of ../make_fixtures.py, whose `verify` also
checks files that keras-cpp writes with the same names.
"""

import argparse
import contextlib
import gzip
import hashlib
import inspect
import json
import os
import shutil
import sys
import tempfile
import warnings
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

SEED = 4321
BATCH = 2
CLASSES = 10
RTOL = ATOL = 1e-5
GZIP_OVER = 8 * 1000 * 1000
WRITE_TINY_MANIFESTS = False  # the public models' manifests describe the same structures   # structural JSON files are gzipped when together larger than this

# Smallest input side Keras accepts (obtain_input_shape's min_size; NASNet builds at 32 too).
MIN_SIZE = {"InceptionV3": 75, "InceptionResNetV2": 75, "Xception": 71}


# ---------------------------------------------------------------------------------------------
# Setup
# ---------------------------------------------------------------------------------------------

def import_generations():
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.set_visible_devices([], "GPU")
    try:
        tf.config.experimental.enable_op_determinism()
    except Exception:
        pass
    import keras
    import tf_keras
    return tf, keras, tf_keras


def public_names(keras):
    """Every public constructor of keras.applications (upper-case callables)."""
    A = keras.applications
    return sorted(n for n in dir(A) if n[:1].isupper() and callable(getattr(A, n)))


def fresh(K):
    K.backend.clear_session()
    K.utils.set_random_seed(SEED)


def call(fn, **kw):
    """Calls a builder with kwargs, renaming `name` to the generation's spelling (tf_keras
    builders mostly say model_name) or dropping it where the builder has neither."""
    params = inspect.signature(fn).parameters
    if "name" in kw and "name" not in params:
        v = kw.pop("name")
        if "model_name" in params:
            kw["model_name"] = v
    return fn(**kw)


@contextlib.contextmanager
def narrowed(K, rule):
    """While active, Conv2D/SeparableConv2D `filters` and Dense `units` go through
    rule(class_name, layer_name, value) -> new value (or None to keep). The class itself is
    unchanged, so configs and reloading are ordinary; only the numbers are smaller."""
    saved = []
    for cls, arg in ((K.layers.Conv2D, "filters"), (K.layers.SeparableConv2D, "filters"),
                     (K.layers.Dense, "units")):
        orig = cls.__dict__["__init__"]

        def patched(self, *args, __orig=orig, __cls=cls, __arg=arg, **kw):
            if type(self) is __cls:
                if args:
                    value, args = args[0], args[1:]
                else:
                    value = kw.pop(__arg)
                new = rule(__cls.__name__, kw.get("name"), value)
                return __orig(self, value if new is None else new, *args, **kw)
            return __orig(self, *args, **kw)

        saved.append((cls, orig))
        cls.__init__ = patched
    try:
        yield
    finally:
        for cls, orig in saved:
            cls.__init__ = orig


# ---------------------------------------------------------------------------------------------
# Manifest
# ---------------------------------------------------------------------------------------------

def k3_weights_h5_paths(keras, model):
    """{id(variable): dataset path} as Keras 3 lays them out in .weights.h5 (and in the .keras
    zip's model.weights.h5): saving_lib walks the model and calls save_own_variables with a store;
    this store only records what it is given."""
    from keras.src.saving import saving_lib

    class Recorder(saving_lib.H5IOStore):
        def __init__(self):  # no file
            self.paths = {}
            self.order = []
            self._where = None

        def __bool__(self):
            return True

        def make(self, path, metadata=None):
            self._where = path
            return self

        def __setitem__(self, key, value):
            full = ("%s/vars/%s" % (self._where, key)).lstrip("/")
            self.paths[id(value)] = full
            self.order.append(full)

    rec = Recorder()
    saving_lib._save_state(model, weights_store=rec, assets_store=None, inner_path="",
                           visited_saveables=set())
    return rec.paths, rec.order


def legacy_weights(layer):
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def describe_layers(gen, cfg_layers, layer_objs):
    """Config layer list (recursively for nested Sequential/Functional configs)."""
    out = []
    for lc in cfg_layers:
        e = {"name": lc.get("name") or lc.get("config", {}).get("name"), "class_name": lc["class_name"]}
        mod = lc.get("module")
        if mod is not None and mod != "keras.layers":
            e["module"] = mod
            if lc.get("registered_name") is not None:
                e["registered_name"] = lc["registered_name"]
        if lc["class_name"] == "TFOpLambda" or lc["class_name"] == "SlicingOpLambda":
            e["function"] = lc["config"].get("function")
        obj = layer_objs.get(e["name"])
        if obj is not None:
            e["model_layers_index"] = obj[0]
            names = [w.path if gen == "k3" else w.name for w in legacy_weights(obj[1])]
            if names:
                e["h5_weight_names"] = names
        inner = lc.get("config", {}).get("layers")
        if isinstance(inner, list) and obj is not None and hasattr(obj[1], "layers"):
            sub = {l.name: (i, l) for i, l in enumerate(obj[1].layers)}
            e["layers"] = describe_layers(gen, inner, sub)
            for s in e["layers"]:       # index into the nested model's layers, not the outer
                s["nested_layers_index"] = s.pop("model_layers_index", None)
        out.append(e)
    return out


def manifest_of(gen, K, model, keras=None):
    cfg = json.loads(model.to_json())
    objs = {l.name: (i, l) for i, l in enumerate(model.layers)}
    layers = describe_layers(gen, cfg["config"]["layers"], objs)
    weights = []
    if gen == "k3":
        paths, order = k3_weights_h5_paths(keras, model)
    for v in model.weights:
        w = {"shape": [int(d) for d in v.shape], "dtype": str(getattr(v.dtype, "name", v.dtype)),
             "trainable": bool(v.trainable)}
        if gen == "k3":
            w = dict(path=v.path, weights_h5=paths[id(v)], **w)
        else:
            w = dict(name=v.name, **w)
        weights.append(w)
    n_tr = int(sum(np.prod(v.shape) for v in model.trainable_weights))
    n_all = int(sum(np.prod(v.shape) for v in model.weights))
    m = {
        "model_name": model.name,
        "model_class": cfg["class_name"],
        "input_shape": list(model.input_shape),
        "output_shape": list(model.output_shape),
        "params": {"total": n_all, "trainable": n_tr, "non_trainable": n_all - n_tr},
        "h5_layer_names": [l.name for l in model.layers],
        "layers": layers,
        "weights": weights,
    }
    if gen == "k3":
        m["weights_h5_order"] = order   # order in which Keras 3 writes the datasets
    return m, cfg


# ---------------------------------------------------------------------------------------------
# Unions over the zoo
# ---------------------------------------------------------------------------------------------

def walk_layer_configs(layers, fn, path=()):
    for lc in layers:
        fn(lc)
        inner = lc.get("config", {}).get("layers") if isinstance(lc.get("config"), dict) else None
        if isinstance(inner, list):
            walk_layer_configs(inner, fn)


def activation_names(value):
    """Names of activations in a config value (str, or a serialized function/object dict)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        cfg = value.get("config")
        name = value.get("registered_name") or value.get("class_name")
        if isinstance(cfg, str):
            return [cfg]
        if isinstance(cfg, dict) and "name" in cfg and value.get("class_name") == "function":
            return [cfg["name"]]
        return [str(name)]
    return [repr(value)]


def class_key(gen, lc):
    if gen == "k3":
        return "%s.%s" % (lc.get("module") or "?", lc["class_name"])
    if lc["class_name"] in ("TFOpLambda", "SlicingOpLambda"):
        return "%s(%s)" % (lc["class_name"], lc["config"].get("function"))
    mod = lc.get("module")
    return lc["class_name"] if not mod or mod.startswith("keras.layers") else "%s.%s" % (mod, lc["class_name"])


class Union:
    def __init__(self):
        self.classes = {"k3": {}, "k2": {}}
        self.activations = {"k3": {}, "k2": {}}
        self.custom = {"k3": {}, "k2": {}}
        self.ops = {"k3": {}, "k2": {}}
        self.keys = {"k3": {}, "k2": {}}

    def add(self, gen, model_name, cfg):
        def fn(lc):
            key = class_key(gen, lc)
            self.classes[gen].setdefault(key, set()).add(model_name)
            c = lc.get("config") if isinstance(lc.get("config"), dict) else {}
            self.keys[gen].setdefault(key, set()).update(c.keys())
            mod = lc.get("module") or ""
            if mod.startswith("keras.src.ops") or lc["class_name"] in ("TFOpLambda", "SlicingOpLambda"):
                self.ops[gen].setdefault(key, set()).add(model_name)
            elif (gen == "k3" and not mod.startswith("keras.layers") and mod != "keras") or \
                    (gen == "k2" and lc["class_name"] not in BUILTIN_K2 and not mod.startswith("keras.layers")):
                self.custom[gen].setdefault(key, set()).add(model_name)
            if "activation" in c:
                for a in activation_names(c["activation"]):
                    where = "Activation layer" if lc["class_name"] == "Activation" else "layer key"
                    self.activations[gen].setdefault(a, {}).setdefault(where, set()).add(model_name)
        walk_layer_configs(cfg["config"]["layers"], fn)
        self.classes[gen].setdefault(class_key(gen, cfg), set()).add(model_name)

    def as_json(self):
        def plain(d):
            return {k: (sorted(v) if isinstance(v, set) else plain(v)) for k, v in sorted(d.items())}
        return {"layer_classes": plain(self.classes), "activations": plain(self.activations),
                "custom_classes": plain(self.custom), "operations": plain(self.ops),
                "config_keys": plain(self.keys)}


BUILTIN_K2 = set()   # filled with tf_keras.layers' public class names at run time


# ---------------------------------------------------------------------------------------------
# Tiny (weighted) members of every family
# ---------------------------------------------------------------------------------------------

def A(K, module, fn):
    """A name of an application module's source (the public modules export only constructors)."""
    import importlib
    return getattr(importlib.import_module("%s.src.applications.%s" % (K.__name__, module)), fn)


def tiny_mobilenet(K, s):
    return K.applications.MobileNet(weights=None, input_shape=(s, s, 3), classes=CLASSES, alpha=0.1)


def tiny_mobilenet_v2(K, s):
    with narrowed(K, lambda c, n, v: 32 if n == "Conv_1" else None):   # 1280 -> 32
        return K.applications.MobileNetV2(weights=None, input_shape=(s, s, 3), classes=CLASSES,
                                          alpha=0.1)


def tiny_mobilenet_v3_small(K, s):
    with narrowed(K, lambda c, n, v: 32 if n in ("conv_2", "Conv_2") else None):  # 1024 -> 32
        return K.applications.MobileNetV3Small(weights=None, input_shape=(s, s, 3), classes=CLASSES,
                                               alpha=0.1)


def _vgg_rule(c, n, v):
    if c == "Conv2D":
        return max(2, v // 32)
    if n in ("fc1", "fc2"):
        return 16
    return None


def tiny_vgg16(K, s):
    with narrowed(K, _vgg_rule):
        return K.applications.VGG16(weights=None, input_shape=(s, s, 3), classes=CLASSES)


def tiny_resnet(K, s):
    stack = A(K, "resnet", "stack_residual_blocks_v1" if K.__name__ == "keras" else "stack1")

    def stack_fn(x):
        x = stack(x, 4, 2, stride1=1, name="conv2")
        return stack(x, 8, 1, name="conv3")
    return call(A(K, "resnet", "ResNet"), stack_fn=stack_fn, preact=False, use_bias=True,
                name="resnet50", weights=None, input_shape=(s, s, 3), classes=CLASSES)


def tiny_resnet_v2(K, s):
    stack = A(K, "resnet", "stack_residual_blocks_v2" if K.__name__ == "keras" else "stack2")

    def stack_fn(x):
        x = stack(x, 4, 2, name="conv2")
        return stack(x, 8, 2, stride1=1, name="conv3")
    return call(A(K, "resnet", "ResNet"), stack_fn=stack_fn, preact=True, use_bias=True,
                name="resnet50v2", weights=None, input_shape=(s, s, 3), classes=CLASSES)


def tiny_densenet(K, s):
    # growth rate 32 -> 8 (block convs), stem 64 -> 16; transitions keep Keras's own count
    def rule(c, n, v):
        if c == "Conv2D" and n and not (n.startswith("pool") and n.endswith("_conv")):
            return v // 4
        return None
    with narrowed(K, rule):
        return call(A(K, "densenet", "DenseNet"), blocks=[1, 1, 1, 1], name="densenet121",
                    weights=None, input_shape=(s, s, 3), classes=CLASSES)


def tiny_efficientnet(K, s):
    # depth 0.26: one block per stage except stage 6 (4 in B0) with 2, so that the repeated
    # block's Dropout(noise_shape=(None, 1, 1, 1)) (drop connect) is there as in every public one
    return call(A(K, "efficientnet", "EfficientNet"), width_coefficient=0.1, depth_coefficient=0.26,
                default_size=224, name="efficientnetb0", weights=None, input_shape=(s, s, 3),
                classes=CLASSES)


def tiny_efficientnet_v2(K, s):
    # depth 0.2: one block per stage except the last (8 in b0) with 2: its Dropout with noise_shape
    return call(A(K, "efficientnet_v2", "EfficientNetV2"), width_coefficient=0.1,
                depth_coefficient=0.2, default_size=224, name="efficientnetv2-b0", weights=None,
                input_shape=(s, s, 3), classes=CLASSES,
                blocks_args=A(K, "efficientnet_v2", "DEFAULT_BLOCKS_ARGS")["efficientnetv2-b0"])


def tiny_convnext(K, s):
    return call(A(K, "convnext", "ConvNeXt"), depths=[1, 1, 2, 1], projection_dims=[8, 16, 24, 32],
                drop_path_rate=0.0, layer_scale_init_value=1e-6, default_size=224,
                name="convnext_tiny", weights=None, input_shape=(s, s, 3), classes=CLASSES)


def tiny_convnext_stochastic_depth(K, s):
    return call(A(K, "convnext", "ConvNeXt"), depths=[1, 1, 1, 1], projection_dims=[8, 8, 8, 8],
                drop_path_rate=0.1, layer_scale_init_value=1e-6, default_size=224,
                name="convnext_sd", weights=None, input_shape=(s, s, 3), classes=CLASSES)


def tiny_nasnet(K, s):
    return call(A(K, "nasnet", "NASNet"), penultimate_filters=96, num_blocks=1, stem_block_filters=8,
                skip_reduction=False, filter_multiplier=2, default_size=224, name="NASNet",
                weights=None, input_shape=(s, s, 3), classes=CLASSES)


def tiny_inception_v3(K, s):
    with narrowed(K, lambda c, n, v: max(2, v // 32) if c == "Conv2D" else None):
        return K.applications.InceptionV3(weights=None, input_shape=(s, s, 3), classes=CLASSES)


def tiny_xception(K, s):
    with narrowed(K, lambda c, n, v: max(2, v // 32) if c in ("Conv2D", "SeparableConv2D") else None):
        return K.applications.Xception(weights=None, input_shape=(s, s, 3), classes=CLASSES)


def tiny_inception_resnet_v2(K, s):
    """The public constructor, 1/32 of the filters, and of each run of repeated blocks only the
    first (block35_1, block17_1, block8_1) and the last, un-activated block8_10 are kept (the others
    are skipped by a wrapper on the module's inception_resnet_block: they map x to x's shape)."""
    mod = K.applications.inception_resnet_v2
    mod = sys.modules[mod.InceptionResNetV2.__module__]
    orig_block = mod.inception_resnet_block

    def block(x, scale, block_type, block_idx, activation="relu"):
        if block_idx == 1 or (block_type == "block8" and block_idx == 10):
            return orig_block(x, scale, block_type, block_idx, activation=activation)
        return x

    def rule(c, n, v):
        # the residual conv of each block (name blockNN_i_conv) has as many filters as its
        # input has channels: Keras already computed it from the narrowed tensor
        if c != "Conv2D" or (n and n.startswith("block") and n.endswith("_conv")):
            return None
        return max(2, v // 32)
    mod.inception_resnet_block = block
    try:
        with narrowed(K, rule):
            return K.applications.InceptionResNetV2(weights=None, input_shape=(s, s, 3), classes=CLASSES)
    finally:
        mod.inception_resnet_block = orig_block


# name -> (builder, input side, input kind, public models it stands for, description)
TINY = {
    "tiny_mobilenet": (tiny_mobilenet, 32, "normal", ["MobileNet"],
                       "public MobileNet(alpha=0.1)"),
    "tiny_mobilenet_v2": (tiny_mobilenet_v2, 32, "normal", ["MobileNetV2"],
                          "public MobileNetV2(alpha=0.1), last 1x1 conv Conv_1 narrowed 1280 -> 32"),
    "tiny_mobilenet_v3_small": (tiny_mobilenet_v3_small, 32, "pixels",
                                ["MobileNetV3Small", "MobileNetV3Large"],
                                "public MobileNetV3Small(alpha=0.1), conv_2 (last_point_ch) 1024 -> 32"),
    "tiny_vgg16": (tiny_vgg16, 32, "normal", ["VGG16", "VGG19"],
                   "public VGG16, every Conv2D with 1/32 of its filters, fc1/fc2 4096 -> 16"),
    "tiny_resnet": (tiny_resnet, 32, "normal", ["ResNet50", "ResNet101", "ResNet152"],
                    "resnet.ResNet(stack_fn, preact=False, use_bias=True), stacks conv2 (2 bottleneck"
                    " blocks of 4 filters, stride 1) and conv3 (1 block of 8); ResNet50: conv2..conv5 of"
                    " 3,4,6,3 blocks of 64..512"),
    "tiny_resnet_v2": (tiny_resnet_v2, 32, "normal", ["ResNet50V2", "ResNet101V2", "ResNet152V2"],
                       "resnet.ResNet(stack_fn, preact=True, use_bias=True), stacks conv2 (2 v2 blocks"
                       " of 4) and conv3 (2 of 8, stride1=1 as the last stack of ResNet50V2)"),
    "tiny_densenet": (tiny_densenet, 32, "normal", ["DenseNet121", "DenseNet169", "DenseNet201"],
                      "densenet.DenseNet(blocks=[1,1,1,1]) with the growth rate 32 -> 8 and stem 64 -> 16"
                      " (block convs at 1/4 of their filters)"),
    "tiny_efficientnet": (tiny_efficientnet, 32, "pixels", ["EfficientNetB%d" % i for i in range(8)],
                          "efficientnet.EfficientNet(width_coefficient=0.1, depth_coefficient=0.26):"
                          " default blocks, one per stage but 2 in stage 6 (drop-connect Dropout with"
                          " noise_shape)"),
    "tiny_efficientnet_v2": (tiny_efficientnet_v2, 32, "pixels",
                             ["EfficientNetV2B%d" % i for i in range(4)]
                             + ["EfficientNetV2S", "EfficientNetV2M", "EfficientNetV2L"],
                             "efficientnet_v2.EfficientNetV2(0.1, 0.2, blocks of efficientnetv2-b0,"
                             " 2 blocks in the last stage):"
                             " Rescaling + Normalization preprocessing (V2S/M/L: Rescaling(1/128, -1)"
                             " only)"),
    "tiny_convnext": (tiny_convnext, 32, "pixels",
                      ["ConvNeXtTiny", "ConvNeXtSmall", "ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtXLarge"],
                      "convnext.ConvNeXt(depths=[1,1,2,1], projection_dims=[8,16,24,32]), no drop path"
                      " (as every public ConvNeXt: identity Activation('linear'))"),
    "tiny_convnext_stochastic_depth": (
        tiny_convnext_stochastic_depth, 32, "pixels", [],
        "convnext.ConvNeXt(depths=[1,1,1,1], projection_dims=[8,8,8,8], drop_path_rate=0.1):"
        " StochasticDepth layers (no public model has them; identity in inference)"),
    "tiny_nasnet": (tiny_nasnet, 32, "normal", ["NASNetMobile", "NASNetLarge"],
                    "nasnet.NASNet(penultimate_filters=96, num_blocks=1, stem_block_filters=8,"
                    " skip_reduction=False) (NASNetMobile: 1056, 4, 32, False; NASNetLarge: 4032, 6, 96,"
                    " True)"),
    "tiny_inception_v3": (tiny_inception_v3, 75, "normal", ["InceptionV3"],
                          "public InceptionV3, every Conv2D with 1/32 of its filters"),
    "tiny_inception_resnet_v2": (tiny_inception_resnet_v2, 75, "normal", ["InceptionResNetV2"],
                                 "public InceptionResNetV2 at 1/32 of the filters with blocks block35_1,"
                                 " block17_1, block8_1 and block8_10 only (of 10, 20, 10)"),
    "tiny_xception": (tiny_xception, 71, "normal", ["Xception"],
                      "public Xception, every Conv2D/SeparableConv2D with 1/32 of its filters"),
}


def perturb(gen, model, rng):
    """Non-trivial values for the weights whose initial value makes a layer an identity."""
    # Keras 3's LayerScale creates its weight without a name: its path ends in "/variable"
    scale_ids = {id(w) for layer in model._flatten_layers(include_self=False)
                 if type(layer).__name__ == "LayerScale" for w in layer.weights}
    for v in model.weights:
        name = (v.path if gen == "k3" else v.name).split("/")[-1].split(":")[0]
        shape = tuple(int(d) for d in v.shape)
        if id(v) in scale_ids or name in ("gamma", "moving_variance", "variance"):
            val = rng.uniform(0.5, 1.5, shape)
        elif name in ("beta", "moving_mean", "mean"):
            val = rng.normal(0.0, 0.2, shape)
        elif name == "bias":
            val = rng.normal(0.0, 0.1, shape)
        else:
            continue
        v.assign(val.astype(np.float32))
    # An adapted Normalization computes from constants made out of its variables by
    # finalize_state() (Keras calls it after loading); without this the live model would still
    # use mean 0, variance 1 and disagree with every reloaded copy.
    for layer in model._flatten_layers(include_self=False):
        if type(layer).__name__ == "Normalization":
            layer.finalize_state()


def make_input(kind, side, seed):
    rng = np.random.default_rng(seed)
    if kind == "pixels":   # models with Rescaling/Normalization inside expect 0..255
        return rng.uniform(0.0, 255.0, (BATCH, side, side, 3)).astype(np.float32)
    return rng.standard_normal((BATCH, side, side, 3)).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------

def close(ours, ref):
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ours.shape != ref.shape:
        return False, "shape %s vs %s" % (ours.shape, ref.shape)
    err = np.abs(ours - ref)
    return bool(np.all(err <= ATOL + RTOL * np.abs(ref))), "max abs err %.3g" % float(err.max())


def predict(model, x):
    return np.asarray(model.predict(x, verbose=0, batch_size=BATCH), dtype=np.float32)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_json(path, obj, gz, indent=None):
    text = json.dumps(obj, indent=indent, sort_keys=False) + "\n"
    if gz:
        path += ".gz"
        with open(path, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
                f.write(text.encode())
    else:
        with open(path, "w") as f:
            f.write(text)
    return os.path.basename(path)


def h5_datasets(path):
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[()]
        f.visititems(visit)
    return out


def h5_weight_names(path, root):
    """{layer group: [weight_names]} of a legacy HDF5 file (root '' or 'model_weights')."""
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        g = f[root] if root else f
        for lname in g.attrs["layer_names"]:
            lname = lname.decode() if isinstance(lname, bytes) else lname
            out[lname] = [n.decode() if isinstance(n, bytes) else n for n in g[lname].attrs["weight_names"]]
    return out


def check_manifest_against_files(gen, man, model, files):
    """The manifest's weight locations are those of the files Keras wrote."""
    def flat(layers):
        for e in layers:
            yield e
    expect = {e["name"]: e.get("h5_weight_names", []) for e in flat(man["layers"])
              if "model_layers_index" in e}
    for path, root in files["legacy"]:
        got = h5_weight_names(path, root)
        if list(got) != man["h5_layer_names"]:
            raise SystemExit("manifest: layer_names of %s differ" % path)
        for lname, names in got.items():
            if names != expect.get(lname, []):
                raise SystemExit("manifest: weight_names of %s in %s: %s vs %s"
                                 % (lname, path, names, expect.get(lname)))
    if gen == "k3":
        data = h5_datasets(files["weights_h5"])
        data = {k: v for k, v in data.items() if "/vars/" in k or k.startswith("vars/")}
        if sorted(data) != sorted(w["weights_h5"] for w in man["weights"]):
            raise SystemExit("manifest: .weights.h5 dataset paths differ from the recorded ones")
        for v, w in zip(model.weights, man["weights"]):
            if not np.array_equal(np.asarray(v.numpy()), data[w["weights_h5"]]):
                raise SystemExit("manifest: %s is not %s" % (w["weights_h5"], w["path"]))


def custom_objects(K):
    """The application modules' own layer classes, as a user loading their files passes them."""
    return {"LayerScale": A(K, "convnext", "LayerScale"),
            "StochasticDepth": A(K, "convnext", "StochasticDepth"),
            "CustomScaleLayer": A(K, "inception_resnet_v2", "CustomScaleLayer")}


def make_weighted(gen, K, keras, name, spec, x, out):
    builder, side = spec[0], spec[1]
    fresh(K)
    model = builder(K, side)
    perturb(gen, model, np.random.default_rng([SEED, zlib.crc32(name.encode()), 2 if gen == "k2" else 3]))
    y = predict(model, x)
    p = lambda suffix: os.path.join(out, name + suffix)  # noqa: E731
    files = []
    if gen == "k3":
        model.save(p(".keras"))
        model.save_weights(p(".weights.h5"))
        files += [name + ".keras", name + ".weights.h5"]
    model.save(p(".%s.h5" % gen))
    files.append("%s.%s.h5" % (name, gen))
    if gen == "k2":
        model.save_weights(p(".k2.weights_only.h5"))
        files.append(name + ".k2.weights_only.h5")
    with open(p(".%s.json" % gen), "w") as f:
        f.write(model.to_json())
    files.append("%s.%s.json" % (name, gen))
    np.save(p(".%s.output0.npy" % gen), y)
    files.append("%s.%s.output0.npy" % (name, gen))
    man, cfg = manifest_of(gen, K, model, keras)
    legacy = [(p(".%s.h5" % gen), "model_weights")]
    if gen == "k2":
        legacy.append((p(".k2.weights_only.h5"), ""))
    check_manifest_against_files(gen, man, model, {"legacy": legacy, "weights_h5": p(".weights.h5")})

    co = custom_objects(K)

    def from_json_and(weights, **kw):
        m = K.models.model_from_json(open(p(".%s.json" % gen)).read(), **kw)
        m.load_weights(weights)
        return m
    if gen == "k3":
        reloads = {"keras": lambda **kw: K.saving.load_model(p(".keras"), **kw),
                   "json+weights.h5": lambda **kw: from_json_and(p(".weights.h5"), **kw),
                   "k3.h5": lambda **kw: K.saving.load_model(p(".k3.h5"), **kw)}
    else:
        reloads = {"k2.h5": lambda **kw: K.models.load_model(p(".k2.h5"), **kw),
                   "json+k2.weights_only.h5": lambda **kw: from_json_and(p(".k2.weights_only.h5"), **kw)}
    failures, needs = {}, {}
    first_line = lambda e: "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:300])  # noqa: E731
    for what, load in reloads.items():
        try:
            m = load()
        except Exception as e:
            # Not registered where this loader looks (tf_keras: LayerScale, CustomScaleLayer, ...):
            # a user passes custom_objects, and so do we; the need is recorded.
            try:
                m = load(custom_objects=co)
                needs[what] = first_line(e)
            except Exception as e2:
                # Keras 3 cannot read back its own legacy .h5 of a model whose config holds an
                # operation called with a Python scalar (MobileNetV3's hard_sigmoid: x + 3.0):
                # a fact recorded in applications.json, not a fixture failure. Anything else is.
                if what != "k3.h5":
                    raise
                failures[what] = first_line(e2)
                print("  note: %s %s: Keras cannot reload it: %s" % (gen, name, failures[what]), flush=True)
                continue
        ok, msg = close(predict(m, x), y)
        if not ok:
            raise SystemExit("self-check failed: %s %s %s: %s" % (gen, name, what, msg))
        if getattr(m, "optimizer", None) is not None:
            raise SystemExit("self-check: %s %s %s came back with an optimizer" % (gen, name, what))
        K.backend.clear_session()
    man["needs_custom_objects"] = needs
    man["keras_cannot_reload"] = failures
    return files, man, cfg, y


LOAD_TIMEOUT_S = 120


def cross_loads(keras, tf_keras, name, x, out):
    """Which cross-generation loads Keras itself manages (facts, not failures)."""
    import signal

    def alarm(signum, frame):
        raise TimeoutError("gave up after %d s" % LOAD_TIMEOUT_S)
    p = lambda suffix: os.path.join(out, name + suffix)  # noqa: E731
    trials = {
        "keras3 loads k2.h5": (lambda: keras.saving.load_model(
            p(".k2.h5"), custom_objects=custom_objects(keras)), ".k2"),
        "tf_keras loads k3.h5": (lambda: tf_keras.models.load_model(
            p(".k3.h5"), custom_objects=custom_objects(tf_keras)), ".k3"),
        "keras3 loads k2.json + k2.weights_only.h5": (lambda: _json_weights(
            keras, p(".k2.json"), p(".k2.weights_only.h5")), ".k2"),
    }
    result = {}
    signal.signal(signal.SIGALRM, alarm)
    for what, (load, gen) in trials.items():
        signal.alarm(LOAD_TIMEOUT_S)
        try:
            keras.backend.clear_session()
            tf_keras.backend.clear_session()
            m = load()
            ok, msg = close(predict(m, x), np.load(p("%s.output0.npy" % gen)))
            result[what] = "ok" if ok else "loads, predictions differ (%s)" % msg
        except Exception as e:
            result[what] = "fails: %s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:200]
                                              if str(e).strip() else "")
        finally:
            signal.alarm(0)
    return result


def _json_weights(K, arch, weights):
    m = K.models.model_from_json(open(arch).read(), custom_objects=custom_objects(K))
    m.load_weights(weights)
    return m


def big_resnet50(keras, tf_keras, out):
    """The issue's own case: full-size ResNet50 (weights=None, classes=10, 32x32), uncompiled."""
    os.makedirs(out, exist_ok=True)
    spec = (lambda K, s: K.applications.ResNet50(weights=None, input_shape=(s, s, 3), classes=CLASSES),
            32, "normal", ["ResNet50"], "public ResNet50, full size")
    x = make_input("normal", 32, SEED + 50)
    np.save(os.path.join(out, "ResNet50.input0.npy"), x)
    files = ["ResNet50.input0.npy"]
    for gen, K in (("k3", keras), ("k2", tf_keras)):
        f, man, _, y = make_weighted(gen, K, keras, "ResNet50", spec, x, out)
        write_json(os.path.join(out, "ResNet50.%s.manifest.json" % gen), man, False)
        files += f + ["ResNet50.%s.manifest.json" % gen]
        print("big ResNet50 %s: output %s" % (gen, np.round(y[0], 4)), flush=True)
    return {fn: os.path.getsize(os.path.join(out, fn)) for fn in files}


# ---------------------------------------------------------------------------------------------
# generate
# ---------------------------------------------------------------------------------------------

def generate(out, big, only):
    tf, keras, tf_keras = import_generations()
    import h5py
    BUILTIN_K2.update(n for n in dir(tf_keras.layers) if n[:1].isupper())
    BUILTIN_K2.update(["Functional", "Sequential", "Model", "TFOpLambda", "SlicingOpLambda"])
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="apps-")
    names = public_names(keras)
    missing_k2 = [n for n in names if not hasattr(tf_keras.applications, n)]
    covered = set(n for spec in TINY.values() for n in spec[3])
    if not only and set(names) - covered:
        raise SystemExit("no tiny fixture stands for: %s" % sorted(set(names) - covered))
    union = Union()
    models = {}

    # 1. structure of every public model ------------------------------------------------------
    structural = {}
    for n in names:
        if only and n not in only:
            continue
        side = MIN_SIZE.get(n, 32)
        entry = {"input_shape": [None, side, side, 3], "weighted_fixture": None,
                 "stood_for_by": sorted(t for t, s in TINY.items() if n in s[3])}
        per_gen = {}
        for gen, K in (("k3", keras), ("k2", tf_keras)):
            if not hasattr(K.applications, n):
                continue
            fresh(K)
            model = getattr(K.applications, n)(weights=None, input_shape=(side, side, 3), classes=CLASSES)
            man, cfg = manifest_of(gen, K, model, keras)
            del model
            fresh(K)
            notop = getattr(K.applications, n)(weights=None, input_shape=(side, side, 3),
                                               include_top=False, pooling="avg")
            man["include_top_false_pooling_avg"] = {
                "output_shape": list(notop.output_shape), "params": int(notop.count_params())}
            del notop
            union.add(gen, n, cfg)
            per_gen[gen] = (man, cfg)
            entry.setdefault("params", {})[gen] = man["params"]["total"]
        structural[n] = (entry, per_gen)
        print("%-18s k3 %10d params, %4d layers; k2 %10d" % (
            n, entry["params"]["k3"], len(per_gen["k3"][0]["layers"]), entry["params"].get("k2", -1)),
            flush=True)
        K = None
        keras.backend.clear_session()
        tf_keras.backend.clear_session()

    # gzip decision: compact JSON text sizes of the structural files
    texts = 0
    for n, (entry, per_gen) in structural.items():
        for gen, (man, cfg) in per_gen.items():
            texts += len(json.dumps(cfg)) + len(json.dumps(man))
    gz = texts > GZIP_OVER
    for n, (entry, per_gen) in structural.items():
        files = []
        for gen, (man, cfg) in per_gen.items():
            files.append(write_json(os.path.join(out, "%s.%s.json" % (n, gen)), cfg, gz))
        files.append(write_json(os.path.join(out, "%s.manifest.json" % n),
                                {g: per_gen[g][0] for g in per_gen}, gz))
        entry["files"] = {f: {"bytes": os.path.getsize(os.path.join(out, f)),
                              "sha256": sha256(os.path.join(out, f))} for f in files}
        models[n] = entry

    # 2. weighted tiny fixtures ---------------------------------------------------------------
    tiny = {}
    for name, spec in TINY.items():
        if only and name not in only:
            continue
        builder, side, kind, stands_for, desc = spec
        x = make_input(kind, side, [SEED, zlib.crc32(name.encode())])
        np.save(os.path.join(out, name + ".input0.npy"), x)
        files = [name + ".input0.npy"]
        mans, outs = {}, {}
        for gen, K in (("k3", keras), ("k2", tf_keras)):
            f, man, cfg, y = make_weighted(gen, K, keras, name, spec, x, out)
            files += f
            mans[gen] = man
            outs[gen] = y
            union.add(gen, name, cfg)
            K.backend.clear_session()
        if WRITE_TINY_MANIFESTS:
            files.append(write_json(os.path.join(out, name + ".manifest.json"), mans, False))
        cross = cross_loads(keras, tf_keras, name, x, out)
        fz = {f: {"bytes": os.path.getsize(os.path.join(out, f)), "sha256": sha256(os.path.join(out, f))}
              for f in files}
        tiny[name] = {
            "description": desc, "stands_for": stands_for,
            "input_shape": [BATCH, side, side, 3],
            "input": "uniform 0..255 (the model rescales)" if kind == "pixels" else "standard normal",
            "output_shape": list(outs["k3"].shape),
            "max_probability": {g: float(outs[g].max()) for g in outs},
            "params": {g: mans[g]["params"]["total"] for g in mans},
            "layers": {g: len(mans[g]["layers"]) for g in mans},
            "keras_cannot_reload": {g: mans[g]["keras_cannot_reload"] for g in mans
                                    if mans[g]["keras_cannot_reload"]},
            "loads_only_with_custom_objects": {g: mans[g]["needs_custom_objects"] for g in mans
                                               if mans[g]["needs_custom_objects"]},
            "cross_generation": cross,
            "files": fz,
        }
        for n in stands_for:
            if n in models:
                models[n]["weighted_fixture"] = models[n]["weighted_fixture"] or name
        print("%-38s %8d params  %8d bytes  max p k3 %.3f k2 %.3f" % (
            name, mans["k3"]["params"]["total"], sum(v["bytes"] for v in fz.values()),
            outs["k3"].max(), outs["k2"].max()), flush=True)

    # 3. applications.json ---------------------------------------------------------------------
    u = union.as_json()
    tiny_names = set(tiny)
    uncovered = {}
    for what in ("layer_classes", "activations", "custom_classes", "operations"):
        for gen, d in u[what].items():
            for k, users in d.items():
                flat = users if isinstance(users, list) else sorted(set(sum(users.values(), [])))
                if not set(flat) & tiny_names:
                    uncovered.setdefault(what, {}).setdefault(gen, []).append(k)
    if uncovered and not only:
        print("WARNING: in no weighted fixture: %s" % json.dumps(uncovered), flush=True)
    manifest = {
        "versions": {"keras": keras.__version__, "tf_keras": tf_keras.__version__,
                     "tensorflow": tf.__version__, "h5py": h5py.__version__, "numpy": np.__version__,
                     "hdf5": h5py.version.hdf5_version},
        "seed": SEED, "tolerance": {"rtol": RTOL, "atol": ATOL}, "classes": CLASSES,
        "structural_json_gzipped": gz,
        "public_models": names,
        "public_models_missing_in_tf_keras": missing_k2,
        "tf_keras_only_applications": sorted(n for n in dir(tf_keras.applications)
                                             if n[:1].isupper() and n not in names),
        "models": models,
        "tiny": tiny,
        "union": u,
        "in_no_weighted_fixture": uncovered,
    }
    if big:
        manifest["big"] = {"ResNet50": {"dir": "not committed", "files": big_resnet50(keras, tf_keras, big)}}
    with open(os.path.join(out, "applications.json" if not only else "applications.partial.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write the fixtures with real Keras")
    g.add_argument("outdir", nargs="?", default=os.path.dirname(os.path.abspath(__file__)))
    g.add_argument("--big", metavar="BIGDIR", help="also write the full-size ResNet50 files there")
    g.add_argument("--only", nargs="*", default=None, help="only these public models / tiny fixtures")
    a = ap.parse_args()
    return generate(a.outdir, a.big, set(a.only) if a.only else None)


if __name__ == "__main__":
    sys.exit(main())
