"""Writes the small HDF5 reference files the hdf5 wrapper tests read (h5py's own encodings).

Run from this directory: python3 make_reference.py  (needs h5py, numpy, ml_dtypes).
"""
import h5py
import ml_dtypes
import numpy as np

with h5py.File("reference.h5", "w") as f:
    # Strings in every form h5py and Keras produce.
    f.attrs["vlen_str"] = "héllo"                                    # vlen UTF-8 scalar
    f.attrs["vlen_bytes"] = b"ascii"                                 # vlen ASCII scalar
    f.attrs.create("fixed_str", np.bytes_(b"fixed"))                 # fixed-length scalar (h5py 2 form)
    f.attrs["list_fixed"] = np.array([b"dense", b"batch_normalization"])  # numpy 'S' array
    f.attrs["list_vlen"] = ["input_1", "inner", "head"]              # vlen array (tf_keras 2.21)
    f.attrs["empty_list"] = np.array([])                             # Keras's empty weight_names
    f.attrs["names0"] = np.array([b"a", b"b"])                       # a split attribute
    f.attrs["names1"] = np.array([b"c"])
    f.attrs["int_attr"] = np.int64(42)
    f.attrs["float_attr"] = 2.5
    # Datasets of every numeric type a weights file may hold.
    g = f.create_group("data")
    g["f32"] = np.arange(6, dtype="<f4").reshape(2, 3)
    g["f64"] = np.array([0.5, -1.25], dtype="<f8")
    g["i32"] = np.array([[1, -2]], dtype="<i4")
    g["i64"] = np.int64(-7)                                          # 0-d, like Keras's iteration
    g["f16"] = np.array([1.5, -2.0], dtype="<f2")
    g["u8"] = np.array([200, 1], dtype="u1")
    g["empty"] = np.zeros((0, 3), dtype="<f4")
    bf = g.create_dataset("bf16", data=np.array([1.5, -2.0, 3.0], dtype=ml_dtypes.bfloat16))
    bf.attrs["dtype"] = "bfloat16"                                   # Keras 3's tag
    g["text"] = np.array([b"x"])                                     # not numeric

with h5py.File("overflow.h5", "w") as f:
    # Shapes whose element count overflows int64, and a huge contiguous dataset with no data.
    f.create_dataset("cube", shape=(2**31, 2**31, 2**31), dtype="<f4", chunks=(1, 1, 1))
    f.create_dataset("wide", shape=(2**62, 4), dtype="<f4", chunks=(1, 1))
    f.create_dataset("unstored", shape=(2**40,), dtype="<f4")
