// A pass rewrites a Graph in place. Passes share a PassContext: the options the caller gave
// and what earlier passes found (the mutations that tie outputs to the inputs they update).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/mutation.h"

namespace inplace {

class MetaCache;
struct OpDef;

struct PassOptions {
  // Outputs the caller says are new values of inputs (graphs that are already functional,
  // `--mutated-input INPUT=OUTPUT`): input is a placeholder name or buffer target.
  std::vector<DeclaredMutation> mutated_inputs;
  // Shapes and dtypes of placeholders whose node meta lacks them (exec fills these from the
  // actual inputs). Passes use shapes to decide view-or-copy and casts; see docs/passes.md.
  std::map<std::string, Meta> input_metas;
  bool verbose = false;  // per-pass timing on `log`
  // What the engine's backend asks of the fusing passes (backend/fusion_preferences.h; compile()
  // fills these from the device's, the defaults are the cpu backend's, which a test checks):
  // a fused_linear / gated_mlp of at most decode_max_rows input rows is a decode step whose
  // prologue and epilogues the passes join; merge_sibling_linears and fuse_norm_prologues run.
  int64_t decode_max_rows = 4;
  bool merge_sibling_linears = false;
  bool fuse_norm_prologues = false;
  // prepare_in_out_weights runs: a decode product over a read-only weight stored [in, out] reads
  // the weight's [out, in] copy, made once (a constant at compile, a bound weight when bound).
  bool prepare_weights = false;
  // fuse_pointwise takes row reductions into its chains (fused_rows steps).
  bool fuse_rows = false;
  // Whether the engine's backend runs a step a fusing pass would write (fuse_pointwise asks
  // before it fuses a chain): "" when its kernel runs op(args) (tensors are metas), else why
  // not. compile() fills it from the device's kernel table; null: every form runs.
  std::function<std::string(const OpDef& op, const std::vector<Value>& args)> kernel_supports;
  // Rewrites that run_passes leaves out, by name: each must be an optional
  // rewrite (pipeline.cpp's list); a differential test compiles with and without one.
  std::vector<std::string> skip_passes;
};

struct PassContext {
  PassOptions options;
  std::ostream* log = nullptr;  // verbose output; null = std::cerr

  // ---- results (alias_analysis) ----
  // Input numbering: every placeholder in graph order, then each mutated buffer (get_attr
  // target) in order of its first get_attr node.
  std::vector<std::string> input_names;
  int num_placeholders = 0;
  // Each mutated input or buffer (input index into input_names) with the flat output that
  // holds its final value, in input order.
  std::vector<Mutation> mutations;
  int original_output_count = -1;  // flat outputs the program had before alias_analysis
  bool output_wrapped = false;     // a single (non-tuple) output was wrapped into a tuple

  // flat output index -> input index, from `mutations` (listings, tests).
  std::map<int, int> io_map() const;
  // Whether input index `input` is a buffer (a get_attr target) rather than a placeholder.
  bool is_buffer(int input) const { return input >= num_placeholders; }

  // ---- shared between passes ----
  // The graph's metas, refreshed for the nodes each pass rewrites (cached_metas,
  // passes/meta_inference.h); made at the first use.
  std::shared_ptr<MetaCache> meta_cache;

  // ---- bookkeeping ----
  std::vector<std::pair<std::string, double>> timings_ms;  // per pass, in run order
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  virtual void run(Graph& graph, PassContext& ctx) = 0;
  // What the pass promises beyond a valid graph, checked by the pipeline after it runs (throws
  // naming what broke it). Default: nothing more.
  virtual void check(const Graph& graph) const {}
};

// Factories, one per pass file.
std::unique_ptr<Pass> make_normalize_pass();
std::unique_ptr<Pass> make_alias_analysis_pass();
std::unique_ptr<Pass> make_inplace_to_out_of_place_pass();
std::unique_ptr<Pass> make_dead_code_elimination_pass();

}  // namespace inplace
