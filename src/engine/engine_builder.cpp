// Engine::build: plan building (plan_builder.cpp), reinplacing, buffer finalisation.
#include <cstdio>

#include "core/device_allocator.h"
#include "engine/build_state.h"
#include "engine/write_set.h"

namespace inplace {

std::shared_ptr<const Engine> Engine::build(const Graph& graph,
                                            const std::vector<Mutation>& mutations,
                                            int original_output_count,
                                            const std::vector<Tensor>& example_inputs,
                                            const EngineOptions& options) {
  BuildState st;
  st.mutations = mutations;
  st.options = options;
  build_steps(st, graph, example_inputs);
  st.plan.device = options.device;
  st.plan.original_output_count = original_output_count;
  st.plan.prepared = options.prepared;
  for (const Mutation& a : mutations) {
    IP_CHECK(a.output >= 0 && a.output < static_cast<int>(st.plan.outputs.size()) && a.input >= 0 &&
                 a.input < static_cast<int>(st.plan.inputs.size()),
             kInvalidArgument, "[compile] alias output ", a.output, " -> input ", a.input,
             " is out of range (", st.plan.outputs.size(), " outputs, ", st.plan.inputs.size(),
             " inputs)");
    const Binding& in = st.plan.inputs[a.input];
    const Binding& out = st.plan.outputs[a.output];
    IP_CHECK(in.dynamic_dims.empty(), kUnsupported, "[compile] input '", in.name,
             "' is written in place and cannot have a dynamic dim");
    IP_CHECK(in.shape == out.shape && in.dtype == out.dtype, kShapeMismatch, "[compile] output ",
             a.output, " ", shape_str(out.shape), " ", dtype_name(out.dtype),
             " cannot alias input '", in.name, "' ", shape_str(in.shape), " ",
             dtype_name(in.dtype));
  }
  reinplace(st);
  finalize_buffers(st);
  drop_dead_steps(st);
  validate_plan(st.plan);
  check_write_set(st.plan);
  // Steps the device cannot run go to the host, named once here, at compile time. A device this
  // build has no backend for is refused by the engine, naming it.
  KernelTable::get();  // registers every backend this build has, with its allocator
  if (has_device_allocator(st.plan.device.type)) {
    const std::vector<HostStep> on_host = place_on_host(st.plan, options.strict_device);
    const std::string prefix = str_cat("inplace: warning: [engine] '", graph.name, "': ");
    std::fputs(describe_host_steps(st.plan, on_host, prefix).c_str(), stderr);
  }
  return std::shared_ptr<const Engine>(
      new Engine(std::move(st.plan), graph.name, options.device_weights));
}

}  // namespace inplace
