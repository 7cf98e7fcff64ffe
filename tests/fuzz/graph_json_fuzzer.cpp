// libFuzzer target: graph JSON text -> read_graph_json_string must return a verified graph or
// throw inplace::Error. A graph that loads must also write back and reload to the same text, and
// the functionalization pipeline must either lower it or reject it with an inplace::Error (never
// crash). Build and run: scripts/fuzz.sh graph_json.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "frontend/graph_json.h"
#include "passes/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<inplace::Graph> graph;
  try {
    // No base dir: constants stored in files must not reach outside the fuzzer's sandbox.
    graph = inplace::read_graph_json_string(text, "/nonexistent", "<fuzz>");
  } catch (const inplace::Error&) {
    return 0;
  }
  std::string written = inplace::write_graph_json(*graph);
  auto again = inplace::read_graph_json_string(written, "/nonexistent", "<fuzz:rewritten>");
  if (inplace::write_graph_json(*again) != written) std::abort();  // the writer must be stable
  try {
    inplace::PassContext ctx;
    inplace::functionalize(*graph, ctx);
  } catch (const inplace::Error&) {
  }
  return 0;
}
