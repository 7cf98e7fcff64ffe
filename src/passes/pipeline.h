// The lowering pipeline: named passes in a fixed order, the graph verified after each.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace inplace {

struct PipelineOptions {
  std::string until;                 // stop after this pass (empty: run all)
  std::string print_after;           // print the graph after this pass to `print_to`
  std::ostream* print_to = nullptr;  // null = std::cout
  // When set, called instead of printing the listing (to print another format).
  std::function<void(const Graph&, const PassContext&)> printer;
};

// The passes that make a program functional, in order.
std::vector<std::unique_ptr<Pass>> functionalization_passes();
std::vector<std::string> functionalization_pass_names();
// The passes that follow functionalization when a program is compiled into an engine:
// lift_mutated_buffers, kv_cache_update (engine_passes.h says what each does).
std::vector<std::unique_ptr<Pass>> engine_passes();
// The whole pipeline compile() runs: functionalization_passes() then engine_passes().
std::vector<std::unique_ptr<Pass>> compile_passes();
std::vector<std::string> pass_names(const std::vector<std::unique_ptr<Pass>>& passes);

// Runs `passes` on `graph`: verifies after each (Graph::verify and the pass's own check,
// naming the pass that broke it), honours until / print_after, records per-pass timing in
// ctx.timings_ms (logged when verbose).
void run_passes(const std::vector<std::unique_ptr<Pass>>& passes, Graph& graph, PassContext& ctx,
                const PipelineOptions& options = {});

// The functionalization pipeline with default options.
void functionalize(Graph& graph, PassContext& ctx, const PipelineOptions& options = {});

// Checks that no op in `graph` writes its arguments (what inplace_to_out_of_place promises).
void verify_functional(const Graph& graph);

}  // namespace inplace
