#!/usr/bin/env python3
"""Keras interop fixtures: made by REAL Keras, and a checker for files written by keras-cpp.

Usage
  python3 make_fixtures.py generate [OUTDIR]   # OUTDIR defaults to this script's directory
  python3 make_fixtures.py verify DIR          # load keras-cpp-written files into Keras, compare

Requires: keras (3.x, TensorFlow backend), tf_keras (Keras 2), tensorflow, h5py, numpy. CPU only.

generate: for every model NAME below, built, compiled (Adam, lr 1e-2) and trained a few steps on
random data with fixed seeds (so BatchNormalization statistics and optimizer slots are not their
initial values), once with Keras 3 (`import keras`) and once with Keras 2 (`import tf_keras`):

  NAME.input<i>.npy        float32 model input i (batch of 4); shared by both generations
  NAME.keras               Keras 3 zip  (model.save("NAME.keras"))
  NAME.weights.h5          Keras 3 weights-only (model.save_weights("NAME.weights.h5"))
  NAME.k3.h5               Keras 3 legacy full-model HDF5 (model.save("NAME.k3.h5"))
  NAME.k3.json             Keras 3 model.to_json()
  NAME.k3.output<i>.npy    Keras 3 prediction of output i (inference mode) on the inputs above
  NAME.k2.h5               Keras 2 full-model HDF5 (tf_keras model.save("NAME.k2.h5"))
  NAME.k2.weights_only.h5  Keras 2 legacy weights-only HDF5 (tf_keras model.save_weights(...h5));
                           NOT named *.weights.h5: for such a name tf_keras 2.13+ writes the
                           Keras-3-style layers/<key>/vars tree instead of the legacy layout
  NAME.k2.json             Keras 2 model.to_json()
  NAME.k2.output<i>.npy    Keras 2 prediction of output i (inference mode)
  fixtures.json            library versions, model descriptions, file list with sizes and sha256,
                           and which cross-generation loads Keras itself manages

The two generations have DIFFERENT weights (each initialises its own), so compare a generation's
files only with that generation's outputs. Layer and model names are explicit except in `mlp`
(Keras's automatic names: K3 `input_layer`, `dense`, `dense_1`; K2 `input_1`, `dense`, ...).
Every file written is reloaded by the Keras that wrote it and must reproduce its outputs.

verify: convention for files that keras-cpp writes into DIR (the generated fixtures follow it
too, so `verify` can be run on them). Inputs of STEM are STEM.input<i>.npy, falling back to
BASE.input<i>.npy where BASE is STEM without a trailing `.k2`/`.k3`; expected outputs (ours) are
STEM.output<i>.npy (for a .keras file also STEM.k3.output<i>.npy).
  * STEM.keras: full model, loaded with Keras 3.
  * STEM.h5 with a `model_config` attribute: full model. Loaded with the generation named by its
    `keras_version` attribute (2.x: tf_keras, else Keras 3) -- must work -- and with the other one,
    where failing to load is only a warning (known Keras incompatibilities, see FACTS.md) unless
    --strict; loading but predicting differently is always a failure.
  * STEM.weights.h5: Keras-3-format weights. Architecture: first existing of STEM.keras, STEM.h5,
    STEM.json; loaded with Keras 3 and load_weights(...).
  * STEM.weights_only.h5, or any other .h5 without `model_config`: legacy weights-only file.
    Architecture: first existing of STEM.h5, STEM.json, STEM.keras; loaded (and load_weights) with
    the architecture file's generation (required) and the other one (warning only).
  * STEM.json (not fixtures.json, applications.json or a manifest): model_from_json in its generation (top-level keras_version
    2.x: tf_keras, else Keras 3), other generation warning only.
  Predictions are compared with |ours - keras| <= 1e-5 + 1e-5*|keras|. One line per check
  (ok / FAIL / warn); exit status 1 on any FAIL, 2 if DIR holds nothing to check. A load that
  hangs is abandoned after 120 s (tf_keras loops forever on some bad node indices).
"""

import argparse
import hashlib
import json
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

SEED = 1234
BATCH = 4          # prediction batch stored in the fixtures
TRAIN_N = 32       # random training samples
TRAIN_BATCH = 8
RTOL = ATOL = 1e-5


# ---------------------------------------------------------------------------------------------
# Model builders. `K` is the keras module of one generation (keras or tf_keras); both expose the
# same API for the layers used here. Each returns (model, list of input shapes without batch).
# ---------------------------------------------------------------------------------------------

def build_mlp(K):
    L = K.layers
    model = K.Sequential([
        K.Input(shape=(8,)),
        L.Dense(16, activation="relu"),
        L.Dropout(0.25),
        L.Dense(4, activation="softmax"),
    ], name="mlp")
    return model


def build_cnn(K):
    L = K.layers
    x_in = K.Input(shape=(12, 12, 3), name="image")
    x = L.Conv2D(8, 3, padding="same", name="conv")(x_in)
    x = L.BatchNormalization(name="bn")(x)
    x = L.ReLU(name="relu")(x)
    x = L.DepthwiseConv2D(3, depth_multiplier=2, padding="valid", name="dwconv")(x)
    x = L.Activation("tanh", name="act")(x)
    x = L.SeparableConv2D(8, 3, padding="same", activation="relu", name="sepconv")(x)
    x = L.MaxPooling2D(2, name="pool")(x)
    x = L.GlobalAveragePooling2D(name="gap")(x)
    out = L.Dense(4, activation="softmax", name="head")(x)
    return K.Model(x_in, out, name="cnn")


def build_two_inputs(K):
    L = K.layers
    a = K.Input(shape=(6,), name="in_a")
    b = K.Input(shape=(6,), name="in_b")
    shared = L.Dense(8, activation="tanh", name="shared")
    sa, sb = shared(a), shared(b)          # one layer, two nodes (0 and 1)
    cat = L.Concatenate(name="concat")([sa, sb])
    add = L.Add(name="add")([sa, sb])
    h = L.Concatenate(name="concat2")([cat, add])
    out = L.Dense(3, name="out")(h)        # linear, trained with mse
    return K.Model([a, b], out, name="two_inputs")


def _backbone(K, name):
    L = K.layers
    x_in = K.Input(shape=(12, 12, 3), name=name + "_in")
    x = L.Conv2D(4, 3, name=name + "_conv")(x_in)
    x = L.BatchNormalization(name=name + "_bn")(x)
    x = L.Activation("relu", name=name + "_relu")(x)
    x = L.GlobalAveragePooling2D(name=name + "_gap")(x)
    out = L.Dense(8, activation="relu", name=name + "_dense")(x)
    return K.Model(x_in, out, name=name)


def build_nested(K):
    L = K.layers
    backbone = _backbone(K, "backbone")
    x_in = K.Input(shape=(12, 12, 3), name="image")
    f = backbone(x_in)
    out = L.Dense(4, activation="softmax", name="head")(f)
    return K.Model(x_in, out, name="nested")


def build_nested_seq(K):
    L = K.layers
    inner = K.Sequential([                 # no Input: built when the outer model is built
        L.Dense(12, activation="relu", name="inner_dense"),
        L.BatchNormalization(name="inner_bn"),
    ], name="inner")
    return K.Sequential([
        K.Input(shape=(8,), name="x"),
        L.Dense(10, activation="elu", name="pre"),
        inner,
        L.Dense(4, activation="softmax", name="post"),
    ], name="nested_seq")


def build_frozen(K):
    L = K.layers
    x_in = K.Input(shape=(8,), name="x")
    x = L.Dense(16, activation="relu", name="frozen_dense")(x_in)
    x = L.BatchNormalization(name="frozen_bn")(x)
    x = L.Dense(16, activation="sigmoid", name="dense")(x)
    x = L.BatchNormalization(name="bn")(x)
    out = L.Dense(3, activation="softmax", name="head")(x)
    return K.Model(x_in, out, name="frozen")


def freeze_frozen(model):
    model.get_layer("frozen_dense").trainable = False
    model.get_layer("frozen_bn").trainable = False


def build_nested_frozen(K):
    L = K.layers
    backbone = _backbone(K, "backbone")
    x_in = K.Input(shape=(12, 12, 3), name="image")
    f = backbone(x_in)
    out = L.Dense(4, activation="softmax", name="head")(f)
    return K.Model(x_in, out, name="nested_frozen")


def freeze_nested_frozen(model):
    # Inside the nested model: freeze the conv and the BN, keep its dense trainable, so the
    # legacy .h5 weight_names order (trainable first) differs from creation order.
    bb = model.get_layer("backbone")
    bb.get_layer("backbone_conv").trainable = False
    bb.get_layer("backbone_bn").trainable = False


def build_nested_shared(K):
    L = K.layers
    e_in = K.Input(shape=(6,), name="enc_in")
    e = L.Dense(8, activation="gelu", name="enc_dense")(e_in)
    e = L.LayerNormalization(name="enc_ln")(e)
    e = L.Dense(4, name="enc_out")(e)
    encoder = K.Model(e_in, e, name="encoder")
    a = K.Input(shape=(6,), name="in_a")
    b = K.Input(shape=(6,), name="in_b")
    ea, eb = encoder(a), encoder(b)        # nested model called twice
    d = L.Subtract(name="sub")([ea, eb])
    out = L.Dense(2, name="head")(d)
    return K.Model([a, b], [out, eb], name="nested_shared")  # a nested call is a model output


# name -> builder, input shapes, target kind, classes/units, metrics, freeze step, description
MODELS = {
    "mlp": dict(build=build_mlp, inputs=[(8,)], target="classes", classes=4,
                desc="Sequential Input(8) Dense(16 relu) Dropout(0.25) Dense(4 softmax); automatic names"),
    "cnn": dict(build=build_cnn, inputs=[(12, 12, 3)], target="classes", classes=4,
                desc="Conv2D same, BN, ReLU, DepthwiseConv2D(dm 2), Activation tanh, SeparableConv2D relu,"
                     " MaxPooling2D, GlobalAveragePooling2D, Dense softmax"),
    "two_inputs": dict(build=build_two_inputs, inputs=[(6,), (6,)], target="regression", classes=3,
                       desc="Functional, inputs in_a/in_b, shared Dense(8 tanh) on both, Concatenate + Add,"
                            " Concatenate, Dense(3 linear); loss mean_squared_error, metric mae"),
    "nested": dict(build=build_nested, inputs=[(12, 12, 3)], target="classes", classes=4,
                   desc="Functional backbone (Conv2D, BN, relu, GAP, Dense 8) used as a layer in an outer"
                        " Functional, then Dense(4 softmax)"),
    "nested_seq": dict(build=build_nested_seq, inputs=[(8,)], target="classes", classes=4,
                       desc="Sequential [Input, Dense elu, Sequential 'inner' (no Input) [Dense relu, BN],"
                            " Dense softmax]"),
    "nested_shared": dict(build=build_nested_shared, inputs=[(6,), (6,)], target="regression", classes=2,
                          outputs=2, extra_outputs=[4], metrics=None,
                          desc="Functional encoder (Dense gelu, LayerNormalization, Dense 4) called on in_a and"
                               " in_b, Subtract, Dense(2); outputs [head, encoder(in_b)]; loss mse on both,"
                               " no metrics"),
    "frozen": dict(build=build_frozen, inputs=[(8,)], target="classes", classes=3, freeze=freeze_frozen,
                   desc="Functional Dense(frozen) BN(frozen) Dense BN Dense; trained, then frozen, recompiled"
                        " and trained again"),
    "nested_frozen": dict(build=build_nested_frozen, inputs=[(12, 12, 3)], target="classes", classes=4,
                          freeze=freeze_nested_frozen,
                          desc="as nested, with the backbone's Conv2D and BN frozen after a first training"
                               " phase (nested weight order differs from creation order)"),
}


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

def as_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def close(ours, ref):
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ours.shape != ref.shape:
        return False, "shape %s vs keras %s" % (ours.shape, ref.shape)
    err = np.abs(ours - ref)
    ok = bool(np.all(err <= ATOL + RTOL * np.abs(ref)))
    return ok, "max abs err %.3g" % (float(err.max()) if err.size else 0.0)


def predict(model, xs):
    y = model.predict(xs if len(xs) > 1 else xs[0], verbose=0, batch_size=BATCH)
    return [np.asarray(v, dtype=np.float32) for v in as_list(y)]


def compile_model(K, model, spec):
    # Not "mse": Keras 3.15 cannot load a legacy .h5 whose training_config has loss "mse"
    # ("Could not deserialize 'keras.metrics.mse'"); the long name loads in both generations.
    if spec["target"] == "regression":
        loss, metrics = "mean_squared_error", ["mae"]
    else:
        loss, metrics = "sparse_categorical_crossentropy", ["accuracy"]
    model.compile(optimizer=K.optimizers.Adam(learning_rate=1e-2), loss=loss,
                  metrics=spec.get("metrics", metrics))


def train_data(spec, rng):
    xs = [rng.standard_normal((TRAIN_N,) + s).astype(np.float32) for s in spec["inputs"]]
    if spec["target"] == "regression":
        y = rng.standard_normal((TRAIN_N, spec["classes"])).astype(np.float32)
        if spec.get("outputs", 1) > 1:
            y = [y] + [rng.standard_normal((TRAIN_N, n)).astype(np.float32) for n in spec["extra_outputs"]]
    else:
        y = rng.integers(0, spec["classes"], size=(TRAIN_N,)).astype(np.int64)
    return xs, y


def fit(model, xs, y):
    model.fit(xs if len(xs) > 1 else xs[0], y, batch_size=TRAIN_BATCH, epochs=2, shuffle=False, verbose=0)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout("gave up after %d s (tf_keras loops forever on some node indices)" % LOAD_TIMEOUT_S)


LOAD_TIMEOUT_S = 120


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def import_generations():
    import tensorflow as tf
    tf.config.set_visible_devices([], "GPU")
    try:
        tf.config.experimental.enable_op_determinism()
    except Exception:
        pass
    import keras
    import tf_keras
    return tf, keras, tf_keras


# ---------------------------------------------------------------------------------------------
# generate
# ---------------------------------------------------------------------------------------------

def make_one(gen, K, name, spec, inputs, out):
    """Builds, trains and saves one model with one Keras generation; returns written files."""
    K.backend.clear_session()
    K.utils.set_random_seed(SEED)
    model = spec["build"](K)
    compile_model(K, model, spec)
    rng = np.random.default_rng(SEED + 1)
    xs, y = train_data(spec, rng)
    fit(model, xs, y)
    if "freeze" in spec:  # second phase: freeze, recompile (new optimizer), train again
        spec["freeze"](model)
        compile_model(K, model, spec)
        fit(model, xs, y)
    outputs = predict(model, inputs)

    p = lambda suffix: os.path.join(out, name + suffix)  # noqa: E731
    files = []
    if gen == "k3":
        model.save(p(".keras"))
        model.save_weights(p(".weights.h5"))
        files += [name + ".keras", name + ".weights.h5"]
    model.save(p(".%s.h5" % gen))
    if gen == "k2":
        model.save_weights(p(".k2.weights_only.h5"))
        files.append(name + ".k2.weights_only.h5")
    with open(p(".%s.json" % gen), "w") as f:
        f.write(model.to_json())
    files += ["%s.%s.h5" % (name, gen), "%s.%s.json" % (name, gen)]
    for i, o in enumerate(outputs):
        np.save(p(".%s.output%d.npy" % (gen, i)), o)
        files.append("%s.%s.output%d.npy" % (name, gen, i))

    # Self-check: every file reloads in its own generation and reproduces the outputs.
    reloaded = {}
    if gen == "k3":
        reloaded["keras"] = K.saving.load_model(p(".keras"))
        m = K.models.model_from_json(open(p(".k3.json")).read())
        m.load_weights(p(".weights.h5"))
        reloaded["json+weights.h5"] = m
        reloaded["k3.h5"] = K.saving.load_model(p(".k3.h5"))
    else:
        reloaded["k2.h5"] = K.models.load_model(p(".k2.h5"))
        m = K.models.model_from_json(open(p(".k2.json")).read())
        m.load_weights(p(".k2.weights_only.h5"))
        reloaded["json+k2.weights_only.h5"] = m
    for what, m in reloaded.items():
        for i, (a, b) in enumerate(zip(predict(m, inputs), outputs)):
            ok, msg = close(a, b)
            if not ok:
                raise SystemExit("self-check failed: %s %s %s output %d: %s" % (gen, name, what, i, msg))
    return files, [list(o.shape) for o in outputs]


def cross_loads(keras, tf_keras, name, inputs, out):
    """Records which cross-generation loads Keras itself manages (facts, not failures)."""
    result = {}
    p = lambda suffix: os.path.join(out, name + suffix)  # noqa: E731
    trials = {
        "keras3 loads k2.h5": (lambda: keras.saving.load_model(p(".k2.h5")), ".k2"),
        "tf_keras loads k3.h5": (lambda: tf_keras.models.load_model(p(".k3.h5")), ".k3"),
    }
    import signal
    signal.signal(signal.SIGALRM, _alarm)
    for what, (load, gen) in trials.items():
        signal.alarm(LOAD_TIMEOUT_S)
        try:
            keras.backend.clear_session()
            tf_keras.backend.clear_session()
            m = load()
            oks = [close(a, np.load(p("%s.output%d.npy" % (gen, i))))[0]
                   for i, a in enumerate(predict(m, inputs))]
            result[what] = "ok" if all(oks) else "loads, predictions differ"
        except Exception as e:  # the message is the fact worth keeping
            result[what] = "fails: %s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:200])
        finally:
            signal.alarm(0)
    return result


def generate(out):
    tf, keras, tf_keras = import_generations()
    import h5py
    os.makedirs(out, exist_ok=True)
    manifest = {
        "versions": {"keras": keras.__version__, "tf_keras": tf_keras.__version__,
                     "tensorflow": tf.__version__, "h5py": h5py.__version__, "numpy": np.__version__,
                     "hdf5": h5py.version.hdf5_version},
        "seed": SEED, "tolerance": {"rtol": RTOL, "atol": ATOL},
        "models": {},
    }
    for name, spec in MODELS.items():
        rng = np.random.default_rng(SEED + 7)
        inputs = [rng.standard_normal((BATCH,) + s).astype(np.float32) for s in spec["inputs"]]
        files = []
        for i, x in enumerate(inputs):
            np.save(os.path.join(out, "%s.input%d.npy" % (name, i)), x)
            files.append("%s.input%d.npy" % (name, i))
        f3, shapes = make_one("k3", keras, name, spec, inputs, out)
        f2, _ = make_one("k2", tf_keras, name, spec, inputs, out)
        files += f3 + f2
        manifest["models"][name] = {
            "description": spec["desc"],
            "input_shapes": [[BATCH] + list(s) for s in spec["inputs"]],
            "output_shapes": shapes,
            "cross_generation": cross_loads(keras, tf_keras, name, inputs, out),
            "files": {f: {"bytes": os.path.getsize(os.path.join(out, f)),
                          "sha256": sha256(os.path.join(out, f))} for f in files},
        }
        print("%-14s %2d files, %7d bytes" % (name, len(files), sum(
            v["bytes"] for v in manifest["models"][name]["files"].values())))
    with open(os.path.join(out, "fixtures.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")
    return 0


# ---------------------------------------------------------------------------------------------
# verify
# ---------------------------------------------------------------------------------------------

def strip_gen(stem):
    for tag in (".k2", ".k3"):
        if stem.endswith(tag):
            return stem[: -len(tag)]
    return stem


def numbered(d, base, kind):
    arrays, i = [], 0
    while os.path.exists(os.path.join(d, "%s.%s%d.npy" % (base, kind, i))):
        arrays.append(np.load(os.path.join(d, "%s.%s%d.npy" % (base, kind, i))))
        i += 1
    return arrays


def find_io(d, stem, is_keras_zip):
    inputs = numbered(d, stem, "input") or numbered(d, strip_gen(stem), "input")
    outputs = numbered(d, stem, "output")
    if not outputs and is_keras_zip:
        outputs = numbered(d, stem + ".k3", "output")
    return inputs, outputs


def compare(label, model, inputs, outputs):
    if not inputs or not outputs:
        return False, "%s: no inputs/outputs .npy found" % label
    got = predict(model, [x.astype(np.float32) for x in inputs])
    if len(got) != len(outputs):
        return False, "%s: keras gives %d outputs, files have %d" % (label, len(got), len(outputs))
    msgs, ok_all = [], True
    for i, (ref, ours) in enumerate(zip(got, outputs)):
        ok, msg = close(ours, ref)
        ok_all &= ok
        msgs.append("out%d %s" % (i, msg))
    return ok_all, "%s: %s" % (label, "; ".join(msgs))


def file_generation(path):
    """'k2' or 'k3': which Keras wrote (or claims to have written) a model file."""
    if path.endswith(".keras"):
        return "k3"
    if path.endswith(".json"):
        with open(path) as f:
            cfg = json.load(f)
        return "k2" if str(cfg.get("keras_version", "3")).startswith("2") else "k3"
    import h5py
    with h5py.File(path, "r") as f:
        v = f.attrs.get("keras_version", b"3")
        if "keras_version" not in f.attrs and "model_weights" in f:
            v = f["model_weights"].attrs.get("keras_version", b"3")
    v = v.decode() if isinstance(v, bytes) else str(v)
    return "k2" if v.startswith("2") else "k3"


def verify(d, strict):
    import signal
    _, keras, tf_keras = import_generations()
    signal.signal(signal.SIGALRM, _alarm)
    load = {"k3": lambda path: keras.saving.load_model(path),
            "k2": lambda path: tf_keras.models.load_model(path)}
    from_json = {"k3": lambda path: keras.models.model_from_json(open(path).read()),
                 "k2": lambda path: tf_keras.models.model_from_json(open(path).read())}
    who = {"k3": "keras3", "k2": "tf_keras"}
    counts = {"ok": 0, "FAIL": 0, "warn": 0}

    def run(label, fn, required):
        """required=False: the other generation; not loading is a warning (unless --strict),
        loading but predicting differently is still a failure."""
        keras.backend.clear_session()
        tf_keras.backend.clear_session()
        signal.alarm(LOAD_TIMEOUT_S)
        try:
            ok, msg = fn()
            tag = "ok" if ok else "FAIL"
        except Exception as e:
            text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
            msg = "%s: load failed: %s: %s" % (label, type(e).__name__, text)
            tag = "FAIL" if (required or strict) else "warn"
        finally:
            signal.alarm(0)
        counts[tag] += 1
        print("%-5s %s" % (tag, msg), flush=True)

    def both(primary):
        return [(primary, True), ("k2" if primary == "k3" else "k3", False)]

    def with_weights(fn, path, stem, arch_exts, legacy):
        arch = next((stem + e for e in arch_exts if os.path.exists(os.path.join(d, stem + e))), None)
        if arch is None:
            counts["FAIL"] += 1
            print("FAIL  %s: no architecture file %s" % (fn, "/".join(stem + e for e in arch_exts)))
            return
        inputs, outputs = find_io(d, stem, arch.endswith(".keras"))
        apath = os.path.join(d, arch)
        try:
            gen = file_generation(apath)
        except Exception as e:
            counts["FAIL"] += 1
            print("FAIL  %s: cannot read architecture %s: %s" % (fn, arch, str(e).strip()[:200]))
            return
        gens = both(gen) if legacy and not arch.endswith(".keras") else [("k3", True)]
        for g, required in gens:
            def check(g=g):
                m = from_json[g](apath) if arch.endswith(".json") else load[g](apath)
                m.load_weights(path)
                return compare("%s (%s, architecture %s)" % (fn, who[g], arch), m, inputs, outputs)
            run("%s (%s)" % (fn, who[g]), check, required)

    import h5py
    for fn in sorted(os.listdir(d)):
        path = os.path.join(d, fn)
        if fn.endswith(".weights.h5"):
            with_weights(fn, path, fn[: -len(".weights.h5")], (".keras", ".h5", ".json"), legacy=False)
        elif fn.endswith(".h5"):
            try:
                with h5py.File(path, "r") as f:
                    full = "model_config" in f.attrs
            except Exception as e:
                counts["FAIL"] += 1
                print("FAIL  %s: cannot open as HDF5: %s" % (fn, str(e).strip().splitlines()[0][:200]))
                continue
            if not full:
                stem = fn[: -len(".weights_only.h5")] if fn.endswith(".weights_only.h5") else fn[:-3]
                with_weights(fn, path, stem, (".h5", ".json", ".keras"), legacy=True)
                continue
            stem = fn[:-3]
            inputs, outputs = find_io(d, stem, False)
            for g, required in both(file_generation(path)):
                run("%s (%s)" % (fn, who[g]),
                    lambda g=g, path=path, fn=fn, inputs=inputs, outputs=outputs:
                    compare("%s (%s)" % (fn, who[g]), load[g](path), inputs, outputs), required)
        elif fn.endswith(".keras"):
            inputs, outputs = find_io(d, fn[:-6], True)
            run("%s (keras3)" % fn, lambda path=path, fn=fn, inputs=inputs, outputs=outputs:
                compare("%s (keras3)" % fn, load["k3"](path), inputs, outputs), True)
        elif fn.endswith(".json") and fn not in ("fixtures.json", "applications.json") and not fn.endswith(".manifest.json"):
            try:
                gen = file_generation(path)
            except Exception as e:
                counts["FAIL"] += 1
                print("FAIL  %s: not JSON: %s" % (fn, str(e).strip()[:200]))
                continue
            for g, required in both(gen):
                def check(g=g, path=path, fn=fn):
                    from_json[g](path)
                    return True, "%s (%s): model_from_json" % (fn, who[g])
                run("%s (%s)" % (fn, who[g]), check, required)
    total = sum(counts.values())
    if not total:
        print("nothing to verify in %s" % d)
        return 2
    print("%d checks: %d ok, %d failed, %d warnings (other generation cannot load)"
          % (total, counts["ok"], counts["FAIL"], counts["warn"]))
    return 1 if counts["FAIL"] else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write the fixtures with real Keras")
    g.add_argument("outdir", nargs="?", default=os.path.dirname(os.path.abspath(__file__)))
    v = sub.add_parser("verify", help="load files written by keras-cpp into Keras and compare")
    v.add_argument("dir")
    v.add_argument("--strict", action="store_true",
                   help="the other Keras generation must load every .h5/.json too")
    a = ap.parse_args()
    return generate(a.outdir) if a.cmd == "generate" else verify(a.dir, a.strict)


if __name__ == "__main__":
    sys.exit(main())
