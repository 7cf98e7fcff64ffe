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

// The passes that make a program functional, in order. Later stages append to this list.
std::vector<std::unique_ptr<Pass>> functionalization_passes();
std::vector<std::string> functionalization_pass_names();

// Runs `passes` on `graph`: verifies after each (naming the pass that broke it), honours
// until / print_after, records per-pass timing in ctx.timings_ms (logged when verbose).
void run_passes(const std::vector<std::unique_ptr<Pass>>& passes, Graph& graph, PassContext& ctx,
                const PipelineOptions& options = {});

// The functionalization pipeline with default options.
void functionalize(Graph& graph, PassContext& ctx, const PipelineOptions& options = {});

// Checks that no op in `graph` writes its arguments (what inplace_to_out_of_place promises).
void verify_functional(const Graph& graph);

}  // namespace inplace
