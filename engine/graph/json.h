// Symbols as JSON, in MXNet's layout (`sym.tojson()`, `sym.save(f)`,
// `mx.sym.load(f)`, `mx.sym.fromjson(s)`).
//
// Written: the layout MXNet 1.x writes (nnvm's graph JSON), with the exact
// whitespace of dmlc's JSONWriter, so a file saved by MXNet 1.x loads and
// saves again byte for byte, and Save(Load(Save(s))) == Save(s):
//
//   {"nodes": [{"op": "null" | <op>, "name", "attrs" (when any), "inputs":
//   [[node, index, version], ...], "control_deps" (when any)}, ...],
//   "arg_nodes", "node_row_ptr", "heads", "attrs": {"mxnet_version": ["int", N]}}
//
// Read: that layout and every older one MXNet wrote (0.8-0.12): "attr" or
// "param" instead of "attrs", two-element inputs and heads, no node_row_ptr,
// plain hidden keys ("lr_mult", "weight_lr_mult" on the op) and, before
// 0.9, no auxiliary-state variables: they are added on load as
// "<node>_<input>" (batchnorm0_moving_mean), as MXNet's upgrade pass does.
// Ops missing from this build are reported together, by name.
#pragma once

#include <string>
#include <string_view>

#include "engine/graph/symbol.h"

namespace tessera::graph {

// The "mxnet_version" SaveJSON writes by default: MXNet 1.9.1, the last 1.x
// release, whose layout and operator names this project follows. MXNet
// loads a file from a version newer than itself with only a warning.
inline constexpr int kMXNetVersion = 10901;
// The version a file without "mxnet_version" is taken as (MXNet's rule).
inline constexpr int kMXNetLegacyVersion = 800;

// The JSON text of `symbol`: nodes in topological order (DFSVisit), no
// trailing newline (as MXNet writes it). `mxnet_version` is what the file
// says it is; LoadJSON reports a file's own, so a re-save can keep it.
std::string SaveJSON(const Symbol& symbol, int mxnet_version = kMXNetVersion);

// The symbol described by `text`. `source` names the text in errors (a file
// name). Every op the text uses must be registered; the ones that are not
// are listed in one error: "<source>: this build has no operator(s)
// Convolution, Pooling (used by nodes conv1, pool1)". Malformed JSON, bad
// node references, input counts that do not match the op, and parameters the
// op rejects are errors naming the node. `mxnet_version`, when given,
// receives the file's "mxnet_version" (kMXNetLegacyVersion when absent).
Symbol LoadJSON(std::string_view text, std::string_view source = "json",
                int* mxnet_version = nullptr);

// SaveJSON to `path`, atomically: a temporary file beside it, fsync, rename.
void SaveSymbolFile(const Symbol& symbol, const std::string& path,
                    int mxnet_version = kMXNetVersion);
// LoadJSON of the file at `path` (errors name the path).
Symbol LoadSymbolFile(const std::string& path, int* mxnet_version = nullptr);

}  // namespace tessera::graph
