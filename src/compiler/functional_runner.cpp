#include "compiler/functional_runner.h"

#include <utility>
#include <vector>

#include "core/error.h"
#include "interpreter/interpreter.h"

namespace inplace {

RunOutput run_functional(const FunctionalProgram& program,
                         const std::map<std::string, Value>& inputs, State* state) {
  const PassContext& ctx = program.context;
  RunOutput out = run_eager(*program.graph, inputs, state);
  // Read every new value before writing any: an output may be a view of a written input.
  std::vector<std::pair<Tensor, Tensor>> writes;
  for (auto [o, i] : ctx.io_map()) {
    IP_CHECK(o < static_cast<int>(out.flat.size()), kInternal, "[functional] io_map names output ",
             o, " of ", out.flat.size());
    const std::string& name = ctx.input_names[i];
    Tensor dst;
    if (i < ctx.num_placeholders) {
      auto it = inputs.find(name);
      IP_CHECK(it != inputs.end(), kNotFound, "[functional] mutated input '", name,
               "' was not given");
      dst = it->second.as_tensor(name.c_str());
    } else {
      IP_CHECK(state && state->count(name), kNotFound, "[functional] mutated buffer '", name,
               "' is not in the state");
      dst = state->at(name);
    }
    const Tensor& src = out.flat[o].as_tensor("functional output");
    IP_CHECK(src.shape() == dst.shape(), kShapeMismatch, "[functional] new value of '", name,
             "' has shape ", shape_str(src.shape()), " but the input has shape ",
             shape_str(dst.shape()));
    writes.emplace_back(dst, src.may_overlap(dst) ? src.clone() : src);
  }
  for (auto& [dst, src] : writes) dst.copy_from(src);

  int keep = ctx.original_output_count;
  if (keep >= 0 && keep < static_cast<int>(out.flat.size())) {
    int extra = static_cast<int>(out.flat.size()) - keep;
    out.flat.resize(keep);
    if (ctx.output_wrapped) {
      Value first = out.result.items.front();
      out.result = first;
    } else if (out.result.is_sequence()) {
      out.result.items.resize(out.result.items.size() - extra);
    }
  }
  return out;
}

}  // namespace inplace
