#!/usr/bin/env python3
# Makes the files of test_keras2_weights.cpp (not committed: 9-95 MB each):
#   /work/keras-ref/bin/python tests/keras/applications/make_keras2_weights.py DIR
#   KERAS_APPLICATIONS_KERAS2_DIR=DIR build/tests/test_keras_applications_test_keras2_weights
# Legacy weights-only HDF5 files written by tf_keras (Keras 2, as Keras's published weights
# files are), include_top=False at the smallest input, every weight (BN statistics included)
# seeded random, with an input batch and tf_keras's output.
import os, sys
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
import numpy as np, tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(1)
import tf_keras as K
out = sys.argv[1]
models = {"VGG16": 32, "ResNet50": 32, "ResNet50V2": 32, "DenseNet121": 32, "MobileNetV2": 32, "InceptionV3": 75, "Xception": 71,
          "NASNetMobile": 32, "InceptionResNetV2": 75, "NASNetLarge": 32}
rng = np.random.default_rng(0)
for name, s in models.items():
    K.backend.clear_session()
    m = getattr(K.applications, name)(weights=None, include_top=False, input_shape=(s, s, 3))
    ws = []
    for w in m.get_weights():
        if w.ndim == 1:
            ws.append(rng.uniform(0.5, 1.5, w.shape).astype("float32"))
        else:
            ws.append(w)
    m.set_weights(ws)
    m.save_weights(os.path.join(out, name + ".k2.notop.h5"))
    x = rng.uniform(0, 1, (2, s, s, 3)).astype("float32")
    np.save(os.path.join(out, name + ".input.npy"), x)
    np.save(os.path.join(out, name + ".output.npy"), m.predict(x, verbose=0))
    print(name, m.count_params(), flush=True)
