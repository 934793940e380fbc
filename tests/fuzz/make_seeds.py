#!/usr/bin/env python3
"""Writes the small seed inputs of the fuzz harnesses under seeds/, and the
dictionary of symbol-JSON tokens (symbol_json.dict).

The NDArray-file harness is seeded with tests/data/ndarray directly. Run
this from anywhere after changing it; it writes next to itself, and its
output is committed so that builds need no Python.
"""
import gzip
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(kind, name, data):
    folder = os.path.join(HERE, "seeds", kind)
    os.makedirs(folder, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(folder, name), mode) as f:
        f.write(data)


# ---- symbol JSON: MXNet 1.x layout (nodes, arg_nodes, node_row_ptr, heads).

def graph(nodes, heads, version=10901, legacy=False):
    """nodes: (op, name, attrs, inputs); inputs are (node, index) pairs."""
    out = []
    for op, name, attrs, inputs in nodes:
        n = {"op": op, "name": name}
        if attrs:
            n["param" if legacy else "attrs"] = attrs
        n["inputs"] = [[i, k] if legacy else [i, k, 0] for i, k in inputs]
        out.append(n)
    doc = {"nodes": out,
           "arg_nodes": [i for i, n in enumerate(nodes) if n[0] == "null"],
           "heads": [[i, k] if legacy else [i, k, 0] for i, k in heads]}
    if not legacy:
        row = [0]
        for _ in nodes:
            row.append(row[-1] + 1)
        doc["node_row_ptr"] = row
        doc["attrs"] = {"mxnet_version": ["int", version]}
    return json.dumps(doc, indent=2)


def mlp():
    return graph([
        ("null", "data", {"__shape__": "(32,784)"}, []),
        ("null", "fc1_weight", None, []),
        ("null", "fc1_bias", None, []),
        ("FullyConnected", "fc1", {"num_hidden": "128"}, [(0, 0), (1, 0), (2, 0)]),
        ("Activation", "relu1", {"act_type": "relu"}, [(3, 0)]),
        ("null", "fc2_weight", None, []),
        ("null", "fc2_bias", None, []),
        ("FullyConnected", "fc2", {"num_hidden": "10"}, [(4, 0), (5, 0), (6, 0)]),
        ("null", "softmax_label", None, []),
        ("SoftmaxOutput", "softmax", None, [(7, 0), (8, 0)]),
    ], [(9, 0)])


def lenet():
    return graph([
        ("null", "data", {"__shape__": "(8,1,28,28)"}, []),
        ("null", "conv1_weight", {"__lr_mult__": "2"}, []),
        ("null", "conv1_bias", None, []),
        ("Convolution", "conv1", {"kernel": "(5, 5)", "num_filter": "20", "pad": "(0, 0)",
                                  "stride": "(1, 1)"}, [(0, 0), (1, 0), (2, 0)]),
        ("Activation", "tanh1", {"act_type": "tanh"}, [(3, 0)]),
        ("Pooling", "pool1", {"kernel": "(2, 2)", "pool_type": "max", "stride": "(2, 2)"},
         [(4, 0)]),
        ("null", "bn_gamma", None, []),
        ("null", "bn_beta", None, []),
        ("null", "bn_moving_mean", None, []),
        ("null", "bn_moving_var", None, []),
        ("BatchNorm", "bn", {"eps": "0.001", "fix_gamma": "False"},
         [(5, 0), (6, 0), (7, 0), (8, 0), (9, 0)]),
        ("Flatten", "flatten", None, [(10, 0)]),
        ("null", "fc_weight", None, []),
        ("FullyConnected", "fc", {"num_hidden": "10", "no_bias": "True"}, [(11, 0), (12, 0)]),
        ("null", "label", None, []),
        ("SoftmaxOutput", "softmax", {"grad_scale": "1"}, [(13, 0), (14, 0)]),
    ], [(15, 0)])


def shapes():
    """Ops whose shape functions multiply and add sizes."""
    return graph([
        ("null", "a", {"__shape__": "(2,3)", "__dtype__": "0"}, []),
        ("null", "b", {"__shape__": "(2,3)"}, []),
        ("tile", "t", {"reps": "(2, 2)"}, [(0, 0)]),
        ("repeat", "r", {"repeats": "3", "axis": "1"}, [(1, 0)]),
        ("Reshape", "rs", {"shape": "(-1, 0)"}, [(2, 0)]),
        ("Reshape", "rs4", {"shape": "(-4, 2, -1, -2)"}, [(3, 0)]),
        ("Concat", "cat", {"num_args": "2", "dim": "1"}, [(4, 0), (4, 0)]),
        ("broadcast_to", "bt", {"shape": "(2, 4, 6)"}, [(5, 0)]),
        ("one_hot", "oh", {"depth": "5"}, [(0, 0)]),
        ("SliceChannel", "split", {"num_outputs": "2", "axis": "1"}, [(6, 0)]),
        ("elemwise_add", "add", None, [(9, 0), (9, 1)]),
    ], [(7, 0), (8, 0), (10, 0)])


def legacy():
    """MXNet 0.8: "param", two-element entries, plain hidden keys, no aux states."""
    return graph([
        ("null", "data", None, []),
        ("null", "w", {"lr_mult": "0.5"}, []),
        ("FullyConnected", "fc", {"num_hidden": "4", "no_bias": "true", "weight_lr_mult": "2"},
         [(0, 0), (1, 0)]),
        ("null", "gamma", None, []),
        ("null", "beta", None, []),
        ("BatchNorm", "bn", {"eps": "1e-5"}, [(2, 0), (3, 0), (4, 0)]),
        ("argmax", "am", {"axis": "-1"}, [(5, 0)]),
    ], [(5, 0), (6, 0)], legacy=True)


# ---- IDX: MNIST's header (0, 0, type 8, ndim) and big-endian sizes.

def idx(dims, payload):
    return struct.pack(">BBBB", 0, 0, 8, len(dims)) + struct.pack(">%dI" % len(dims), *dims) + payload


# ---- the symbol-JSON dictionary: keys, operator names, telling values.

DICT_OPS = """abs Activation add_n arange argmax BatchNorm BlockGrad broadcast_add broadcast_to
Cast clip concat Concat Convolution Custom Deconvolution dot Dropout elemwise_add Embedding
expand_dims eye flatten Flatten flip full FullyConnected InstanceNorm LayerNorm LeakyReLU
LinearRegressionOutput LRN MakeLoss max mean norm one_hot Pad pick Pooling quadratic repeat
reshape Reshape SliceChannel slice slice_axis softmax SoftmaxActivation SoftmaxOutput split
squeeze stack sum SwapAxis take tile topk transpose UpSampling where zeros_like""".split()
DICT_KEYS = """nodes heads arg_nodes node_row_ptr attrs attr param op name inputs control_deps
subgraphs mxnet_version int null __shape__ __dtype__ __lr_mult__ lr_mult wd_mult ctx_group
num_hidden num_filter num_group kernel stride pad dilate adj target_shape num_args dim axis
axes shape reps repeats depth num_outputs squeeze_axis act_type pool_type global_pool no_bias
fix_gamma eps momentum dtype scale sample_type begin end k p mode keepdims output_size
input_dim op_type""".split()
DICT_VALUES = ["(2,3)", "(0,)", "(-1,)", "(-4, 2, -1)", "(-3,)", "(-2,)",
               "(9223372036854775807,)", "(4294967296, 4294967296)", "2147483648", "-1", "0",
               "True", "False", "None", "nan", "inf", "1e308", "float16", "int64", "relu",
               "max", "avg", "full", "valid"]


def write_dict():
    def quoted(s):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    lines = ["# Tokens of MXNet symbol JSON for fuzz_symbol_json (written by make_seeds.py)."]
    lines += [quoted('"%s"' % t) for t in DICT_KEYS + DICT_OPS + DICT_VALUES]
    lines += [quoted(t) for t in ["[[", "]]", "[0, 0, 0]", "{}", "[]", ": ", ", "]]
    with open(os.path.join(HERE, "symbol_json.dict"), "w") as f:
        f.write("\n".join(lines) + "\n")


# ---- RecordIO: MXNet's framing (magic, cflag << 29 | length, data, padding).

MAGIC = 0xced7230a


def record(data):
    """A record as dmlc writes it: cut where the data holds the magic at an
    aligned offset (the magic dropped; cflag 1 first, 2 middle, 3 last)."""
    out, done = b"", 0
    cuts = [i for i in range(0, len(data) - 3, 4)
            if struct.unpack_from("<I", data, i)[0] == MAGIC]
    for i in cuts:
        out += struct.pack("<II", MAGIC, (1 if done == 0 else 2) << 29 | (i - done))
        out += data[done:i]
        done = i + 4
    out += struct.pack("<II", MAGIC, (3 if cuts else 0) << 29 | (len(data) - done))
    out += data[done:] + bytes(-len(data) % 4)
    return out


def main():
    write("symbol_json", "mlp.json", mlp())
    write("symbol_json", "lenet.json", lenet())
    write("symbol_json", "shapes.json", shapes())
    write("symbol_json", "legacy.json", legacy())

    images = idx([3, 4, 4], bytes((i * 37) % 256 for i in range(48)))
    labels = idx([3], bytes([7, 0, 9]))
    write("idx", "images.idx", images)
    write("idx", "labels.idx", labels)
    write("idx", "labels.idx.gz", gzip.compress(labels, mtime=0))
    write("idx", "truncated.idx", idx([2000, 1000, 1000], bytes(16)))

    magic = struct.pack("<I", MAGIC)
    header = struct.pack("<IfQQ", 0, 3.0, 7, 0)
    write("recordio", "plain.rec", record(b"abc") + record(b"") + record(header + b"payload"))
    write("recordio", "parts.rec", record(magic + b"abcd" + magic + b"e" + magic + b"fg"))
    write("recordio", "cut.rec", record(b"hello world")[:13])

    write("csv", "plain.csv", "1,2,3\n4,5,6\n")
    write("csv", "mixed.csv", " 1.5e3, -2 ,+3\r\n\n0x1,,nan\ninf,-inf,1e999\n")
    write("csv", "labels.csv", "0\n1\n2\n")
    write_dict()


if __name__ == "__main__":
    main()
