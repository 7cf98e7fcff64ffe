#include "program/engine_program.h"

#include <algorithm>
#include <set>

#include "core/error.h"

namespace inplace {

namespace {

// Whether input `i` can leave the bindings for a constant: nothing writes it, it has a fixed
// size, and no runtime value reads its elements (the refresh reads only inputs).
bool can_be_weight(const Plan& plan, int i) {
  const Binding& b = plan.inputs[i];
  if (std::count(plan.mutated_inputs.begin(), plan.mutated_inputs.end(), i) ||
      std::any_of(plan.aliased_io.begin(), plan.aliased_io.end(),
                  [&](const Mutation& a) { return a.input == i; }) ||
      !b.dynamic_dims.empty() || b.dyn >= 0)
    return false;
  for (const Step& s : plan.steps)
    if (s.writes_binding == b.name) return false;
  for (const RefreshItem& r : plan.refresh)
    if (r.kind == RefreshItem::Kind::kInput && r.index == i) return false;
  for (const SymExpr& e : plan.scalars)
    for (const SymInstr& in : e.code)
      if (in.op == SymInstr::Op::kRead && in.a == i) return false;
  return true;
}

// Whether anything but a prepared binding reads input `i` (a step, an output, a runtime value).
bool read_by_steps(const Plan& plan, int i) {
  auto reads = [&](const TensorRef& r) {
    return r.buffer.kind == BufferKind::kInput && r.buffer.index == i;
  };
  for (const Step& s : plan.steps) {
    for (const TensorSlot& t : s.tensors)
      if (reads(t.ref)) return true;
    for (const TensorRef& o : s.outs)
      if (reads(o)) return true;
  }
  for (const TensorRef& r : plan.output_refs)
    if (reads(r)) return true;
  for (const SymExpr& e : plan.scalars)
    for (const SymInstr& in : e.code)
      if (in.op == SymInstr::Op::kRead && in.a == i) return true;
  return false;
}

// The plan with the inputs of `weights` turned into constants (every reference to them points
// at the constant; later inputs renumbered) and the inputs of `names` renamed. A binding the
// engine prepares from such a weight is a constant too, made here (the weight itself stays only
// where a step reads it); the other prepared bindings follow their sources' new numbers.
Plan with_weights(Plan plan, std::map<int, EngineState> weights,
                  const std::map<int, std::string>& names) {
  std::vector<PreparedInput> prepared;
  for (const PreparedInput& p : plan.prepared) {
    auto w = weights.find(p.source);
    if (w == weights.end()) {
      prepared.push_back(p);
      continue;
    }
    weights[p.input] = {plan.inputs[p.input].name, w->second.value.permute(p.perm).contiguous()};
  }
  std::set<int> dropped;  // weights read only by their prepared copies, now constants
  for (const PreparedInput& p : plan.prepared)
    if (weights.count(p.source) && !read_by_steps(plan, p.source)) dropped.insert(p.source);
  std::vector<int> new_index(plan.inputs.size(), -1);
  std::vector<int> constant_of(plan.inputs.size(), -1);
  std::vector<Binding> inputs;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    if (dropped.count(static_cast<int>(i))) continue;
    auto w = weights.find(static_cast<int>(i));
    if (w != weights.end()) {
      constant_of[i] = static_cast<int>(plan.constants.size());
      plan.constants.push_back(w->second.value);
      plan.constant_names.push_back(w->second.name);
      continue;
    }
    new_index[i] = static_cast<int>(inputs.size());
    Binding b = plan.inputs[i];
    auto n = names.find(static_cast<int>(i));
    if (n != names.end()) {
      for (Step& s : plan.steps)
        if (s.writes_binding == b.name) s.writes_binding = n->second;
      b.name = n->second;
    }
    inputs.push_back(std::move(b));
  }
  auto remap = [&](TensorRef& r) {
    if (r.buffer.kind != BufferKind::kInput) return;
    const int i = r.buffer.index;
    r.buffer = constant_of[i] >= 0 ? BufferId{BufferKind::kConstant, constant_of[i]}
                                   : BufferId{BufferKind::kInput, new_index[i]};
  };
  for (Step& s : plan.steps) {
    for (TensorSlot& t : s.tensors) remap(t.ref);
    for (TensorRef& o : s.outs) remap(o);
  }
  for (TensorRef& r : plan.output_refs) remap(r);
  for (RefreshItem& r : plan.refresh)
    if (r.kind == RefreshItem::Kind::kInput) r.index = new_index[r.index];
  for (SymExpr& e : plan.scalars)
    for (SymInstr& in : e.code)
      if (in.op == SymInstr::Op::kRead) in.a = new_index[in.a];
  for (Mutation& a : plan.aliased_io) a.input = new_index[a.input];
  for (int& i : plan.mutated_inputs) i = new_index[i];
  for (PreparedInput& p : prepared) {
    p.input = new_index[p.input];
    p.source = new_index[p.source];
  }
  plan.prepared = std::move(prepared);
  plan.inputs = std::move(inputs);
  return plan;
}

// `t` on the host, contiguous: what the program stores.
Tensor stored(const Tensor& t) {
  return (t.device().is_cpu() ? t : t.to_device(Device::cpu())).contiguous();
}

}  // namespace

std::shared_ptr<const Program> program_from_engine(std::shared_ptr<const Engine> engine,
                                                   const EngineProgramOptions& options) {
  const Plan& plan = engine->plan();
  std::map<int, EngineState> weights;
  std::map<int, std::string> names;
  std::vector<StateEntry> entries;
  for (const auto& [i, s] : options.state) {
    IP_CHECK(i >= 0 && i < static_cast<int>(plan.inputs.size()), kOutOfRange, "[program] engine '",
             engine->name(), "' has no input binding ", i, " (state '", s.name, "')");
    const Binding& b = plan.inputs[i];
    IP_CHECK(s.value.defined() && !s.value.is_meta(), kInvalidArgument, "[program] state '", s.name,
             "' (binding '", b.name, "') needs a value");
    IP_CHECK(s.value.shape() == b.shape && s.value.dtype() == b.dtype, kShapeMismatch,
             "[program] state '", s.name, "' is ", shape_str(s.value.shape()), " ",
             dtype_name(s.value.dtype()), " but binding '", b.name, "' of engine '", engine->name(),
             "' is ", shape_str(b.shape), " ", dtype_name(b.dtype));
    for (size_t j = 0; j < plan.inputs.size(); ++j)
      IP_CHECK(static_cast<int>(j) == i || options.state.count(static_cast<int>(j)) ||
                   plan.inputs[j].name != s.name,
               kInvalidArgument, "[program] state '", s.name, "' (binding '", b.name,
               "') has the name of input binding ", j, " of engine '", engine->name(), "'");
    if (can_be_weight(plan, i)) {
      weights[i] = {s.name, stored(s.value)};
      continue;
    }
    names[i] = s.name;
    entries.push_back({s.name, b.shape, b.dtype, stored(s.value), Ownership::kRuntime});
  }
  for (int i : options.caller_state) {
    IP_CHECK(i >= 0 && i < static_cast<int>(plan.inputs.size()), kOutOfRange, "[program] engine '",
             engine->name(), "' has no input binding ", i, " (caller-owned state)");
    IP_CHECK(!options.state.count(i), kInvalidArgument, "[program] binding '", plan.inputs[i].name,
             "' of engine '", engine->name(), "' is given a value and declared caller-owned");
  }
  auto is_caller_state = [&](int i) {
    return options.caller_state.count(i) ||
           (!options.state.count(i) &&
            std::count(plan.mutated_inputs.begin(), plan.mutated_inputs.end(), i));
  };
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    if (is_caller_state(static_cast<int>(i)))
      entries.push_back({plan.inputs[i].name, plan.inputs[i].shape, plan.inputs[i].dtype, Tensor(),
                         Ownership::kCaller});
  std::shared_ptr<const Engine> method = engine;
  if (!weights.empty() || !names.empty()) {
    Plan rewritten = with_weights(plan, weights, names);
    std::vector<Mutation> recorded = rewritten.aliased_io;
    method = Engine::from_plan(std::move(rewritten), engine->name(), recorded);
  }
  return Program::assemble(engine->name(), {std::move(method)}, {options.method},
                           StateTable(std::move(entries)), options.metadata);
}

}  // namespace inplace
