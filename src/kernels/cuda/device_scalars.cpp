#include "kernels/cuda/device_scalars.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"

namespace inplace::cuda {

namespace {

using Op = SymInstr::Op;

bool int_is(const Value& v, int64_t want) {
  return v.kind == Value::Kind::kInt && v.i == want;
}

// The deepest stack a program needs (programs are validated when the plan is built).
int stack_depth(const SymExpr& e) {
  int depth = 0, most = 0;
  for (const SymInstr& i : e.code) {
    switch (i.op) {
      case Op::kConst:
      case Op::kRead:
      case Op::kDim:
      case Op::kScalar:
        ++depth;
        break;
      case Op::kNeg:
        break;
      default:
        --depth;
    }
    most = std::max(most, depth);
  }
  return most;
}

bool full_slice(const Value& v) {
  return v.kind == Value::Kind::kSlice && v.items.size() == 3 && v.items[0].is_none() &&
         v.items[1].is_none() && (v.items[2].is_none() || int_is(v.items[2], 1));
}

// The dim a prefix view cuts and the path of its end, or -1: `slice(self, dim, None|0, end,
// None|1)`, or `self[:, ..., :end]` (getitem with a tuple of full slices and one `:end`).
int64_t prefix_dim(const Step& s, std::vector<int>* end_path) {
  const std::string& name = s.op->schema.name;
  if (name == "slice" && s.args.size() >= 4 && s.args[1].kind == Value::Kind::kInt) {
    if (!(s.args[2].is_none() || int_is(s.args[2], 0))) return -1;
    if (s.args.size() > 4 && !(s.args[4].is_none() || int_is(s.args[4], 1))) return -1;
    *end_path = {3};
    return s.args[1].i;
  }
  if (name != "getitem" || s.args.size() != 2 || !s.args[1].is_sequence()) return -1;
  const std::vector<Value>& items = s.args[1].items;
  int64_t dim = -1;
  for (size_t k = 0; k < items.size(); ++k) {
    if (full_slice(items[k])) continue;
    const Value& v = items[k];
    if (dim >= 0 || v.kind != Value::Kind::kSlice || v.items.size() != 3) return -1;
    if (!(v.items[0].is_none() || int_is(v.items[0], 0))) return -1;
    if (!(v.items[2].is_none() || int_is(v.items[2], 1))) return -1;
    dim = static_cast<int64_t>(k);
    *end_path = {1, static_cast<int>(k), 1};
  }
  return dim;
}

// A prefix view `cache[..., :end, :]` with only `end` a runtime scalar, over a value whose
// layout is fixed, along the keys' dim of attention (dim -2), so the kernel's key count is the
// view's extent. Returns the scalar, or -1.
int prefix_end_scalar(const Step& s) {
  if (s.kind != StepKind::kView || !s.op || s.ints.size() != 1) return -1;
  if (s.outs.size() != 1 || s.outs[0].dyn < 0) return -1;
  if (s.tensors.size() != 1 || s.tensors[0].path != std::vector<int>{0} ||
      s.tensors[0].ref.dyn >= 0)
    return -1;
  std::vector<int> end_path;
  int64_t dim = prefix_dim(s, &end_path);
  const int64_t rank = static_cast<int64_t>(s.tensors[0].ref.shape.size());
  if (dim < 0 && s.op->schema.name == "slice") dim += rank;
  if (rank < 2 || dim != rank - 2 || s.ints[0].path != end_path) return -1;
  return s.ints[0].scalar;
}

bool is_sdpa(const Step& s) {
  return s.kind == StepKind::kOut && s.op && s.op->schema.name == "scaled_dot_product_attention";
}

}  // namespace

DeviceScalarPlan plan_device_scalars(const Plan& plan) {
  DeviceScalarPlan d;
  d.step_extent.assign(plan.steps.size(), -1);
  auto refuse = [&](std::string why) {
    d.on_device = false;
    d.why_not = std::move(why);
    d.code.clear();
    d.prefix_ends.clear();
    d.step_extent.assign(plan.steps.size(), -1);
    return d;
  };
  if (plan.device.is_cpu()) return refuse("a cpu engine");
  if (plan.scalars.empty()) return refuse("no runtime scalars");
  // A step on the host reads the host's values of the runtime scalars and views.
  for (const Step& s : plan.steps)
    if (s.on_host) return refuse(str_cat("step '", s.node, "' runs on the host"));
  for (const RefreshItem& r : plan.refresh)
    if (r.kind == RefreshItem::Kind::kInput)
      return refuse(str_cat("input '", plan.inputs[r.index].name, "' has a dynamic size"));
  for (size_t k = 0; k < plan.scalars.size(); ++k) {
    for (const SymInstr& i : plan.scalars[k].code)
      if (i.op == Op::kDim)
        return refuse(str_cat("scalar ", plan.scalar_names[k], " reads a size"));
    if (stack_depth(plan.scalars[k]) > kDeviceScalarStackDepth)
      return refuse(str_cat("scalar ", plan.scalar_names[k], " is too deep"));
  }
  // Values whose extent changes per call: the prefix views, nothing else. Values computed from
  // them through attention's keys and values are dynamic in the plan (their refresh runs) but
  // the same at every call: attention's result has the queries' shape.
  std::set<int32_t> varying;
  std::map<int32_t, int> prefix_of;  // dyn -> scalar
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    const Step& s = plan.steps[q];
    const int e = prefix_end_scalar(s);
    if (e >= 0) {
      prefix_of[s.outs[0].dyn] = e;
      varying.insert(s.outs[0].dyn);
      d.prefix_ends.push_back(e);
      continue;
    }
    if (!s.ints.empty())
      return refuse(
          str_cat("step '", s.node, "' takes a runtime int (", s.op ? s.op->schema.name : "", ")"));
    int extent = -1;
    for (const TensorSlot& t : s.tensors) {
      if (t.ref.dyn < 0 || !varying.count(t.ref.dyn)) continue;
      auto it = prefix_of.find(t.ref.dyn);
      const bool kv = t.path.size() == 1 && (t.path[0] == 1 || t.path[0] == 2);
      if (it == prefix_of.end() || !is_sdpa(s) || !kv || (extent >= 0 && extent != it->second))
        return refuse(str_cat("step '", s.node, "' reads a value of per-call size"));
      extent = it->second;
    }
    if (extent < 0) continue;
    if (s.args.size() > 3 && !s.args[3].is_none())
      return refuse(str_cat("step '", s.node, "' has an attention mask"));
    d.step_extent[q] = extent;
  }
  for (const TensorRef& r : plan.output_refs)
    if (r.dyn >= 0 && varying.count(r.dyn)) return refuse("an output's size changes per call");
  d.code.push_back(static_cast<int64_t>(plan.scalars.size()));
  for (const SymExpr& e : plan.scalars) {
    d.code.push_back(static_cast<int64_t>(e.code.size()));
    for (const SymInstr& i : e.code) {
      d.code.push_back(static_cast<int64_t>(i.op));
      d.code.push_back(i.a);
      d.code.push_back(i.b);
    }
  }
  d.on_device = true;
  return d;
}

}  // namespace inplace::cuda
