#include "compiler/program_compile.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/error.h"

namespace inplace {

namespace {

bool same_contents(const Tensor& a, const Tensor& b) {
  if (a.same_view(b)) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape() || a.is_meta() || b.is_meta()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.nbytes() == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

// Adds `entry` found in `method`, or checks it against the entry of the same name.
void add_state(std::vector<StateEntry>& table, std::vector<std::string>& first_seen,
               StateEntry entry, const std::string& method) {
  for (size_t s = 0; s < table.size(); ++s) {
    StateEntry& have = table[s];
    if (have.name != entry.name) continue;
    IP_CHECK(have.shape == entry.shape && have.dtype == entry.dtype, kShapeMismatch,
             "[compile_program] state '", entry.name, "' is ", shape_str(have.shape), " ",
             dtype_name(have.dtype), " in method '", first_seen[s], "' but ",
             shape_str(entry.shape), " ", dtype_name(entry.dtype), " in method '", method, "'");
    if (!have.initial.defined()) {
      have.initial = entry.initial;
    } else if (entry.initial.defined()) {
      IP_CHECK(same_contents(have.initial, entry.initial), kInvalidArgument,
               "[compile_program] state '", entry.name,
               "' has different initial values in "
               "methods '",
               first_seen[s], "' and '", method, "'");
    }
    return;
  }
  first_seen.push_back(method);
  table.push_back(std::move(entry));
}

// A copy of `graph` in which every get_attr of a target in `names` reads a new placeholder
// of that name (after the others), so the method reads the state rather than a constant.
std::unique_ptr<Graph> read_state_as_inputs(const Graph& graph, const std::set<std::string>& names,
                                            std::vector<Tensor>* examples) {
  std::unique_ptr<Graph> g = graph.clone();
  Node* first_other = nullptr;
  for (Node* n : g->nodes())
    if (n->op != NodeOp::kPlaceholder) {
      first_other = n;
      break;
    }
  for (const std::string& target : names) {
    Node* ph = g->insert_before(first_other, NodeOp::kPlaceholder, target, {}, {}, target);
    const Tensor& init = g->constants.at(target);
    ph->meta.shape = init.shape();
    ph->meta.dtype = init.dtype();
    for (Node* n : g->nodes()) {
      if (n->op != NodeOp::kGetAttr || n->target != target) continue;
      g->replace_all_uses_with(n, ph);
      g->erase(n);
    }
    if (ph->name != target && !g->find(target)) g->rename(ph, target);
    IP_CHECK(ph->name == target, kInvalidArgument, "[compile_program] graph '", graph.name,
             "' has a node named '", target, "' besides the state of that name");
    examples->push_back(init);
  }
  return g;
}

}  // namespace

std::shared_ptr<const Program> compile_program(const std::vector<MethodSource>& sources,
                                               const ProgramOptions& options) {
  IP_CHECK(!sources.empty(), kInvalidArgument, "[compile_program] '", options.name,
           "' has no methods");
  std::vector<CompiledProgram> compiled;
  std::vector<StateEntry> table;
  std::vector<std::string> first_seen;
  DeviceWeights uploads;  // off the host: each weight on the device once, for every method
  auto compile_method = [&](const MethodSource& src, const Graph& graph,
                            const std::vector<Tensor>& examples) {
    CompileOptions co = src.options;
    if (options.device) co.device = *options.device;
    co.device_weights = &uploads;
    try {
      return compile(graph, examples, co);
    } catch (const Error& e) {
      throw Error(e.code(), str_cat("[compile_program] method '", src.name, "' for device '",
                                    co.device.str(), "': ", e.what()));
    }
  };
  for (const MethodSource& src : sources) {
    IP_CHECK(src.graph, kInvalidArgument, "[compile_program] method '", src.name, "' has no graph");
    CompiledProgram cp = compile_method(src, *src.graph, src.example_inputs);
    const Engine& e = *cp.engine;
    for (const auto& [index, target] : cp.lifted_buffers) {
      IP_CHECK(e.inputs()[index].name == target, kInvalidArgument, "[compile_program] method '",
               src.name, "': buffer '", target, "' is bound as '", e.inputs()[index].name,
               "' (a node of the graph already has its name)");
      const Tensor& init = src.graph->constants.at(target);
      add_state(table, first_seen, {target, init.shape(), init.dtype(), init, Ownership::kRuntime},
                src.name);
    }
    for (int i : e.mutated_inputs()) {
      if (i >= cp.num_user_inputs) continue;
      const Binding& b = e.inputs()[i];
      add_state(table, first_seen, {b.name, b.shape, b.dtype, Tensor(), Ownership::kCaller},
                src.name);
    }
    compiled.push_back(std::move(cp));
  }
  std::set<std::string> state_names;
  for (const StateEntry& s : table) state_names.insert(s.name);
  for (const std::string& name : options.caller_owned) {
    auto it = std::find_if(table.begin(), table.end(),
                           [&](const StateEntry& s) { return s.name == name; });
    IP_CHECK(it != table.end(), kNotFound, "[compile_program] --caller-owned '", name,
             "' is not state of any method; the state is ", StateTable(table).names());
    it->ownership = Ownership::kCaller;
  }
  for (const std::string& name : options.runtime_owned) {
    auto it = std::find_if(table.begin(), table.end(),
                           [&](const StateEntry& s) { return s.name == name; });
    IP_CHECK(it != table.end(), kNotFound, "[compile_program] --runtime-owned '", name,
             "' is not state of any method; the state is ", StateTable(table).names());
    if (!it->initial.defined()) it->initial = Tensor::zeros(it->shape, it->dtype);
    it->ownership = Ownership::kRuntime;
  }
  // Methods that read state without writing it: recompile them reading it as an input.
  for (size_t m = 0; m < sources.size(); ++m) {
    const Graph& g = *sources[m].graph;
    std::set<std::string> bound;
    for (const Binding& b : compiled[m].engine->inputs()) bound.insert(b.name);
    std::set<std::string> read;
    for (Node* n : g.nodes())
      if (n->op == NodeOp::kGetAttr && state_names.count(n->target) && !bound.count(n->target))
        read.insert(n->target);
    if (read.empty()) continue;
    std::vector<Tensor> examples = sources[m].example_inputs;
    std::unique_ptr<Graph> lifted = read_state_as_inputs(g, read, &examples);
    compiled[m] = compile_method(sources[m], *lifted, examples);
  }
  // One copy of each weight: equal name and contents share one tensor across methods.
  std::vector<std::pair<std::string, Tensor>> shared;
  std::vector<std::shared_ptr<const Engine>> engines;
  std::vector<std::string> names;
  for (size_t m = 0; m < sources.size(); ++m) {
    std::shared_ptr<const Engine> e = compiled[m].engine;
    Plan plan = e->plan();
    bool replaced = false;
    for (size_t k = 0; k < plan.constants.size(); ++k) {
      auto it = std::find_if(shared.begin(), shared.end(), [&](const auto& w) {
        return w.first == plan.constant_names[k] && same_contents(w.second, plan.constants[k]);
      });
      if (it == shared.end()) {
        shared.emplace_back(plan.constant_names[k], plan.constants[k]);
      } else if (!it->second.same_view(plan.constants[k])) {
        plan.constants[k] = it->second;
        replaced = true;
      }
    }
    if (replaced) e = Engine::from_plan(std::move(plan), e->name(), e->aliased_io(), &uploads);
    engines.push_back(std::move(e));
    names.push_back(sources[m].name);
  }
  return Program::assemble(options.name, std::move(engines), std::move(names),
                           StateTable(std::move(table)));
}

}  // namespace inplace
