#include "engine/engine.h"

#include <algorithm>
#include <sstream>

#include "engine/write_set.h"

namespace inplace {

std::optional<int> Engine::aliased_input(int output) const {
  for (const Mutation& a : plan_.aliased_io)
    if (a.output == output) return a.input;
  return std::nullopt;
}

bool Engine::input_is_aliased(int input) const {
  for (const Mutation& a : plan_.aliased_io)
    if (a.input == input) return true;
  return false;
}

int Engine::input_index(const std::string& n) const {
  for (size_t i = 0; i < caller_inputs_.size(); ++i)
    if (caller_inputs_[i].name == n) return static_cast<int>(i);
  std::string names;
  for (const Binding& b : caller_inputs_) names += (names.empty() ? "'" : ", '") + b.name + "'";
  IP_FAIL(kNotFound, "[engine] engine '", name_, "' has no input binding named '", n,
          "'; its inputs are ", names.empty() ? std::string("(none)") : names);
}

int64_t Engine::weight_bytes() const {
  int64_t n = 0;
  for (const Tensor& t : plan_.constants) n += static_cast<int64_t>(t.nbytes());
  return n;
}

std::vector<Mutation> derive_aliased_io(const Plan& plan) {
  std::vector<Mutation> out;
  for (size_t j = 0; j < plan.output_refs.size(); ++j) {
    const TensorRef& r = plan.output_refs[j];
    if (r.buffer.kind != BufferKind::kInput) continue;
    const Binding& in = plan.inputs[r.buffer.index];
    if (r.offset != 0 || r.shape != in.shape || r.dtype != in.dtype) continue;
    const Step* writer = nullptr;
    for (const Step& s : plan.steps)
      for (const TensorRef& o : s.outs)
        if (o.buffer == r.buffer) writer = &s;
    if (!writer) continue;
    MutationKind kind = writer->op && writer->op->has_tag(kCacheUpdate)
                            ? MutationKind::kKvCacheUpdate
                            : MutationKind::kUser;
    out.push_back({static_cast<int>(j), r.buffer.index, kind});
  }
  return out;
}

std::vector<Mutation> reconcile_aliased_io(const std::vector<Mutation>& derived,
                                           const std::vector<Mutation>& recorded) {
  std::vector<Mutation> out;
  for (const Mutation& d : derived)
    if (d.kind == MutationKind::kKvCacheUpdate) out.push_back(d);
  auto has_output = [&](int o) {
    return std::any_of(out.begin(), out.end(), [&](const Mutation& a) { return a.output == o; });
  };
  for (const Mutation& r : recorded)
    if (!has_output(r.output)) out.push_back({r.output, r.input, MutationKind::kUser});
  // Derived user entries are not added: a copy-back engine's write-back looks like one, and
  // only the stored map can tell a user alias from a copy-back (TensorRT cannot report them).
  std::sort(out.begin(), out.end(),
            [](const Mutation& a, const Mutation& b) { return a.output < b.output; });
  return out;
}

namespace {
void check_ref(const Plan& plan, const TensorRef& r, const std::string& where) {
  const int i = r.buffer.index;
  int64_t limit = 0;
  switch (r.buffer.kind) {
    case BufferKind::kInput:
      IP_CHECK(i >= 0 && i < static_cast<int>(plan.inputs.size()), kCorrupt, "[plan] ", where,
               " refers to missing input binding ", i);
      limit =
          numel_of(plan.inputs[i].shape) * static_cast<int64_t>(dtype_size(plan.inputs[i].dtype));
      break;
    case BufferKind::kOutput:
      IP_CHECK(i >= 0 && i < static_cast<int>(plan.output_buffer_bytes.size()), kCorrupt, "[plan] ",
               where, " refers to missing output buffer ", i);
      limit = plan.output_buffer_bytes[i];
      break;
    case BufferKind::kArena:
      IP_CHECK(i >= 0 && i < static_cast<int>(plan.arena.size()), kCorrupt, "[plan] ", where,
               " refers to missing arena buffer ", i);
      limit = plan.arena[i].nbytes;
      IP_CHECK(plan.arena[i].offset_bytes >= 0 &&
                   plan.arena[i].offset_bytes + plan.arena[i].nbytes <= plan.arena_bytes,
               kCorrupt, "[plan] arena buffer ", i, " lies outside the arena");
      break;
    case BufferKind::kConstant:
      IP_CHECK(i >= 0 && i < static_cast<int>(plan.constants.size()), kCorrupt, "[plan] ", where,
               " refers to missing constant ", i);
      limit = static_cast<int64_t>(plan.constants[i].nbytes());
      break;
  }
  IP_CHECK(r.shape.size() == r.strides.size(), kCorrupt, "[plan] ", where,
           " has shape and strides of different rank");
  if (numel_of(r.shape) == 0) return;
  int64_t last = r.offset;
  for (size_t d = 0; d < r.shape.size(); ++d) {
    IP_CHECK(r.shape[d] >= 0 && r.strides[d] >= 0, kCorrupt, "[plan] ", where,
             " has a negative size or stride");
    last += (r.shape[d] - 1) * r.strides[d];
  }
  IP_CHECK(r.offset >= 0 && (last + 1) * static_cast<int64_t>(dtype_size(r.dtype)) <= limit,
           kCorrupt, "[plan] ", where, " reaches past its ", buffer_kind_name(r.buffer.kind),
           " buffer ", i, " of ", limit, " bytes");
}
}  // namespace

// Runtime values: every dynamic value and scalar is computed by the refresh before it is used,
// and every step that uses one is refreshed.
void validate_runtime_values(const Plan& plan) {
  const int64_t nin = static_cast<int64_t>(plan.inputs.size());
  std::vector<char> dyn_defined(plan.num_dyn, 0), scalar_done(plan.scalars.size(), 0),
      step_refreshed(plan.steps.size(), 0);
  IP_CHECK(plan.scalar_names.size() == plan.scalars.size(), kCorrupt, "[plan] ",
           plan.scalar_names.size(), " scalar names for ", plan.scalars.size(), " scalars");
  auto define = [&](int32_t dyn, const std::string& where) {
    IP_CHECK(dyn >= 0 && dyn < plan.num_dyn && !dyn_defined[dyn], kCorrupt, "[plan] ", where,
             " defines dynamic value ", dyn, " which is out of range or defined twice");
    dyn_defined[dyn] = 1;
  };
  auto use = [&](int32_t dyn, const std::string& where) {
    IP_CHECK(dyn < 0 || (dyn < plan.num_dyn && dyn_defined[dyn]), kCorrupt, "[plan] ", where,
             " uses dynamic value ", dyn, " before the refresh computes it");
  };
  for (const Binding& b : plan.inputs)
    IP_CHECK((b.dyn >= 0) == !b.dynamic_dims.empty() && b.dyn < plan.num_dyn, kCorrupt,
             "[plan] input '", b.name, "' has an inconsistent dynamic value");
  for (const RefreshItem& it : plan.refresh) {
    switch (it.kind) {
      case RefreshItem::Kind::kInput:
        IP_CHECK(it.index >= 0 && it.index < nin && plan.inputs[it.index].dyn >= 0, kCorrupt,
                 "[plan] refresh names input ", it.index, ", which is not dynamic");
        define(plan.inputs[it.index].dyn, "input '" + plan.inputs[it.index].name + "'");
        break;
      case RefreshItem::Kind::kScalar: {
        IP_CHECK(it.index >= 0 && it.index < static_cast<int>(plan.scalars.size()) &&
                     !scalar_done[it.index],
                 kCorrupt, "[plan] refresh names scalar ", it.index, " out of range or twice");
        const SymExpr& e = plan.scalars[it.index];
        std::string where = str_cat("scalar ", it.index);
        validate_sym(e, it.index, nin, plan.num_dyn, where);
        for (const SymInstr& in : e.code) {
          if (in.op == SymInstr::Op::kDim) use(static_cast<int32_t>(in.a), where);
          IP_CHECK(in.op != SymInstr::Op::kScalar || scalar_done[in.a], kCorrupt, "[plan] ", where,
                   " reads scalar ", in.a, " before it is computed");
        }
        scalar_done[it.index] = 1;
        break;
      }
      case RefreshItem::Kind::kStep: {
        IP_CHECK(it.index >= 0 && it.index < static_cast<int>(plan.steps.size()) &&
                     !step_refreshed[it.index],
                 kCorrupt, "[plan] refresh names step ", it.index, " out of range or twice");
        const Step& s = plan.steps[it.index];
        std::string where = "step '" + s.node + "'";
        for (const TensorSlot& t : s.tensors) use(t.ref.dyn, where);
        for (const IntSlot& i : s.ints)
          IP_CHECK(i.scalar >= 0 && i.scalar < static_cast<int>(plan.scalars.size()) &&
                       scalar_done[i.scalar],
                   kCorrupt, "[plan] ", where, " uses scalar ", i.scalar, " before it is computed");
        for (const TensorRef& o : s.outs) {
          IP_CHECK(s.kind != StepKind::kView || o.dyn >= 0, kCorrupt, "[plan] view ", where,
                   " has a static result");
          if (o.dyn >= 0) define(o.dyn, where);
        }
        step_refreshed[it.index] = 1;
        break;
      }
    }
  }
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    const Step& s = plan.steps[q];
    if (step_refreshed[q]) continue;
    bool dynamic = !s.ints.empty() || s.kind == StepKind::kView;
    for (const TensorSlot& t : s.tensors) dynamic |= t.ref.dyn >= 0;
    for (const TensorRef& o : s.outs) dynamic |= o.dyn >= 0;
    IP_CHECK(!dynamic, kCorrupt, "[plan] step '", s.node,
             "' uses runtime values but the refresh does not compute them");
  }
  for (const TensorRef& r : plan.output_refs) use(r.dyn, "an output");
  for (size_t k = 0; k < plan.scalars.size(); ++k)
    IP_CHECK(scalar_done[k], kCorrupt, "[plan] scalar ", k, " is never computed");
}

// Prepared bindings: the last bindings, each made from a caller binding the plan never writes,
// of that binding's dtype and permuted shape, static, and never written by a step.
void validate_prepared(const Plan& plan) {
  const int n = static_cast<int>(plan.inputs.size());
  IP_CHECK(plan.prepared.size() <= plan.inputs.size(), kCorrupt, "[plan] ", plan.prepared.size(),
           " prepared bindings for ", n, " bindings");
  const int first = plan.caller_inputs();
  for (size_t k = 0; k < plan.prepared.size(); ++k) {
    const PreparedInput& p = plan.prepared[k];
    IP_CHECK(p.input == first + static_cast<int>(k), kCorrupt, "[plan] prepared binding ", k,
             " is binding ", p.input, "; prepared bindings follow the caller's, in order");
    IP_CHECK(p.source >= 0 && p.source < first, kCorrupt, "[plan] prepared binding '",
             plan.inputs[p.input].name, "' is made from binding ", p.source,
             ", which is no caller binding");
    const Binding &in = plan.inputs[p.input], &src = plan.inputs[p.source];
    IP_CHECK(in.dtype == src.dtype && in.dynamic_dims.empty() && src.dynamic_dims.empty() &&
                 p.perm.size() == src.shape.size() && in.shape.size() == src.shape.size(),
             kCorrupt, "[plan] prepared binding '", in.name, "' does not match its source '",
             src.name, "'");
    std::vector<char> seen(p.perm.size(), 0);
    for (size_t d = 0; d < p.perm.size(); ++d) {
      const int64_t s = p.perm[d];
      IP_CHECK(s >= 0 && s < static_cast<int64_t>(p.perm.size()) && !seen[s] &&
                   in.shape[d] == src.shape[s],
               kCorrupt, "[plan] prepared binding '", in.name, "' is no permutation of '", src.name,
               "'");
      seen[s] = 1;
    }
    for (int i : plan.mutated_inputs)
      IP_CHECK(i != p.input && i != p.source, kCorrupt, "[plan] prepared binding '", in.name,
               "' or its source '", src.name, "' is written by the engine");
  }
}

void validate_plan(const Plan& plan) {
  validate_runtime_values(plan);
  validate_prepared(plan);
  for (const Step& s : plan.steps) {
    IP_CHECK(s.kind == StepKind::kCopy || s.op != nullptr, kCorrupt, "[plan] step '", s.node,
             "' has no op");
    IP_CHECK(s.kind != StepKind::kOut || s.op->infer != nullptr, kCorrupt, "[plan] step '", s.node,
             "' needs an out kernel that op '", s.op ? s.op->schema.full_name() : "?",
             "' does not have");
    IP_CHECK(s.kind != StepKind::kCopy || (s.tensors.size() == 1 && s.outs.size() == 1), kCorrupt,
             "[plan] copy step '", s.node, "' needs one source and one destination");
    for (const TensorSlot& t : s.tensors) {
      check_ref(plan, t.ref, "step '" + s.node + "' operand");
      IP_CHECK(!t.path.empty() && t.path[0] >= 0 && t.path[0] < static_cast<int>(s.args.size()),
               kCorrupt, "[plan] step '", s.node, "' has an operand outside its arguments");
    }
    for (const TensorRef& o : s.outs) {
      check_ref(plan, o, "step '" + s.node + "' result");
      IP_CHECK(s.kind == StepKind::kView || o.buffer.kind != BufferKind::kConstant, kCorrupt,
               "[plan] step '", s.node, "' writes a constant");
    }
  }
  IP_CHECK(plan.output_refs.size() == plan.outputs.size(), kCorrupt, "[plan] ",
           plan.output_refs.size(), " output refs for ", plan.outputs.size(), " outputs");
  for (size_t j = 0; j < plan.output_refs.size(); ++j)
    check_ref(plan, plan.output_refs[j], str_cat("output ", j));
  IP_CHECK(plan.original_output_count >= 0 &&
               plan.original_output_count <= static_cast<int>(plan.outputs.size()),
           kCorrupt, "[plan] original output count ", plan.original_output_count, " exceeds ",
           plan.outputs.size(), " outputs");
}

std::shared_ptr<const Engine> Engine::from_plan(Plan plan, std::string name,
                                                const std::vector<Mutation>& recorded,
                                                DeviceWeights* device_weights) {
  validate_plan(plan);
  plan.aliased_io = reconcile_aliased_io(derive_aliased_io(plan), recorded);
  check_write_set(plan);
  return std::shared_ptr<const Engine>(
      new Engine(std::move(plan), std::move(name), device_weights));
}

namespace {
std::string ref_str(const TensorRef& r) {
  std::ostringstream os;
  os << buffer_kind_name(r.buffer.kind) << r.buffer.index;
  if (r.offset) os << "+" << r.offset;
  os << shape_str(r.shape) << ":" << dtype_name(r.dtype);
  if (r.strides != contiguous_strides(r.shape)) os << "/strides" << shape_str(r.strides);
  if (r.dyn >= 0) os << "~v" << r.dyn;
  return os.str();
}

std::string binding_str(const Binding& b) {
  std::ostringstream os;
  os << b.name << " [";
  for (size_t d = 0; d < b.shape.size(); ++d) {
    bool dynamic = std::find(b.dynamic_dims.begin(), b.dynamic_dims.end(),
                             static_cast<int64_t>(d)) != b.dynamic_dims.end();
    os << (d ? "," : "") << (dynamic ? "<=" : "") << b.shape[d];
  }
  os << "] " << dtype_name(b.dtype);
  if (b.value_range) os << " in [" << b.value_range->lo << ", " << b.value_range->hi << "]";
  return os.str();
}
}  // namespace

std::string Engine::describe() const {
  std::ostringstream os;
  os << "engine " << name_ << "\n";
  os << "inputs:\n";
  for (int i = 0; i < plan_.caller_inputs(); ++i)
    os << "  [" << i << "] " << binding_str(plan_.inputs[i]) << "\n";
  if (!plan_.prepared.empty()) {
    os << "prepared inputs (made from an input when it is bound):\n";
    for (const PreparedInput& p : plan_.prepared) {
      os << "  [" << p.input << "] " << binding_str(plan_.inputs[p.input]) << " = permute("
         << plan_.inputs[p.source].name << ", [";
      for (size_t d = 0; d < p.perm.size(); ++d) os << (d ? ", " : "") << p.perm[d];
      os << "])\n";
    }
  }
  os << "outputs (" << plan_.original_output_count << " user):\n";
  for (size_t j = 0; j < plan_.outputs.size(); ++j)
    os << "  [" << j << "] " << plan_.outputs[j].name << " " << shape_str(plan_.outputs[j].shape)
       << " " << dtype_name(plan_.outputs[j].dtype)
       << (plan_.output_refs[j].dyn >= 0 ? " (size per call, at most this)" : "") << " = "
       << ref_str(plan_.output_refs[j]) << "\n";
  os << "aliased_io:";
  if (plan_.aliased_io.empty()) os << " none";
  os << "\n";
  for (const Mutation& a : plan_.aliased_io)
    os << "  output " << a.output << " -> input " << a.input << " (" << plan_.inputs[a.input].name
       << ") kind=" << mutation_kind_name(a.kind) << "\n";
  os << "mutated_inputs:";
  if (plan_.mutated_inputs.empty()) os << " none";
  for (int i : plan_.mutated_inputs) os << " " << plan_.inputs[i].name;
  os << "\n";
  if (!plan_.refresh.empty()) {
    os << "runtime values (computed per call before the first kernel):\n";
    for (const RefreshItem& it : plan_.refresh) {
      if (it.kind == RefreshItem::Kind::kScalar)
        os << "  s" << it.index << " = " << plan_.scalar_names[it.index] << "\n";
      else if (it.kind == RefreshItem::Kind::kInput)
        os << "  v" << plan_.inputs[it.index].dyn << " = shape of input '"
           << plan_.inputs[it.index].name << "'\n";
      else
        os << "  step " << it.index << " (" << plan_.steps[it.index].node << ")\n";
    }
  }
  os << "steps:\n";
  for (size_t q = 0; q < plan_.steps.size(); ++q) {
    const Step& s = plan_.steps[q];
    os << "  " << q << ": " << s.node << " = "
       << (s.kind == StepKind::kCopy ? "copy" : s.op->schema.full_name())
       << (s.kind == StepKind::kEager ? " [eager]" : "")
       << (s.kind == StepKind::kView ? " [view, refresh only]" : "")
       << (s.on_host ? " [on the host]" : "") << "(";
    for (size_t k = 0; k < s.tensors.size(); ++k)
      os << (k ? ", " : "") << ref_str(s.tensors[k].ref);
    os << ") -> ";
    for (size_t k = 0; k < s.outs.size(); ++k) os << (k ? ", " : "") << ref_str(s.outs[k]);
    for (const IntSlot& i : s.ints) os << "  [" << plan_.scalar_names[i.scalar] << "]";
    if (!s.writes_binding.empty()) os << "  (in place: " << s.writes_binding << ")";
    os << "\n";
  }
  if (!host_steps_.empty()) {
    os << "steps on the host:\n" << describe_host_steps(plan_, host_steps_, "  ");
  }
  os << "arena_bytes: " << plan_.arena_bytes << " (" << plan_.arena.size() << " buffers)\n";
  os << "weight_bytes: " << weight_bytes() << "\n";
  return os.str();
}

}  // namespace inplace
