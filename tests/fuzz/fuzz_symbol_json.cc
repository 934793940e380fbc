// libFuzzer harness: symbol JSON (MXNet's layouts, 0.8 to 1.x). A symbol that
// loads must list its inputs and outputs, take part in shape and dtype
// inference seeded from its own "__shape__"/"__dtype__" attributes, and save
// to JSON that loads again and saves the same.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/error.h"
#include "engine/graph/indexed_graph.h"
#include "engine/graph/infer.h"
#include "engine/graph/json.h"
#include "tests/fuzz/fuzz_common.h"

using tessera::graph::Symbol;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  FuzzSetUp();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Symbol s;
  int version = 0;
  try {
    s = tessera::graph::LoadJSON(text, "fuzz", &version);
  } catch (const tessera::Error&) {
    return 0;
  }
  s.ListArguments();
  s.ListOutputs();
  s.ListAuxiliaryStates();
  s.AttrDict();
  try {
    const tessera::graph::IndexedGraph g(s.outputs);
    std::vector<tessera::Shape> shapes(g.num_entries());
    std::vector<tessera::DType> types(g.num_entries(), tessera::DType::kUnknown);
    tessera::graph::InferShapes(g, &shapes);
    tessera::graph::InferTypes(g, &types);
  } catch (const tessera::Error&) {
    // A file may describe shapes that do not fit together.
  }
  const std::string once = tessera::graph::SaveJSON(s, version);
  const std::string twice =
      tessera::graph::SaveJSON(tessera::graph::LoadJSON(once, "resaved"), version);
  if (once != twice) std::abort();
  return 0;
}
