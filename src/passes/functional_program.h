// A program made functional by the lowering passes, with the io_map that says which output is
// the new value of which input or buffer (compiler/functional_runner.h runs it).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "passes/pipeline.h"

namespace inplace {

struct FunctionalProgram {
  std::unique_ptr<Graph> graph;  // functional: no op in it writes its arguments
  PassContext context;           // io_map, input numbering, original_output_count
};

// A copy of `graph` made functional by the pipeline.
FunctionalProgram make_functional(const Graph& graph, PassOptions options = {},
                                  const PipelineOptions& pipeline = {});

// Shapes and dtypes of actual inputs, for PassOptions::input_metas.
std::map<std::string, Meta> metas_of_inputs(const std::map<std::string, Value>& inputs);

}  // namespace inplace
