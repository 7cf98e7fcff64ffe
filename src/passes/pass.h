// A pass rewrites a Graph in place. Passes share a PassContext: the options the caller gave
// and what earlier passes found (the io_map that ties outputs to the inputs they update).
#pragma once
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace inplace {

struct PassOptions {
  // Outputs the caller says are new values of inputs (graphs that are already functional,
  // `--mutated-input INPUT=OUTPUT`): input name (placeholder or buffer target) -> flat output.
  std::vector<std::pair<std::string, int>> mutated_inputs;
  // Shapes and dtypes of placeholders whose node meta lacks them (exec fills these from the
  // actual inputs). Passes use shapes to decide view-or-copy and casts; see docs/passes.md.
  std::map<std::string, Meta> input_metas;
  bool verbose = false;  // per-pass timing on `log`
};

// One input or buffer whose final value the program changes.
struct MutatedInput {
  std::string name;  // placeholder name, or get_attr target for a buffer
  bool is_buffer = false;
  int input_index = -1;   // placeholders in order, then mutated buffers (see input_names)
  int output_index = -1;  // flat output holding its final value
};

struct PassContext {
  PassOptions options;
  std::ostream* log = nullptr;  // verbose output; null = std::cerr

  // ---- results (alias_analysis) ----
  // Input numbering: every placeholder in graph order, then each mutated buffer (get_attr
  // target) in order of its first get_attr node.
  std::vector<std::string> input_names;
  int num_placeholders = 0;
  std::map<int, int> io_map;          // flat output index -> input index
  std::vector<MutatedInput> mutated;  // in input order
  int original_output_count = -1;     // flat outputs the program had before alias_analysis
  bool output_wrapped = false;        // a single (non-tuple) output was wrapped into a tuple

  // ---- bookkeeping ----
  std::vector<std::pair<std::string, double>> timings_ms;  // per pass, in run order
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  virtual void run(Graph& graph, PassContext& ctx) = 0;
};

// Factories, one per pass file.
std::unique_ptr<Pass> make_normalize_pass();
std::unique_ptr<Pass> make_alias_analysis_pass();
std::unique_ptr<Pass> make_inplace_to_out_of_place_pass();
std::unique_ptr<Pass> make_dead_code_elimination_pass();

}  // namespace inplace
