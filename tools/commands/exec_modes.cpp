#include "exec_modes.h"

namespace inplace::cli {

namespace {

// dst <- src for a write-back: same shape and dtype, as the engine's aliased I/O requires.
void write_back(const Tensor& dst, const Value& src, const std::string& what) {
  IP_CHECK(src.is_tensor(), kInvalidArgument, "[exec] ", what, ": the new value is a ",
           src.kind_name(), ", not a tensor");
  const Tensor& s = src.tensor;
  IP_CHECK(s.shape() == dst.shape(), kShapeMismatch, "[exec] ", what, ": new value of shape ",
           shape_str(s.shape()), " does not match shape ", shape_str(dst.shape()));
  IP_CHECK(s.dtype() == dst.dtype(), kDTypeMismatch, "[exec] ", what, ": new value of dtype ",
           dtype_name(s.dtype()), " does not match dtype ", dtype_name(dst.dtype()));
  if (!s.same_view(dst)) dst.copy_from(s);
}

}  // namespace

const std::vector<Mode>& exec_modes() {
  static const std::vector<Mode> kModes = {
      {"eager", &run_mode_eager},
      {"functional", nullptr},
      {"compiled", &run_mode_compiled},
  };
  return kModes;
}

void bind_lifted_placeholders(const Graph& graph, Inputs& inputs, State& state) {
  for (const SignatureInput& in : graph.signature.inputs) {
    if (in.kind == "user_input") continue;
    auto it = state.find(in.target);
    IP_CHECK(it != state.end(), kNotFound, "[exec] placeholder '", in.node, "' is ", in.kind, " '",
             in.target, "' but the graph has no constant '", in.target, "'");
    inputs[in.node] = Value::from_tensor(it->second);
  }
}

std::vector<Value> apply_signature(const Graph& graph, const std::vector<Value>& flat,
                                   Inputs& inputs, State& state) {
  const auto& outs = graph.signature.outputs;
  if (outs.empty()) return flat;
  IP_CHECK(flat.size() == outs.size(), kInvalidArgument, "[exec] the signature lists ", outs.size(),
           " outputs but the graph returned ", flat.size());
  std::vector<Value> user;
  for (size_t i = 0; i < outs.size(); ++i) {
    const SignatureOutput& o = outs[i];
    if (o.kind == "buffer_mutation") {
      auto it = state.find(o.target);
      IP_CHECK(it != state.end(), kNotFound, "[exec] output ", i, " mutates buffer '", o.target,
               "', which the graph has no constant for");
      write_back(it->second, flat[i], str_cat("output ", i, " (buffer_mutation '", o.target, "')"));
    } else if (o.kind == "user_input_mutation") {
      auto it = inputs.find(o.target);
      IP_CHECK(it != inputs.end() && it->second.is_tensor(), kNotFound, "[exec] output ", i,
               " mutates input '", o.target, "', which is not a bound tensor input");
      write_back(it->second.tensor, flat[i],
                 str_cat("output ", i, " (user_input_mutation '", o.target, "')"));
    } else {
      user.push_back(flat[i]);
    }
  }
  return user;
}

std::vector<Value> run_mode_eager(const Graph& graph, Inputs& inputs, State& state,
                                  const ExecOptions& options) {
  (void)options;
  bind_lifted_placeholders(graph, inputs, state);
  RunOutput r = run_eager(graph, inputs, &state);
  return apply_signature(graph, r.flat, inputs, state);
}

}  // namespace inplace::cli
