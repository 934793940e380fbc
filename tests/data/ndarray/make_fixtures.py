#!/usr/bin/env python3
"""Writes the NDArray file fixtures of tests/cpp/serialize_test.cc.

An independent writer (Python's struct and zlib, nothing from the C++ code),
so the tests check the C++ reader against the layouts documented in
docs/formats.md. Run it from anywhere; it writes next to itself.
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

FLOAT32, FLOAT16, INT64, BOOL = 0, 2, 6, 7
CPU = 1


def tessera_file(arrays, names):
    """arrays: list of (dtype flag, shape, payload bytes)."""
    header = b"\x89TSND\r\n\x1a" + struct.pack("<IIQ", 1, 1 if names else 0, len(arrays))
    out = header + struct.pack("<I", zlib.crc32(header))
    for i, (flag, shape, payload) in enumerate(arrays):
        rec = b""
        if names:
            rec += struct.pack("<Q", len(names[i])) + names[i].encode()
        rec += struct.pack("<ii", flag, len(shape)) + struct.pack("<%dq" % len(shape), *shape)
        rec += struct.pack("<iiQ", CPU, 0, len(payload)) + payload
        out += rec + struct.pack("<I", zlib.crc32(rec))
    return out


def mxnet_v2_file(arrays, names):
    out = struct.pack("<QQQ", 0x112, 0, len(arrays))
    for flag, shape, payload in arrays:
        out += struct.pack("<Iii", 0xF993FAC9, 0, len(shape))
        out += struct.pack("<%dq" % len(shape), *shape)
        out += struct.pack("<iii", CPU, 0, flag) + payload
    out += struct.pack("<Q", len(names))
    for n in names:
        out += struct.pack("<Q", len(n)) + n.encode()
    return out


def mxnet_legacy_file(arrays):
    out = struct.pack("<QQQ", 0x112, 0, len(arrays))
    for flag, shape, payload in arrays:
        out += struct.pack("<I", len(shape)) + struct.pack("<%dI" % len(shape), *shape)
        out += struct.pack("<iii", CPU, 0, flag) + payload
    return out + struct.pack("<Q", 0)


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


write("tessera_v1.nd", tessera_file(
    [(FLOAT32, (2, 3), f32([0, 0.5, 1, 1.5, 2, 2.5])),
     (FLOAT16, (2,), struct.pack("<2e", -1.0, 0.25)),
     (INT64, (3,), struct.pack("<3q", 1, 2, 3)),
     (BOOL, (4,), bytes([1, 0, 1, 1]))],
    ["weight", "bias", "steps", "mask"]))
write("mxnet_v2.params", mxnet_v2_file(
    [(FLOAT32, (3, 2), f32([1, 2, 3, 4, 5, 6])), (FLOAT32, (3,), f32([0.5, -0.5, 0]))],
    ["arg:fc1_weight", "arg:fc1_bias"]))
write("mxnet_legacy.params", mxnet_legacy_file(
    [(FLOAT32, (8,), f32(range(8))), (FLOAT32, (2, 2), f32([1, 2, 3, 4]))]))
