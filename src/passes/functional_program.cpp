#include "passes/functional_program.h"

namespace inplace {

FunctionalProgram make_functional(const Graph& graph, PassOptions options,
                                  const PipelineOptions& pipeline) {
  FunctionalProgram p;
  p.graph = graph.clone();
  p.context.options = std::move(options);
  functionalize(*p.graph, p.context, pipeline);
  return p;
}

std::map<std::string, Meta> metas_of_inputs(const std::map<std::string, Value>& inputs) {
  std::map<std::string, Meta> metas;
  for (const auto& [name, v] : inputs) {
    if (!v.is_tensor()) continue;
    Meta m;
    m.shape = v.tensor.shape();
    m.dtype = v.tensor.dtype();
    metas[name] = m;
  }
  return metas;
}

}  // namespace inplace
