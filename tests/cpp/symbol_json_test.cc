// Symbol JSON (engine/graph/json.h): byte-identical round trips of built
// symbols; hand-written fixtures in MXNet's current layout (exactly as dmlc's
// writer formats it) and in the pre-0.9 layout (param/attr, two-element
// entries, no node_row_ptr, plain hidden keys, missing auxiliary states);
// missing ops reported by name; clear errors for malformed files; atomic
// symbol files; a fuzz pass over damaged text.
//
// TESSERA_MXNET_MODELS=<folder of real MXNet checkpoints> adds a check that
// every *.json symbol file there loads (and, in the current layout, saves
// again byte for byte) or fails only for operators this build lacks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "engine/graph/control_flow.h"
#include "engine/graph/infer.h"
#include "engine/graph/json.h"
#include "engine/op/op_attr_types.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::graph;
namespace fs = std::filesystem;
using test::Contains;
using test::ErrorOf;

namespace {

// A BatchNorm-shaped op for the tests (the real one may not exist yet): five
// inputs, the last two auxiliary states it writes, three outputs.
struct TestNormParam : op::Params<TestNormParam> {
  float eps = 1e-3f;
  static void Declare(op::ParamDecl<TestNormParam>& d) {
    d.field("eps", &TestNormParam::eps).set_default(1e-3f).describe("Epsilon.");
  }
};

}  // namespace

TS_REGISTER_OP(_TestNorm)
    .describe("Test only: BatchNorm's inputs and outputs, no compute.")
    .set_num_inputs(5)
    .set_num_outputs(3)
    .set_attr_parser(tessera::op::ParamParser<TestNormParam>)
    .set_attr<tessera::op::FListInputNames>(
        "FListInputNames",
        [](const tessera::op::NodeAttrs&) {
          return std::vector<std::string>{"data", "gamma", "beta", "moving_mean", "moving_var"};
        })
    .set_attr<tessera::op::FMutateInputs>("FMutateInputs", [](const tessera::op::NodeAttrs&) {
      return std::vector<uint32_t>{3, 4};
    });

namespace {

Symbol Make(const char* op, ParamDict params, std::vector<Symbol> args, std::string name = "") {
  return Symbol::Create(op::Op::Get(op), std::move(params), args, {}, std::move(name));
}

// Loads `text`, saves it again with the file's own version, and requires the
// same bytes.
Symbol CheckResaves(const std::string& text, const std::string& source = "fixture") {
  int version = 0;
  Symbol s = LoadJSON(text, source, &version);
  const std::string again = SaveJSON(s, version);
  CHECK(again == text);
  if (again != text) std::cout << "re-saved as:\n" << again << "\n";
  return s;
}

// `text` with its "node_row_ptr" array cut out.
std::string WithoutRowPtr(const std::string& text) {
  const size_t begin = text.find("\"node_row_ptr\": [");
  if (begin == std::string::npos) return text;
  return text.substr(0, begin) + text.substr(text.find(']', begin) + 1);
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Written by hand in MXNet 1.x's layout and whitespace: one-key maps on one
// line, longer maps one key per line, node_row_ptr (13 items) one per line,
// the auxiliary-state inputs with version 1, "Flatten" under MXNet's name,
// a multi-output split and a three-output norm shifting node_row_ptr.
const char* kCurrentLayout = R"json({
  "nodes": [
    {
      "op": "null", 
      "name": "data", 
      "attrs": {"__shape__": "(0, 4)"}, 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "fc_weight", 
      "attrs": {
        "__dtype__": "0", 
        "__lr_mult__": "2.0"
      }, 
      "inputs": []
    }, 
    {
      "op": "dot", 
      "name": "fc", 
      "attrs": {"transpose_b": "True"}, 
      "inputs": [[0, 0, 0], [1, 0, 0]]
    }, 
    {
      "op": "null", 
      "name": "norm_gamma", 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "norm_beta", 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "norm_moving_mean", 
      "attrs": {"__init__": "[\"zero\", {}]"}, 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "norm_moving_var", 
      "inputs": []
    }, 
    {
      "op": "_TestNorm", 
      "name": "norm", 
      "attrs": {"eps": "2e-05"}, 
      "inputs": [[2, 0, 0], [3, 0, 0], [4, 0, 0], [5, 0, 1], [6, 0, 1]]
    }, 
    {
      "op": "Flatten", 
      "name": "flat", 
      "inputs": [[7, 0, 0]]
    }, 
    {
      "op": "SliceChannel", 
      "name": "halves", 
      "attrs": {
        "axis": "1", 
        "num_outputs": "2"
      }, 
      "inputs": [[8, 0, 0]]
    }, 
    {
      "op": "elemwise_add", 
      "name": "sum", 
      "inputs": [[9, 0, 0], [9, 1, 0]]
    }, 
    {
      "op": "relu", 
      "name": "act", 
      "inputs": [[10, 0, 0]]
    }
  ], 
  "arg_nodes": [0, 1, 3, 4, 5, 6], 
  "node_row_ptr": [
    0, 
    1, 
    2, 
    3, 
    4, 
    5, 
    6, 
    7, 
    10, 
    11, 
    13, 
    14, 
    15
  ], 
  "heads": [[11, 0, 0], [7, 0, 0]], 
  "attrs": {"mxnet_version": ["int", 10600]}
})json";

// MXNet 0.8's layout (as in its save_000800.json regression fixture):
// "param" for op parameters, "attr" for user attributes with plain hidden
// keys, two-element entries, no node_row_ptr and no version, and the norm's
// auxiliary states absent. argmax's axis=-1 meant "no axis" then.
const char* kLegacyLayout = R"json({
  "nodes": [
    {
      "op": "null", 
      "param": {}, 
      "name": "data", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage1", 
        "lr_mult": "0.2"
      }
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "fc1_weight", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {"wd_mult": "0.3"}
    }, 
    {
      "op": "dot", 
      "param": {"transpose_b": "True"}, 
      "name": "fc1", 
      "inputs": [[0, 0], [1, 0]], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage1", 
        "rhs_lr_mult": "1.2"
      }
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "norm_gamma", 
      "inputs": [], 
      "backward_source_id": -1
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "norm_beta", 
      "inputs": [], 
      "backward_source_id": -1
    }, 
    {
      "op": "_TestNorm", 
      "param": {"eps": "0.001"}, 
      "name": "norm", 
      "inputs": [[2, 0], [3, 0], [4, 0]], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage2"}
    }, 
    {
      "op": "argmax", 
      "param": {"axis": "-1"}, 
      "name": "am", 
      "inputs": [[5, 0]], 
      "backward_source_id": -1
    }
  ], 
  "arg_nodes": [0, 1, 3, 4], 
  "heads": [[6, 0]]
})json";

}  // namespace

TEST_CASE("SaveJSON writes dmlc's layout exactly") {
  ResetNames();
  Symbol x = Symbol::Variable("x", {{"__shape__", "(2, 3)"}});
  Symbol r = Make("relu", {}, {x});
  CHECK(SaveJSON(r) == R"json({
  "nodes": [
    {
      "op": "null", 
      "name": "x", 
      "attrs": {"__shape__": "(2, 3)"}, 
      "inputs": []
    }, 
    {
      "op": "relu", 
      "name": "relu0", 
      "inputs": [[0, 0, 0]]
    }
  ], 
  "arg_nodes": [0], 
  "node_row_ptr": [0, 1, 2], 
  "heads": [[1, 0, 0]], 
  "attrs": {"mxnet_version": ["int", 10901]}
})json");
  // A lone variable; strings escaped as dmlc does, control characters as \u.
  Symbol v = Symbol::Variable("a\"b\\c\nd\te\x01");
  CHECK(SaveJSON(v, 10401) == R"json({
  "nodes": [
    {
      "op": "null", 
      "name": "a\"b\\c\nd\te\u0001", 
      "inputs": []
    }
  ], 
  "arg_nodes": [0], 
  "node_row_ptr": [0, 1], 
  "heads": [[0, 0, 0]], 
  "attrs": {"mxnet_version": ["int", 10401]}
})json");
  CHECK(LoadJSON(SaveJSON(v)).ListArguments() == std::vector<std::string>{"a\"b\\c\nd\te\x01"});
}

TEST_CASE("built symbols round trip byte for byte") {
  ResetNames();
  Symbol x = Symbol::Variable("x", {{"__shape__", "(4, 6)"}, {"__dtype__", "0"}});
  Symbol w = Symbol::Variable("w", {{"__shape__", "(6, 6)"}, {"lr_mult", "0.5"}});
  Symbol fc = Make("dot", {}, {x, w}, "fc");
  Symbol biased = Make("broadcast_add", {}, {fc, Symbol::Variable("bias")});
  Symbol act = Make("relu", {}, {biased});
  Symbol q = Make("quadratic", {{"a", "1"}, {"b", "-2"}, {"c", "0.5"}}, {act});
  Symbol prob = Make("log_softmax", {{"axis", "-1"}}, {q}, "prob");
  Symbol halves = Make("split", {{"num_outputs", "2"}, {"axis", "1"}}, {x});
  Symbol sum = Make("elemwise_add", {}, {halves[0], halves[1]});
  Symbol flat = Make("Flatten", {}, {sum});
  Symbol all = Group({prob, flat, halves});

  const std::string text = SaveJSON(all);
  Symbol back = LoadJSON(text);
  CHECK(SaveJSON(back) == text);
  CHECK(SaveJSON(LoadJSON(SaveJSON(back))) == text);
  CHECK(back.ListArguments() == all.ListArguments());
  CHECK(back.ListArguments() == std::vector<std::string>{"x", "w", "bias"});
  CHECK(back.ListOutputs() == all.ListOutputs());
  CHECK(back.NumOutputs() == 4);
  CHECK(back.AttrDict() == all.AttrDict());
  // MXNet's name for the op, which MXNet reads back (flatten is its alias).
  CHECK(Contains(text, "\"op\": \"Flatten\""));
  CHECK(Contains(text, "\"heads\": [[7, 0, 0], [10, 0, 0], [8, 0, 0], [8, 1, 0]]"));
  // A symbol with no op node, and a head that is an input of another head.
  Symbol two = Group({x, fc});
  CHECK(SaveJSON(LoadJSON(SaveJSON(two))) == SaveJSON(two));
  CHECK(LoadJSON(SaveJSON(two)).ListOutputs() == two.ListOutputs());
}

TEST_CASE("more than ten inputs or heads go one per line") {
  ResetNames();
  std::vector<Symbol> vars;
  for (int i = 0; i < 11; ++i) vars.push_back(Symbol::Variable("v" + std::to_string(i)));
  Symbol cat = Make("concat", {{"dim", "0"}}, vars);
  const std::string text = SaveJSON(cat);
  CHECK(Contains(text, "\"inputs\": [\n        [0, 0, 0], \n        [1, 0, 0], \n"));
  CHECK(Contains(text, "[10, 0, 0]\n      ]\n"));
  CHECK(Contains(text, "\"arg_nodes\": [\n    0, \n"));
  Symbol heads = Group(vars);
  const std::string htext = SaveJSON(heads);
  CHECK(Contains(htext, "\"heads\": [\n    [0, 0, 0], \n"));
  CHECK(SaveJSON(LoadJSON(text)) == text);
  CHECK(SaveJSON(LoadJSON(htext)) == htext);
}

TEST_CASE("the current layout loads and re-saves identically") {
  Symbol s = CheckResaves(kCurrentLayout);
  CHECK(s.ListArguments() ==
        std::vector<std::string>{"data", "fc_weight", "norm_gamma", "norm_beta"});
  CHECK(s.ListAuxiliaryStates() == std::vector<std::string>{"norm_moving_mean", "norm_moving_var"});
  CHECK(s.NumOutputs() == 2);
  CHECK(s[0].GetAttr("__lr_mult__") == std::nullopt);
  CHECK(s.AttrDict().at("fc_weight").at("__lr_mult__") == "2.0");
  // The version it said, and the default one when saved plainly.
  int version = 0;
  LoadJSON(kCurrentLayout, "fixture", &version);
  CHECK(version == 10600);
  CHECK(Contains(SaveJSON(s), "\"mxnet_version\": [\"int\", 10901]"));
  // Early nnvm files wrote "attr"; three-element entries, node_row_ptr present.
  std::string attr_spelling = kCurrentLayout;
  for (size_t p; (p = attr_spelling.find("\"attrs\": {\"eps\"")) != std::string::npos;)
    attr_spelling.replace(p, 8, "\"attr\": ");
  CHECK(SaveJSON(LoadJSON(attr_spelling, "fixture", &version), version) ==
        std::string(kCurrentLayout));
}

TEST_CASE("control dependencies are read and written") {
  const std::string text = R"json({
  "nodes": [
    {
      "op": "null", 
      "name": "x", 
      "inputs": []
    }, 
    {
      "op": "relu", 
      "name": "a", 
      "inputs": [[0, 0, 0]]
    }, 
    {
      "op": "relu", 
      "name": "b", 
      "inputs": [[0, 0, 0]], 
      "control_deps": [1]
    }
  ], 
  "arg_nodes": [0], 
  "node_row_ptr": [0, 1, 2, 3], 
  "heads": [[2, 0, 0]], 
  "attrs": {"mxnet_version": ["int", 10901]}
})json";
  Symbol s = CheckResaves(text);
  REQUIRE(s.outputs[0].node->control_deps.size() == 1);
  CHECK(s.outputs[0].node->control_deps[0]->attrs.name == "a");
  std::string later = text;
  later.replace(later.find("\"control_deps\": [1]"), 20, "\"control_deps\": [2]");
  CHECK(ErrorOf([&] { LoadJSON(later, "f.json"); }) ==
        "f.json: node 2 'b' (relu): control dependency 2 does not come before it");
}

TEST_CASE("the pre-0.9 layout loads, upgraded as MXNet upgrades it") {
  int version = 0;
  Symbol s = LoadJSON(kLegacyLayout, "save_000800.json", &version);
  CHECK(version == kMXNetLegacyVersion);
  CHECK(s.ListArguments() ==
        std::vector<std::string>{"data", "fc1_weight", "norm_gamma", "norm_beta"});
  // The auxiliary states the file left out, named after the node.
  CHECK(s.ListAuxiliaryStates() == std::vector<std::string>{"norm_moving_mean", "norm_moving_var"});
  const auto attrs = s.AttrDict();
  CHECK(attrs.at("data") == ParamDict{{"__ctx_group__", "stage1"}, {"__lr_mult__", "0.2"}});
  // "rhs_lr_mult" on the dot moved to its rhs variable.
  CHECK(attrs.at("fc1_weight") == ParamDict{{"__lr_mult__", "1.2"}, {"__wd_mult__", "0.3"}});
  CHECK(attrs.at("fc1") == ParamDict{{"__ctx_group__", "stage1"}, {"transpose_b", "True"}});
  CHECK(attrs.at("norm_moving_mean") == ParamDict{{"__ctx_group__", "stage2"}});
  // argmax's old axis=-1 (no axis) became the default.
  CHECK(attrs.count("am") == 0);

  // Saved in the current layout; that text round trips.
  const std::string text = SaveJSON(s);
  CHECK(Contains(text, "\"inputs\": [[2, 0, 0], [3, 0, 0], [4, 0, 0], [5, 0, 1], [6, 0, 1]]"));
  CHECK(Contains(text, "\"name\": \"norm_moving_var\""));
  CHECK(SaveJSON(LoadJSON(text)) == text);
  CHECK(LoadJSON(text).ListAuxiliaryStates() == s.ListAuxiliaryStates());
}

TEST_CASE("a legacy file keeps its upgrade when saved with its own version") {
  // "rhs_lr_mult" names an input the file left out: the upgrade adds the
  // variable, and the key lands on it at once (found by fuzz_symbol_json:
  // it stayed on the node, and the re-saved file moved it on the next load).
  const std::string text = R"({"nodes": [
    {"op": "null", "name": "x", "inputs": []},
    {"op": "dot", "name": "d", "param": {"rhs_lr_mult": "2"}, "inputs": [[0, 0]]}],
    "arg_nodes": [0], "heads": [[1, 0]]})";
  int version = 0;
  const Symbol s = LoadJSON(text, "f.json", &version);
  CHECK(s.AttrDict().at("d_rhs") == ParamDict{{"__lr_mult__", "2"}});
  const std::string once = SaveJSON(s, version);
  CHECK(SaveJSON(LoadJSON(once), version) == once);
}

TEST_CASE("missing operators are reported together, by name") {
  const std::string text = R"({"nodes": [
    {"op": "null", "name": "data", "inputs": []},
    {"op": "MadeUpConv", "name": "conv1", "inputs": [[0, 0, 0]]},
    {"op": "MadeUpPool", "name": "pool1", "inputs": [[1, 0, 0]]},
    {"op": "MadeUpConv", "name": "conv2", "inputs": [[2, 0, 0]]},
    {"op": "relu", "name": "act", "inputs": [[3, 0, 0], [9, 9, 9]]}],
    "arg_nodes": [0], "heads": [[4, 0, 0]]})";
  // Reported before the bad input of "act": the op list is what matters.
  CHECK(ErrorOf([&] { LoadJSON(text, "net-symbol.json"); }) ==
        "net-symbol.json: this build has no operator(s) MadeUpConv, MadeUpPool (used by nodes "
        "conv1, pool1)");
  // An alias resolves like the name ("Reshape", "Flatten", "_Plus").
  const std::string aliased = R"json({"nodes": [
    {"op": "null", "name": "a", "inputs": []},
    {"op": "_Plus", "name": "p", "inputs": [[0, 0], [0, 0]]},
    {"op": "Reshape", "name": "r", "param": {"shape": "(-1,)"}, "inputs": [[1, 0]]}],
    "arg_nodes": [0], "heads": [[2, 0]]})json";
  Symbol s = LoadJSON(aliased);
  CHECK(Contains(SaveJSON(s), "\"op\": \"elemwise_add\""));
  CHECK(Contains(SaveJSON(s), "\"op\": \"Reshape\""));
}

TEST_CASE("malformed symbol files are clear errors") {
  auto error = [](const std::string& text) { return ErrorOf([&] { LoadJSON(text, "f.json"); }); };
  auto graph = [](const std::string& nodes, const std::string& heads = "[[0, 0, 0]]") {
    // A current-layout file: older ones get missing inputs added (legacy upgrade).
    return R"({"nodes": [)" + nodes + R"(], "arg_nodes": [], "heads": )" + heads +
           R"(, "attrs": {"mxnet_version": ["int", 10600]}})";
  };
  const std::string var = R"({"op": "null", "name": "x", "inputs": []})";

  CHECK(Contains(error(""), "f.json: not valid JSON: parse error"));
  CHECK(Contains(error("{\"nodes\": [}"), "f.json: not valid JSON"));
  CHECK(error("[1, 2]") == "f.json: not a symbol file: the top level is not an object");
  CHECK(error(R"({"heads": []})") == "f.json: the file has no \"nodes\"");
  CHECK(error(R"({"nodes": [], "heads": {}})") == "f.json: \"heads\" is not an array");
  CHECK(error(graph("", "[]")) == "f.json: \"heads\" is empty: the symbol has no outputs");
  CHECK(error(graph("3")) == "f.json: node 0 is not an object");
  CHECK(error(graph(R"({"op": "null", "inputs": []})")) == "f.json: node 0 has no \"name\"");
  CHECK(error(graph(R"({"op": 5, "name": "x", "inputs": []})")) ==
        "f.json: node 0 'x': \"op\" is not a string");
  CHECK(error(graph(R"({"op": "null", "name": "x"})")) == "f.json: node 0 'x' has no \"inputs\"");
  CHECK(error(graph(R"({"op": "null", "name": "x", "inputs": [[0, 0, 0]]})")) ==
        "f.json: node 0 'x': a variable has inputs");
  CHECK(error(graph(R"({"op": "null", "name": "x", "attrs": {"a": 1}, "inputs": []})")) ==
        "f.json: node 0 'x': attribute \"a\" is 1, not a string");
  CHECK(error(graph(var, "[[1, 0, 0]]")) ==
        "f.json: head 0 refers to node 1, but the file has 1 node(s)");
  CHECK(error(graph(var, "[[0, 1, 0]]")) ==
        "f.json: head 0 refers to output 1 of node 0 'x', which has 1");
  CHECK(error(graph(var, "[[0, -1, 0]]")) == "f.json: head 0: -1 is out of range");
  CHECK(error(graph(var, "[[0, 0.5, 0]]")) == "f.json: head 0: 0.5 is not an integer");
  CHECK(error(graph(var, "[[0]]")) ==
        "f.json: head 0: [0] is not an entry [node, index] or [node, index, version]");

  const std::string relu_self = R"({"op": "relu", "name": "r", "inputs": [[1, 0, 0]]})";
  CHECK(error(graph(var + "," + relu_self, "[[1, 0, 0]]")) ==
        "f.json: node 1 'r' (relu), input 0 refers to node 1, which does not come before it "
        "(nodes must be in topological order)");
  const std::string relu2 = R"({"op": "relu", "name": "r", "inputs": [[0, 0, 0], [0, 0, 0]]})";
  CHECK(error(graph(var + "," + relu2, "[[1, 0, 0]]")) ==
        "f.json: node 1 'r' (relu): has 2 input(s), but relu with these parameters takes 1");
  const std::string relu0 = R"({"op": "relu", "name": "r", "inputs": []})";
  CHECK(error(graph(relu0)) ==
        "f.json: node 0 'r' (relu): has 0 input(s), but relu with these parameters takes 1");
  // Parameters are parsed on load: a bad one is an error naming the node.
  const std::string bad_param =
      R"({"op": "quadratic", "name": "q", "attrs": {"a": "abc"}, "inputs": [[0, 0, 0]]})";
  std::string msg = error(graph(var + "," + bad_param, "[[1, 0, 0]]"));
  CHECK(msg.starts_with("f.json: node 1 'q' (quadratic): "));
  CHECK(Contains(msg, "abc"));
  const std::string unknown_param =
      R"({"op": "split", "name": "s", "attrs": {"num_outputs": "2", "bogus": "1"}, "inputs": [[0, 0, 0]]})";
  msg = error(graph(var + "," + unknown_param, "[[1, 0, 0]]"));
  CHECK(msg.starts_with("f.json: node 1 's' (split): "));
  CHECK(Contains(msg, "bogus"));
  const std::string with_subgraph =
      R"({"op": "relu", "name": "r", "inputs": [[0, 0, 0]], "subgraphs": [{}]})";
  CHECK(error(graph(var + "," + with_subgraph, "[[1, 0, 0]]")) ==
        "f.json: node 1 'r' (relu), subgraph 0: the subgraph has no \"nodes\"");
  const std::string relu_with_graph =
      R"({"op": "relu", "name": "r", "inputs": [[0, 0, 0]], "subgraphs": [{"nodes": [)" + var +
      R"(], "heads": [[0, 0, 0]]}]})";
  CHECK(Contains(error(graph(var + "," + relu_with_graph, "[[1, 0, 0]]")),
                 "f.json: node 1 'r' (relu): has subgraphs, which only _foreach"));
  CHECK(error(R"({"nodes": [], "heads": [], "attrs": {"mxnet_version": 10600}})") ==
        "f.json: \"mxnet_version\" is 10600, not [\"int\", <version>]");
  CHECK(Contains(error(std::string(100000, '[')), "nested deeper than 64 levels"));
}

// Feeds `use` every prefix of `good` (a cut each `step` characters), then
// `trials` copies with 1 to 3 characters replaced from `alphabet`.
template <typename Use>
void FeedDamaged(const std::string& good, size_t step, const std::string& alphabet, int trials,
                 std::mt19937& gen, const Use& use) {
  for (size_t cut = 0; cut < good.size(); cut += step) use(good.substr(0, cut));
  for (int trial = 0; trial < trials; ++trial) {
    std::string bad = good;
    const int edits = 1 + static_cast<int>(gen() % 3);
    for (int k = 0; k < edits; ++k) bad[gen() % bad.size()] = alphabet[gen() % alphabet.size()];
    use(bad);
  }
}

TEST_CASE("damaged symbol text raises tessera::Error or loads, nothing else") {
  const std::string good = kCurrentLayout;
  std::mt19937 gen(7);
  auto try_load = [](const std::string& text) {
    try {
      LoadJSON(text);
    } catch (const Error&) {
    } catch (...) {
      FAIL("damaged symbol text raised something other than tessera::Error");
    }
  };
  FeedDamaged(good, 7, "0123456789[]{},:\"-. ae", 3000, gen, try_load);
}

namespace {

// foreach over data with one state and a free variable, the body's tanh
// reading all three: the symbol the control-flow checks below start from.
Symbol ForeachSymbol() {
  const Symbol x = Symbol::Variable("x"), s = Symbol::Variable("s");
  const Symbol data = Symbol::Variable("data"), h0 = Symbol::Variable("h0"),
               w = Symbol::Variable("w");
  auto apply = [](const char* op, std::vector<Symbol> args) {
    return Symbol::Create(op::Op::Get(op), {}, args, {}, "");
  };
  const Symbol h = apply("tanh", {apply("elemwise_add", {apply("elemwise_mul", {x, w}), s})});
  return MakeForeach(Group({h, h}), 1, {x}, {s}, {data}, {h0}, "loop");
}

}  // namespace

TEST_CASE("control-flow nodes: subgraphs round trip; damaged ones are errors, never crashes") {
  const Symbol loop = ForeachSymbol();
  CHECK(loop.ListArguments() == std::vector<std::string>{"data", "h0", "w"});
  const std::string text = SaveJSON(loop);
  CHECK(Contains(text, "\"subgraphs\": ["));
  CHECK(SaveJSON(LoadJSON(text)) == text);

  // A node that lost its subgraph, or whose locations point nowhere.
  auto error = [](const std::string& t) { return ErrorOf([&] { LoadJSON(t, "f.json"); }); };
  std::string no_sub = text;
  const size_t at = no_sub.find(", \n      \"subgraphs\"");
  REQUIRE(at != std::string::npos);
  const size_t end = no_sub.find("\n    }", at);
  no_sub.erase(at, end - at);
  CHECK(
      Contains(error(no_sub), "node 3 'loop' (_foreach): _foreach (node loop): has 0 subgraph(s)"));
  std::string bad_loc = text;
  const size_t loc = bad_loc.find("\"remain_locs\": \"[");
  REQUIRE(loc != std::string::npos);
  bad_loc.replace(loc, 17, "\"remain_locs\": \"[7");
  CHECK(Contains(error(bad_loc), "remain_locs holds 7"));

  // Truncated and corrupted text: a tessera::Error or a symbol whose shape
  // inference and expansion raise nothing but tessera::Error either.
  std::mt19937 gen(11);
  auto try_load = [](const std::string& t) {
    try {
      const Symbol s = LoadJSON(t);
      const IndexedGraph g(s.outputs);
      std::vector<Shape> shapes(g.num_entries());
      InferShapes(g, &shapes);
      ExpandControlFlow(s.outputs,
                        [](const IndexedGraph& ig, std::vector<Shape>* sh, std::vector<DType>*) {
                          for (uint32_t nid : ig.input_nodes())
                            (*sh)[ig.entry_id(nid, 0)] = Shape{3, 2};
                        });
    } catch (const Error&) {
    } catch (...) {
      FAIL("damaged control-flow JSON raised something other than tessera::Error");
    }
  };
  FeedDamaged(text, 5, "0123456789[]{},:\"-. (", 2000, gen, try_load);
}

TEST_CASE("symbol files are written atomically and read back") {
  const fs::path dir =
      fs::temp_directory_path() / ("tessera_symbol_json_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "net-symbol.json").string();
  int version = 0;
  Symbol s = LoadJSON(kCurrentLayout, "fixture", &version);
  SaveSymbolFile(s, path, version);
  CHECK(ReadFile(path) == kCurrentLayout);
  CHECK(SaveJSON(LoadSymbolFile(path)) == SaveJSON(s));
  SaveSymbolFile(s, path);  // replaces it
  int saved = 0;
  LoadSymbolFile(path, &saved);
  CHECK(saved == kMXNetVersion);
  // Nothing but the file is left behind.
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);

  CHECK(Contains(ErrorOf([&] { SaveSymbolFile(s, (dir / "no" / "such.json").string()); }),
                 "save: cannot create " + (dir / "no" / "such.json").string()));
  CHECK(Contains(ErrorOf([&] { LoadSymbolFile((dir / "missing.json").string()); }),
                 "load: cannot open " + (dir / "missing.json").string()));
  CHECK(ErrorOf([&] { LoadSymbolFile(dir.string()); }) ==
        "load: " + dir.string() + " is not a regular file (it is a directory)");
  std::ofstream(dir / "broken.json") << "{\"nodes\": [";
  CHECK(ErrorOf([&] {
          LoadSymbolFile((dir / "broken.json").string());
        }).starts_with((dir / "broken.json").string() + ": not valid JSON"));
  fs::remove_all(dir);
}

TEST_CASE("real MXNet symbol files (TESSERA_MXNET_MODELS)") {
  const char* root = std::getenv("TESSERA_MXNET_MODELS");
  if (!root || !*root) {
    MESSAGE("TESSERA_MXNET_MODELS is not set: skipping the real symbol-file check");
    return;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  for (const fs::path& file : files) {
    CAPTURE(file.string());
    const std::string text = ReadFile(file);
    int version = 0;
    Symbol s;
    try {
      s = LoadSymbolFile(file.string(), &version);
    } catch (const Error& e) {
      const std::string msg = e.what();
      std::cout << file.string() << ": " << msg << "\n";
      CHECK(msg.starts_with(file.string() + ": this build has no operator(s) "));
      continue;
    }
    std::string args;
    for (const std::string& a : s.ListArguments()) args += (args.empty() ? "" : ", ") + a;
    std::cout << file.string() << ": loads (version " << version << "); " << s.NumOutputs()
              << " output(s), " << s.ListAuxiliaryStates().size()
              << " auxiliary state(s); arguments: " << args << "\n";
    if (!Contains(text, "\"node_row_ptr\"")) continue;  // an older layout: nothing to compare
    // Byte for byte, except node_row_ptr: it counts each node's outputs as
    // the writing MXNet build declared them, hidden ones included, and that
    // varies by build (MXNet 1.4 with MKL-DNN gives max Pooling a second,
    // workspace output; 1.6 without it does not), so it is compared apart.
    const std::string again = SaveJSON(s, version);
    CHECK(WithoutRowPtr(again) == WithoutRowPtr(text));
    const auto file_rows = nlohmann::json::parse(text)["node_row_ptr"];
    const auto our_rows = nlohmann::json::parse(again)["node_row_ptr"];
    if (file_rows != our_rows) {
      const auto nodes = nlohmann::json::parse(text)["nodes"];
      for (size_t i = 0; i + 1 < file_rows.size() && i + 1 < our_rows.size(); ++i) {
        const int theirs = file_rows[i + 1].get<int>() - file_rows[i].get<int>();
        const int ours = our_rows[i + 1].get<int>() - our_rows[i].get<int>();
        if (theirs != ours)
          MESSAGE(file.string() << ": node " << i << " (" << nodes[i]["op"].get<std::string>()
                                << ") has " << ours << " output(s) here, " << theirs
                                << " in the file's node_row_ptr");
      }
    }
  }
}
