#include "compiler/compile.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <set>

#include "backend/fusion_preferences.h"
#include "backend/kernel_table.h"
#include "compiler/prepared_inputs.h"
#include "compiler/specialized_sizes.h"

namespace inplace {

namespace {

int parse_index(const std::string& s, const char* prefix) {
  std::string t = s;
  if (t.rfind(prefix, 0) == 0) t = t.substr(std::char_traits<char>::length(prefix));
  if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(t);
}

// Resolves the user's IN=OUT pairs (names or indices) and rejects
// unknown names and anything claimed twice, naming it.
std::vector<DeclaredMutation> resolve_mutated_inputs(const Graph& graph,
                                                     const CompileOptions& options) {
  std::vector<Node*> ph = graph.placeholders();
  std::vector<DeclaredMutation> out;
  std::set<std::string> inputs_seen;
  std::set<int> outputs_seen;
  for (const DeclaredMutation& d : options.mutated_inputs) {
    const std::string& in = d.input;
    std::string name = in;
    int idx = parse_index(in, "input.");
    if (idx >= 0) {
      IP_CHECK(idx < static_cast<int>(ph.size()), kNotFound, "[mark_aliased_outputs] input index ",
               idx, " is out of range (", ph.size(), " inputs)");
      name = ph[idx]->name;
    } else {
      bool known = graph.constants.count(name) > 0;
      for (Node* p : ph) known |= p->name == name;
      IP_CHECK(known, kNotFound, "[mark_aliased_outputs] unknown input '", in, "'");
    }
    int out_index = d.output;
    IP_CHECK(out_index >= 0, kNotFound, "[mark_aliased_outputs] unknown output ", out_index);
    IP_CHECK(inputs_seen.insert(name).second, kInvalidArgument, "[mark_aliased_outputs] input '",
             name, "' is claimed twice");
    IP_CHECK(outputs_seen.insert(out_index).second, kInvalidArgument,
             "[mark_aliased_outputs] output ", out_index, " is claimed twice");
    out.push_back({name, out_index});
  }
  return out;
}

// A switch `name`=0 or =1 in the environment, read at each compile, that turns a rewrite off or
// on whatever the backend prefers where the caller's options leave it open (A/B profiles of a
// model's step): INPLACE_FUSE_NORM_PROLOGUES (the norms inside the products they feed, RMSNorm
// and LayerNorm prologues), INPLACE_PREPARE_WEIGHTS (prepare_in_out_weights),
// INPLACE_FUSE_POINTWISE (fuse_pointwise: chains of elementwise ops), INPLACE_FUSE_ROWS (row
// reductions in those chains).
std::optional<bool> switch_from_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  IP_CHECK(std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0, kInvalidArgument, "[compile] ",
           name, "='", v, "': expected 0 or 1");
  return v[0] == '1';
}

}  // namespace

CompiledProgram compile(const Graph& graph, const std::vector<Tensor>& example_inputs,
                        const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Node*> ph = graph.placeholders();
  IP_CHECK(example_inputs.size() == ph.size(), kInvalidArgument, "[compile] graph '", graph.name,
           "' has ", ph.size(), " inputs but ", example_inputs.size(), " were given");
  PassOptions po;
  po.verbose = options.verbose;
  // The fusions the engine's backend prefers, unless the caller says otherwise.
  const DeviceType fusion_device = options.fusion_device.value_or(options.device.type);
  const FusionPreferences fusion = fusion_preferences(fusion_device);
  po.decode_max_rows = fusion.decode_max_rows;
  po.merge_sibling_linears = options.merge_sibling_linears.value_or(fusion.merge_sibling_linears);
  po.fuse_norm_prologues = options.fuse_norm_prologues.value_or(
      switch_from_env("INPLACE_FUSE_NORM_PROLOGUES").value_or(fusion.fuse_norm_prologues));
  po.prepare_weights = options.prepare_weights.value_or(
      switch_from_env("INPLACE_PREPARE_WEIGHTS").value_or(fusion.prepare_weights));
  po.fuse_rows =
      options.fuse_rows.value_or(switch_from_env("INPLACE_FUSE_ROWS").value_or(fusion.fuse_rows));
  po.skip_passes = options.skip_passes;
  // INPLACE_FUSE_POINTWISE=0 or =1 (read at each compile) for A/B profiles of the generic fusion.
  if (!switch_from_env("INPLACE_FUSE_POINTWISE").value_or(fusion.fuse_pointwise))
    po.skip_passes.push_back("fuse_pointwise");
  po.kernel_supports = [fusion_device](const OpDef& op, const std::vector<Value>& args) {
    const KernelTable& table = KernelTable::get();
    if (!table.find(op, fusion_device)) return std::string("no kernel");
    const Supports* supports = table.supports(op, fusion_device);
    return supports ? (*supports)(args) : std::string();
  };
  po.mutated_inputs = resolve_mutated_inputs(graph, options);
  auto input_of = [&](const std::string& name, const char* option) {
    for (size_t i = 0; i < ph.size(); ++i)
      if (ph[i]->name == name) return static_cast<int>(i);
    std::string names;
    for (Node* p : ph) names += (names.empty() ? "'" : ", '") + p->name + "'";
    IP_FAIL(kNotFound, "[compile] ", option, ": graph '", graph.name, "' has no input '", name,
            "'; its inputs are ", names.empty() ? std::string("(none)") : names);
  };
  EngineOptions eo;
  eo.alias = options.alias;
  eo.device = options.device;
  eo.device_weights = options.device_weights;
  eo.strict_device = options.strict_device;
  // Each dim and each range once: a second one would silently win over the first.
  std::map<std::pair<std::string, int64_t>, int64_t> dims_seen;
  for (const auto& d : options.dynamic_dims) {
    auto [it, fresh] = dims_seen.try_emplace({d.input, d.dim}, d.max);
    IP_CHECK(fresh, kInvalidArgument, "[compile] --dynamic: dim ", d.dim, " of input '", d.input,
             "' is given twice (max ", it->second, " and ", d.max, "); give it once");
    eo.dynamic_dims.push_back({input_of(d.input, "--dynamic"), d.dim, d.max});
  }
  std::map<std::string, std::pair<int64_t, int64_t>> ranges_seen;
  for (const auto& r : options.value_ranges) {
    auto [it, fresh] = ranges_seen.try_emplace(r.input, r.lo, r.hi);
    IP_CHECK(fresh, kInvalidArgument, "[compile] --value-range: input '", r.input,
             "' is given two ranges ([", it->second.first, ", ", it->second.second, "] and [", r.lo,
             ", ", r.hi, "]); give one");
    eo.value_ranges.push_back({input_of(r.input, "--value-range"), r.lo, r.hi});
  }
  // Shapes the passes see: dynamic dims at their maximum.
  for (size_t i = 0; i < ph.size(); ++i) {
    Shape shape = example_inputs[i].shape();
    for (const DynamicDim& d : eo.dynamic_dims)
      if (d.input == static_cast<int>(i) && d.dim >= 0 &&
          d.dim < static_cast<int64_t>(shape.size()))
        shape[d.dim] = d.max;
    Meta m;
    m.shape = shape;
    m.dtype = example_inputs[i].dtype();
    po.input_metas[ph[i]->name] = m;
  }
  // The whole pipeline: functionalization, then the engine passes (buffer lifting, the
  // kv_cache_update matcher) on a copy of the graph.
  CompiledProgram cp;
  cp.program.graph = graph.clone();
  // Sizes recorded at the example's extent of a dynamic dim follow the input instead.
  resymbolize_sizes(*cp.program.graph, example_inputs, eo.dynamic_dims, po);
  cp.program.context.options = std::move(po);
  run_passes(compile_passes(), *cp.program.graph, cp.program.context);
  const PassContext& ctx = cp.program.context;
  cp.num_user_inputs = ctx.num_placeholders;
  std::vector<Tensor> examples = example_inputs;
  for (size_t i = ctx.num_placeholders; i < ctx.input_names.size(); ++i) {
    examples.push_back(graph.constants.at(ctx.input_names[i]));
    cp.lifted_buffers.emplace_back(static_cast<int>(i), ctx.input_names[i]);
  }
  const auto kv = std::count_if(ctx.mutations.begin(), ctx.mutations.end(), [](const Mutation& m) {
    return m.kind == MutationKind::kKvCacheUpdate;
  });
  std::vector<Mutation> io = ctx.mutations;  // the engine takes them in output order
  std::stable_sort(io.begin(), io.end(),
                   [](const Mutation& a, const Mutation& b) { return a.output < b.output; });
  // Weight-only copies (a transposed [in, out] weight) are made when the weight is bound.
  std::unique_ptr<Graph> hoisted =
      hoist_prepared_inputs(*cp.program.graph, ctx, examples, eo.prepared);
  cp.engine = Engine::build(hoisted ? *hoisted : *cp.program.graph, io, ctx.original_output_count,
                            examples, eo);
  if (options.verbose) {
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::cerr << "[compile] " << graph.name << ": " << cp.engine->plan().steps.size() << " steps, "
              << cp.engine->aliased_io().size() << " aliased outputs, " << kv
              << " kv_cache_update, arena " << cp.engine->plan().arena_bytes << " bytes, " << ms
              << " ms\n";
  }
  return cp;
}

}  // namespace inplace
