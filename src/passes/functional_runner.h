// Functional mode: run a program after the lowering passes and write each mutated input and
// buffer back through the io_map, so the caller sees exactly what eager mode leaves behind.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "interpreter/interpreter.h"
#include "passes/pipeline.h"

namespace inplace {

struct FunctionalProgram {
  std::unique_ptr<Graph> graph;  // functional: no op in it writes its arguments
  PassContext context;           // io_map, input numbering, original_output_count
};

// A copy of `graph` made functional by the pipeline.
FunctionalProgram make_functional(const Graph& graph, PassOptions options = {},
                                  const PipelineOptions& pipeline = {});

// Runs `program` on `inputs` (placeholder name -> value) and `state` (buffers), then copies
// every value the io_map names into its input tensor or buffer. The result holds only the
// outputs the original program had.
RunOutput run_functional(const FunctionalProgram& program,
                         const std::map<std::string, Value>& inputs, State* state);

// Shapes and dtypes of actual inputs, for PassOptions::input_metas.
std::map<std::string, Meta> metas_of_inputs(const std::map<std::string, Value>& inputs);

}  // namespace inplace
