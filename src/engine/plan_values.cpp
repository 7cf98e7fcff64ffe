#include "engine/plan_values.h"

#include <algorithm>
#include <set>

#include "backend/eager_call.h"
#include "core/value.h"
#include "engine/op_meta.h"
#include "ops/index_spec.h"

namespace inplace {

namespace {

using Op = SymInstr::Op;

SymRange dtype_range(DType t) {
  switch (t) {
    case DType::kBool:
      return {0, 1};
    case DType::kUInt8:
      return {0, 255};
    case DType::kInt8:
      return {-128, 127};
    case DType::kInt16:
      return {-32768, 32767};
    case DType::kInt32:
      return {INT32_MIN, INT32_MAX};
    default:
      return {};
  }
}

Shape max_shape(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return a;
  Shape r = a;
  for (size_t i = 0; i < r.size(); ++i) r[i] = std::max(a[i], b[i]);
  return r;
}

bool is_int_tensor(const Tensor& t) {
  return !is_floating(t.dtype());
}

// The slot whose path is exactly {arg}: the tensor passed as that argument.
int slot_of_arg(const CallInfo& ci, int arg) {
  for (size_t k = 0; k < ci.tensors.size(); ++k)
    if (ci.tensors[k].path == std::vector<int>{arg}) return static_cast<int>(k);
  return -1;
}

bool inside_slice(const Args& args, const std::vector<int>& path) {
  const Value* v = &args[path[0]];
  for (size_t k = 1; k < path.size(); ++k) {
    if (v->kind == Value::Kind::kSlice) return true;
    v = &v->items[path[k]];
  }
  return false;
}

std::string runtime_note(const CallInfo& ci) {
  std::set<std::string> names(ci.int_args.begin(), ci.int_args.end());
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "the runtime sizes of its operands" : s;
}

}  // namespace

BVal PlanValues::add_input(const std::string& name, const Tensor& example) {
  const int idx = static_cast<int>(st_.plan.inputs.size());
  Binding b;
  b.name = name;
  b.shape = example.shape();
  b.dtype = example.dtype();
  for (const DynamicDim& d : st_.options.dynamic_dims) {
    if (d.input != idx) continue;
    IP_CHECK(d.dim >= 0 && d.dim < static_cast<int64_t>(b.shape.size()), kInvalidArgument,
             "[compile] input '", name, "' ", shape_str(b.shape), " has no dim ", d.dim,
             " to declare dynamic");
    IP_CHECK(d.max >= example.size(d.dim), kInvalidArgument, "[compile] input '", name,
             "': dynamic dim ", d.dim, " has maximum ", d.max, " but the example has ",
             example.size(d.dim));
    b.shape[d.dim] = d.max;
    b.dynamic_dims.push_back(d.dim);
  }
  for (const ValueRange& r : st_.options.value_ranges) {
    if (r.input != idx) continue;
    IP_CHECK(!is_floating(b.dtype), kInvalidArgument, "[compile] input '", name,
             "': a value range needs an integer input, got ", dtype_name(b.dtype));
    IP_CHECK(r.lo <= r.hi, kInvalidArgument, "[compile] input '", name, "': empty value range [",
             r.lo, ", ", r.hi, "]");
    b.value_range = SymRange{r.lo, r.hi};
  }
  BVal v;
  v.v = Value::from_tensor(Tensor::meta(b.shape, b.dtype));
  v.buffer = {BufferKind::kInput, idx};
  v.bound = b.shape;
  if (!b.dynamic_dims.empty()) {
    v.dyn = b.dyn = new_dyn();
    v.shape_dyn = true;
    st_.plan.refresh.push_back({RefreshItem::Kind::kInput, idx});
  }
  st_.plan.inputs.push_back(std::move(b));
  example_inputs_.push_back(example);
  return v;
}

BVal PlanValues::constant(const Tensor& t, const std::string& name) {
  BufferId id{BufferKind::kConstant, static_cast<int32_t>(st_.plan.constants.size())};
  bool found = false;
  if (t.storage()) {
    auto it = constant_ids_.find(t.storage().get());
    if (it != constant_ids_.end()) id = it->second, found = true;
  } else {
    auto it = meta_constant_ids_.find(name);
    if (it != meta_constant_ids_.end()) id = it->second, found = true;
  }
  if (!found) {
    // The engine shares the graph's storage: nothing is copied.
    if (t.storage()) {
      int64_t n = static_cast<int64_t>(t.storage()->nbytes() / t.itemsize());
      st_.plan.constants.push_back(Tensor(t.storage(), 0, {n}, {1}, t.dtype()));
      constant_ids_[t.storage().get()] = id;
    } else {
      st_.plan.constants.push_back(Tensor::meta({t.offset() + t.numel()}, t.dtype()));
      meta_constant_ids_[name] = id;
    }
    st_.plan.constant_names.push_back(name);
  }
  BVal v;
  v.v = Value::from_tensor(Tensor::meta(t.shape(), t.dtype(), t.strides(), t.offset()));
  v.buffer = id;
  v.bound = t.shape();
  return v;
}

BVal PlanValues::literal(const Value& v) {
  if (v.is_tensor()) return constant(v.tensor, "literal");
  BVal b;
  b.v = v;
  return b;
}

TensorRef PlanValues::ref_of(const BVal& b) const {
  const Tensor& t = b.v.tensor;
  return TensorRef{b.buffer, t.offset(), t.shape(), t.strides(), t.dtype(), b.dyn};
}

int32_t PlanValues::new_scalar(SymExpr e, std::string name, SymRange range, int64_t example) {
  int32_t id = static_cast<int32_t>(st_.plan.scalars.size());
  st_.plan.scalars.push_back(std::move(e));
  st_.plan.scalar_names.push_back(std::move(name));
  st_.plan.refresh.push_back({RefreshItem::Kind::kScalar, id});
  examples_.push_back(std::clamp(example, range.lo, range.hi));
  ranges_.push_back(range);
  return id;
}

std::string PlanValues::scalar_name(const SymExpr& e) const {
  return sym_to_string(e, [&](const SymInstr& in) -> std::string {
    switch (in.op) {
      case Op::kRead: {
        const Binding& b = st_.plan.inputs[in.a];
        return numel_of(b.shape) == 1 ? b.name : str_cat(b.name, ".flat[", in.b, "]");
      }
      case Op::kDim:
        return str_cat("size(v", in.a, ", ", in.b, ")");
      case Op::kScalar:
        return st_.plan.scalar_names[in.a];
      default:
        return "?";
    }
  });
}

int32_t PlanValues::scalar_of(const BVal& b, const std::string& node, const std::string& arg) {
  if (b.sym >= 0) return b.sym;
  IP_CHECK(b.v.is_tensor(), kUnsupported, "[compile] node '", node, "': argument '", arg, "' is a ",
           b.v.kind_name(), " where an int is needed");
  const Tensor& t = b.v.tensor;
  IP_CHECK(t.numel() == 1 && is_int_tensor(t), kUnsupported, "[compile] node '", node,
           "': argument '", arg, "' uses a ", dtype_name(t.dtype()), " tensor of shape ",
           shape_str(t.shape()), " as an int");
  IP_CHECK(b.buffer.kind == BufferKind::kInput && b.dyn < 0, kUnsupported, "[compile] node '", node,
           "': argument '", arg,
           "' is the value of a tensor the program computes from data (not an integer input "
           "or integer arithmetic on one); an engine cannot know it before the call, so a size "
           "or offset may not depend on it");
  const int input = b.buffer.index;
  auto key = std::make_pair(input, t.offset());
  auto it = reads_.find(key);
  if (it != reads_.end()) return it->second;
  const Binding& binding = st_.plan.inputs[input];
  SymRange range = binding.value_range.value_or(dtype_range(binding.dtype));
  int64_t example = 0;
  const Tensor& ex = example_inputs_[input];
  if (!ex.is_meta() && t.offset() < ex.numel()) {
    // An example on another device (the Python package passes the caller's device tensors) is read
    // through a host copy of the one element, never through its device pointer.
    const Tensor host = ex.device().is_cpu() ? ex : ex.to_device(Device::cpu());
    example = host.reshape({-1}).select(0, t.offset()).item().to_int();
  }
  SymExpr e{{{Op::kRead, input, t.offset()}}};
  int32_t s = new_scalar(e, scalar_name(e), range, example);
  reads_[key] = s;
  return s;
}

Step PlanValues::step_of(const CallInfo& ci, StepKind kind) const {
  Step s;
  s.kind = kind;
  s.op = ci.op;
  s.node = ci.node->name;
  s.args = ci.args;
  s.tensors = ci.tensors;
  s.ints = ci.ints;
  return s;
}

BVal PlanValues::evaluate(CallInfo& ci) {
  const std::string& name = ci.op->schema.name;
  static const std::set<std::string> kMetadata = {"size", "sym_size", "dim", "numel", "sym_numel"};
  if (kMetadata.count(name)) return metadata_call(ci);
  if (name == "item" || name == "_local_scalar_dense") {
    IP_CHECK(!ci.inputs.empty(), kUnsupported, "[compile] node '", ci.node->name,
             "': item of a non-tensor");
    BVal r;
    r.sym = scalar_of(*ci.inputs[0], ci.node->name, "self");
    r.v = Value::integer(examples_[r.sym]);
    return r;
  }
  IP_CHECK(name != "tolist", kUnsupported, "[compile] node '", ci.node->name,
           "': tolist reads tensor data into Python values, which a compiled engine cannot do");
  BVal arith;
  if (scalar_arithmetic(ci, &arith)) return arith;
  auto fail = [&](const std::exception& e) -> BVal {
    throw Error(dynamic_cast<const Error*>(&e) ? static_cast<const Error&>(e).code()
                                               : ErrorCode::kInvalidArgument,
                str_cat("[compile] node '", ci.node->name, "': ", e.what()));
  };
  try {
    bool advanced = name == "getitem" && ci.args[0].is_tensor() &&
                    parse_index(ci.args[1], ci.args[0].tensor.dim(), "getitem").has_advanced();
    if (ci.op->kind == OpKind::kView && !advanced)
      return view_call(ci, view_metas(*ci.op, ci.args));
    if (ci.op->maybe_view && ci.op->infer && static_contiguous_view(ci))
      return view_call(ci, view_metas(*ci.op, ci.args));
    if (ci.op->infer) return compute_call(ci, infer_results(ci), StepKind::kOut);
    // Eager-only ops: casts (a view when nothing changes) and advanced indexing.
    Value result = eager_call(*ci.op, ci.args);
    // Their result is a view when it is the argument itself (type_as to the same dtype).
    int base = std::max(0, ci.op->schema.aliased_arg_of_return(0));
    if (result.is_tensor() && !advanced && ci.args[base].is_tensor()) {
      const Tensor& a = ci.args[base].tensor;
      const Tensor& r = result.tensor;
      if (r.dtype() == a.dtype() && r.shape() == a.shape() && r.strides() == a.strides() &&
          r.offset() == a.offset())
        return view_call(ci, result);
    }
    std::vector<Value> leaves;
    flatten_value(result, &leaves);
    std::vector<Tensor> metas;
    for (const Value& l : leaves) {
      IP_CHECK(l.is_tensor(), kUnsupported, "op '", ci.op->schema.full_name(), "' returns a ",
               l.kind_name(), "; compiled engines compute tensors");
      metas.push_back(Tensor::meta(l.tensor.shape(), l.tensor.dtype()));
    }
    return compute_call(ci, metas, StepKind::kEager);
  } catch (const Error& e) {
    if (std::string(e.what()).rfind("[compile]", 0) == 0) throw;
    return fail(e);
  }
}

std::vector<Tensor> PlanValues::infer_results(const CallInfo& ci) const {
  std::vector<Tensor> metas = result_metas(*ci.op, ci.args);
  bool numbers = false;
  Args read_as_two = number_operands_as(*ci.op, ci.args, 2, &numbers);
  if (!numbers) return metas;
  IP_CHECK(st_.options.device.is_cpu(), kUnsupported, "[compile] node '", ci.node->name, "': op '",
           ci.op->schema.full_name(),
           "' takes a tensor for a number, which its kernel reads on the host; an engine on ",
           st_.options.device.str(), " needs a Python number or an integer input there");
  // A tensor passed for a number is read by the kernel on every call: the results' shapes
  // and dtypes must be the same whatever it holds.
  std::vector<Tensor> other = ci.op->infer(read_as_two);
  bool same = other.size() == metas.size();
  for (size_t k = 0; same && k < metas.size(); ++k)
    same = other[k].shape() == metas[k].shape() && other[k].dtype() == metas[k].dtype();
  IP_CHECK(same, kUnsupported, "[compile] node '", ci.node->name, "': the shape of op '",
           ci.op->schema.full_name(),
           "' depends on the value of a tensor passed for a number, which an engine reads only "
           "when it runs; pass a Python number or an integer input");
  return metas;
}

BVal PlanValues::metadata_call(CallInfo& ci) {
  IP_CHECK(ci.ints.empty(), kUnsupported, "[compile] node '", ci.node->name,
           "': the size of a runtime dim is not supported");
  const BVal& b = *ci.inputs.at(0);
  Value r = eager_call(*ci.op, ci.args);
  if (b.dyn < 0) return literal(r);
  const std::string& name = ci.op->schema.name;
  const Tensor& t = b.v.tensor;
  auto dim_scalar = [&](int64_t d) {
    SymExpr e{{{Op::kDim, b.dyn, d}}};
    BVal s;
    s.sym = new_scalar(e, str_cat(ci.node->name, "[", d, "]"), {0, b.bound[d]}, t.size(d));
    s.v = Value::integer(t.size(d));
    return s;
  };
  if (name == "dim") return literal(r);
  if (r.kind == Value::Kind::kInt && (name == "size" || name == "sym_size"))
    return dim_scalar(wrap_dim(ci.args[1].as_int("dim"), t.dim(), "size"));
  if (r.is_sequence()) {
    BVal list;
    list.v = r;
    for (int64_t d = 0; d < t.dim(); ++d) list.items.push_back(dim_scalar(d));
    return list;
  }
  // numel: the product of the dims.
  SymExpr e;
  e.code.push_back({Op::kConst, 1});
  for (int64_t d = 0; d < t.dim(); ++d) {
    e.code.push_back({Op::kDim, b.dyn, d});
    e.code.push_back({Op::kMul});
  }
  BVal s;
  s.sym = new_scalar(e, ci.node->name, {0, numel_of(b.bound)}, t.numel());
  s.v = Value::integer(t.numel());
  return s;
}

// Integer arithmetic on runtime scalars (pos + 1, t % 4, n // 2) becomes a runtime scalar too;
// a tensor result is still computed by its step (the program may use it as data).
bool PlanValues::scalar_arithmetic(CallInfo& ci, BVal* out) {
  static const std::map<std::string, Op> kOps = {
      {"add", Op::kAdd},       {"sub", Op::kSub},
      {"mul", Op::kMul},       {"floor_divide", Op::kFloorDiv},
      {"remainder", Op::kMod}, {"neg", Op::kNeg},
      {"div", Op::kFloorDiv},  {"minimum", Op::kMin},
      {"maximum", Op::kMax},   {"rsub", Op::kSub}};
  const std::string& name = ci.op->schema.name;
  auto it = kOps.find(name);
  if (it == kOps.end()) return false;
  const Schema& sc = ci.op->schema;
  if (name == "div") {
    int rm = sc.index_of("rounding_mode");
    if (rm < 0 || ci.args[rm].kind != Value::Kind::kString || ci.args[rm].s != "floor")
      return false;
  }
  const int arity = it->second == Op::kNeg ? 1 : 2;
  if (static_cast<int>(ci.args.size()) < arity) return false;
  std::vector<SymInstr> operand_code[2];
  bool any_scalar = false;
  for (int a = 0; a < arity; ++a) {
    const Value& v = ci.args[a];
    if (v.is_tensor()) {
      int k = slot_of_arg(ci, a);
      if (k < 0 || ci.inputs[k]->v.tensor.numel() != 1 || !is_int_tensor(v.tensor)) return false;
      const BVal& b = *ci.inputs[k];
      if (b.sym < 0 && !(b.buffer.kind == BufferKind::kInput && b.dyn < 0)) return false;
      operand_code[a] = {{Op::kScalar, scalar_of(b, ci.node->name, sc.args[a].name)}};
      any_scalar = true;
    } else if (v.kind == Value::Kind::kInt || v.kind == Value::Kind::kBool) {
      int32_t s = -1;
      for (const IntSlot& slot : ci.ints)
        if (slot.path == std::vector<int>{a}) s = slot.scalar;
      if (s >= 0) {
        operand_code[a] = {{Op::kScalar, s}};
        any_scalar = true;
      } else {
        operand_code[a] = {{Op::kConst, v.kind == Value::Kind::kBool ? int64_t{v.b} : v.i}};
      }
    } else {
      return false;
    }
  }
  if (!any_scalar) return false;
  int alpha = sc.index_of("alpha");
  if (alpha >= 0 && !(ci.args[alpha].kind == Value::Kind::kInt && ci.args[alpha].i == 1)) {
    if (ci.args[alpha].kind != Value::Kind::kInt) return false;
    operand_code[1].push_back({Op::kConst, ci.args[alpha].i});
    operand_code[1].push_back({Op::kMul});
  }
  // The result must be an integer with one element.
  std::vector<Tensor> metas;
  bool tensor_result = !ci.tensors.empty();
  if (tensor_result) {
    metas = result_metas(*ci.op, ci.args);
    if (metas.size() != 1 || metas[0].numel() != 1 || !is_int_tensor(metas[0])) return false;
  }
  SymExpr e;
  int first = name == "rsub" ? 1 : 0;
  e.code = operand_code[first];
  if (arity == 2)
    e.code.insert(e.code.end(), operand_code[1 - first].begin(), operand_code[1 - first].end());
  e.code.push_back({it->second});
  auto leaf_range = [&](const SymInstr& in) { return ranges_[in.a]; };
  SymRange range = range_of(e, leaf_range);
  std::vector<int64_t> values(examples_);
  SymEnv env;
  env.scalars = &values;
  int64_t example = 0;
  try {
    example = eval_sym(e, env, ci.node->name);
  } catch (const Error&) {
  }
  int32_t s = new_scalar(e, scalar_name(e), range, example);
  if (tensor_result) {
    *out = compute_call(ci, metas, StepKind::kOut);
  } else {
    out->v = Value::integer(examples_[s]);
  }
  out->sym = s;
  return true;
}

// A reshape-like call (OpDef::maybe_view) whose self has a layout fixed for every call and
// whose result, seen in self's memory, is contiguous: the eager op returns a view there too,
// so the plan makes it one instead of a copy step (the transpose + reshape after attention at
// one token). Non-contiguous views are left as copies: kernels may want contiguous inputs.
bool PlanValues::static_contiguous_view(const CallInfo& ci) const {
  if (!ci.ints.empty() || ci.dyn_input || ci.inputs.size() != 1 || !ci.args[0].is_tensor())
    return false;
  const BVal& base = *ci.inputs[0];
  if (base.dyn >= 0 || base.shape_dyn) return false;
  std::vector<Tensor> metas = ci.op->infer(ci.args);
  if (metas.size() != 1) return false;
  const Tensor& self = ci.args[0].tensor;
  if (!self.can_view(metas[0].shape())) return false;
  return self.view(metas[0].shape()).is_contiguous();
}

BVal PlanValues::view_call(CallInfo& ci, const Value& result) {
  int base_arg = std::max(0, ci.op->schema.aliased_arg_of_return(0));
  int k = slot_of_arg(ci, base_arg);
  IP_ASSERT(k >= 0, "a view has a tensor base");
  const BVal& base = *ci.inputs[k];
  std::vector<Value> leaves;
  flatten_value(result, &leaves);
  if (leaves.empty() || !leaves[0].is_tensor()) return literal(result);  // x.dtype, x.shape
  // A view's layout follows its base and its int arguments; of the other tensors only the
  // shapes of expand_as / view_as / reshape_as's `other` take part.
  const std::string& name = ci.op->schema.name;
  bool other_shapes =
      name.size() > 3 && name.compare(name.size() - 3, 3, "_as") == 0 && name != "type_as";
  bool dynamic = base.dyn >= 0 || !ci.ints.empty() || (other_shapes && ci.dyn_input);
  bool other_shape_dyn = false;
  for (const BVal* in : ci.inputs) other_shape_dyn |= in != &base && in->shape_dyn;
  std::vector<Tensor> result_leaves;
  for (const Value& l : leaves)
    if (l.is_tensor()) result_leaves.push_back(l.tensor);
  const bool shape_dyn = base.shape_dyn || (other_shapes && other_shape_dyn) ||
                         (!ci.ints.empty() && output_depends_on_ints(ci, result_leaves, true));
  Step step = step_of(ci, StepKind::kView);
  std::vector<BVal> out;
  for (size_t i = 0; i < leaves.size(); ++i) {
    IP_CHECK(leaves[i].is_tensor(), kUnsupported, "[compile] node '", ci.node->name,
             "': a view returns a ", leaves[i].kind_name());
    BVal l;
    l.v = Value::from_tensor(leaves[i].tensor);
    l.buffer = base.buffer;
    l.bound = shape_dyn ? view_bound(ci, base, result, i) : leaves[i].tensor.shape();
    if (dynamic) l.dyn = new_dyn();
    l.shape_dyn = shape_dyn;
    if (base.sym >= 0 && leaves[i].tensor.numel() == 1) l.sym = base.sym;
    step.outs.push_back(ref_of(l));
    out.push_back(std::move(l));
  }
  if (dynamic) {
    st_.plan.refresh.push_back(
        {RefreshItem::Kind::kStep, static_cast<int32_t>(st_.plan.steps.size())});
    st_.plan.steps.push_back(std::move(step));
  }
  if (!result.is_sequence()) return out.at(0);
  BVal list;
  list.v = result;
  list.items = std::move(out);
  return list;
}

Args PlanValues::bound_args(const CallInfo& ci, bool view) const {
  Args args = ci.args;
  for (size_t k = 0; k < ci.tensors.size(); ++k) {
    const BVal& b = *ci.inputs[k];
    if (b.dyn >= 0)
      leaf_at(args, ci.tensors[k].path)->tensor = Tensor::meta(b.bound, b.v.tensor.dtype());
  }
  const std::string& op = ci.op->schema.name;
  // The extent of the dim the op works along, for values bounded by it (topk's k, a length).
  auto dim_extent = [&]() -> std::optional<int64_t> {
    int d = ci.op->schema.index_of("dim");
    int self = slot_of_arg(ci, 0);
    if (self < 0) return std::nullopt;
    const Shape& s = ci.inputs[self]->bound;
    int64_t dim = d >= 0 && ci.args[d].kind == Value::Kind::kInt ? ci.args[d].i : -1;
    if (s.empty()) return std::nullopt;
    return s[wrap_dim(dim, static_cast<int64_t>(s.size()), op.c_str())];
  };
  for (size_t k = 0; k < ci.ints.size(); ++k) {
    const std::string& arg = ci.int_args[k];
    const SymRange r = ranges_[ci.ints[k].scalar];
    Value* leaf = leaf_at(args, ci.ints[k].path);
    if (view) {
      if (inside_slice(ci.args, ci.ints[k].path) ||
          (op == "slice" && (arg == "start" || arg == "end"))) {
        *leaf = Value::none();  // the widest slice
        continue;
      }
      if (arg == "index" || arg == "start" || op == "getitem") {
        *leaf = Value::integer(0);  // positions move a view, they do not size it
        continue;
      }
    }
    if ((op == "topk" && arg == "k") || arg == "length" || arg == "split_size") {
      if (auto e = dim_extent()) {
        *leaf = Value::integer(r.bounded_above() ? std::min(r.hi, *e) : *e);
        continue;
      }
    }
    if (arg == "start" && r.lo != INT64_MIN) {
      *leaf = Value::integer(r.lo);
      continue;
    }
    IP_CHECK(r.bounded_above(), kUnsupported, "argument '", arg,
             "' = ", st_.plan.scalar_names[ci.ints[k].scalar],
             " has no upper bound; declare the input's range (--value-range INPUT:LO:HI) or "
             "clamp it in the program");
    *leaf = Value::integer(r.hi);
  }
  return args;
}

Shape PlanValues::view_bound(const CallInfo& ci, const BVal& base, const Value& result,
                             size_t leaf) {
  std::vector<Value> leaves;
  flatten_value(result, &leaves);
  const Shape& shape = leaves[leaf].tensor.shape();
  static const std::set<std::string> kDimOps = {"transpose", "swapaxes", "swapdims", "movedim",
                                                "permute",   "t",        "diagonal"};
  // expand_as(self, other) takes other's shape: its bound is other's (eager's own check that
  // self broadcasts to it runs in the refresh on every call).
  if (ci.op->schema.name == "expand_as") {
    int other = slot_of_arg(ci, 1);
    if (other >= 0 && ci.inputs[other]->bound.size() == shape.size())
      return ci.inputs[other]->bound;
  }
  if (!ci.ints.empty() && kDimOps.count(ci.op->schema.name)) {
    int64_t m = base.bound.empty() ? 1 : *std::max_element(base.bound.begin(), base.bound.end());
    return Shape(shape.size(), m);
  }
  try {
    std::vector<Value> bl;
    flatten_value(view_metas(*ci.op, bound_args(ci, true)), &bl);
    if (leaf < bl.size() && bl[leaf].is_tensor()) return max_shape(bl[leaf].tensor.shape(), shape);
    if (shape.size() == base.bound.size()) return max_shape(base.bound, shape);
  } catch (const Error& e) {
    IP_FAIL(kUnsupported, "[compile] node '", ci.node->name, "': the size of this view depends on ",
            runtime_note(ci), " and no bound can be derived: ", e.what());
  }
  IP_FAIL(kUnsupported, "[compile] node '", ci.node->name, "': the size of this view depends on ",
          runtime_note(ci), " and no bound can be derived");
}

// Probes the op's shape function at other values of its runtime ints. Conservative for the
// plan: a shape judged fixed is still checked on every call by the refresh.
bool PlanValues::output_depends_on_ints(const CallInfo& ci, const std::vector<Tensor>& metas,
                                        bool view) {
  for (int64_t delta : {1, 2, -1, 7, -3}) {
    Args args = ci.args;
    for (const IntSlot& s : ci.ints) leaf_at(args, s.path)->i += delta;
    try {
      std::vector<Tensor> probe;
      if (view) {
        std::vector<Value> leaves;
        flatten_value(view_metas(*ci.op, args), &leaves);
        for (const Value& l : leaves)
          if (l.is_tensor()) probe.push_back(l.tensor);
      } else {
        probe = result_metas(*ci.op, args);
      }
      if (probe.size() != metas.size()) return true;
      for (size_t k = 0; k < probe.size(); ++k)
        if (probe[k].shape() != metas[k].shape()) return true;
    } catch (const std::exception&) {
    }
  }
  return false;
}

// Conservative like the probe of ints: the extents tried are the bound and one either side of
// the example along every dim where they differ; any probe that changes a result's shape, or no
// probe that runs, keeps the results dynamic.
bool PlanValues::output_depends_on_shapes(const CallInfo& ci, const std::vector<Tensor>& metas) {
  bool varies = false;  // some dynamic input's bound differs from its example
  for (const BVal* in : ci.inputs)
    if (in->shape_dyn) varies |= in->bound != in->v.tensor.shape();
  if (!varies) return true;
  int ran = 0;
  for (int64_t delta : {0, 1, -1}) {
    Args args = ci.args;
    for (size_t k = 0; k < ci.tensors.size(); ++k) {
      const BVal& b = *ci.inputs[k];
      if (!b.shape_dyn) continue;
      const Shape& ex = b.v.tensor.shape();
      Shape probe = b.bound;
      if (delta != 0 && probe.size() == ex.size())
        for (size_t d = 0; d < probe.size(); ++d)
          probe[d] = probe[d] == ex[d] ? ex[d] : std::max<int64_t>(1, ex[d] + delta);
      leaf_at(args, ci.tensors[k].path)->tensor = Tensor::meta(probe, b.v.tensor.dtype());
    }
    try {
      std::vector<Tensor> probe = result_metas(*ci.op, args);
      if (probe.size() != metas.size()) return true;
      for (size_t k = 0; k < probe.size(); ++k)
        if (probe[k].shape() != metas[k].shape()) return true;
      ++ran;
    } catch (const std::exception&) {
      if (delta == 0) return true;
    }
  }
  return ran == 0;
}

std::vector<Tensor> PlanValues::compute_bounds(const CallInfo& ci,
                                               const std::vector<Tensor>& metas) {
  std::vector<Tensor> bounds;
  try {
    bounds = result_metas(*ci.op, bound_args(ci, false));
  } catch (const Error& e) {
    IP_FAIL(kUnsupported, "[compile] node '", ci.node->name, "': op '", ci.op->schema.full_name(),
            "' has a result whose size depends on runtime values",
            ci.ints.empty() ? std::string() : " (" + runtime_note(ci) + ")",
            " and no bound can be derived: ", e.what());
  }
  IP_CHECK(bounds.size() == metas.size(), kUnsupported, "[compile] node '", ci.node->name,
           "': its number of results depends on runtime values");
  for (size_t k = 0; k < bounds.size(); ++k)
    bounds[k] = Tensor::meta(max_shape(bounds[k].shape(), metas[k].shape()), metas[k].dtype());
  return bounds;
}

BVal PlanValues::compute_call(CallInfo& ci, std::vector<Tensor> metas, StepKind kind) {
  const bool dynamic = ci.dyn_input || !ci.ints.empty();
  // Scatter-like ops return self's shape whatever they write.
  int self = slot_of_arg(ci, 0);
  bool self_shaped = writes_over_self(ci.op) && self >= 0;
  bool shape_dyn_input = false;
  for (size_t k = 0; k < ci.inputs.size(); ++k)
    if (!self_shaped || static_cast<int>(k) == self) shape_dyn_input |= ci.inputs[k]->shape_dyn;
  // A result whose shape stays put whatever the dynamic extents are is planned static, so what
  // reads it needs no refresh (the step itself is still refreshed and its shape checked).
  const bool dyn_out = (shape_dyn_input && output_depends_on_shapes(ci, metas)) ||
                       (!ci.ints.empty() && output_depends_on_ints(ci, metas, false));
  std::vector<Tensor> bounds = dyn_out ? compute_bounds(ci, metas) : metas;
  Step step = step_of(ci, kind);
  const int step_index = static_cast<int>(st_.plan.steps.size());
  std::vector<BVal> out;
  for (size_t k = 0; k < metas.size(); ++k) {
    const Tensor& m = metas[k];
    const Shape& bshape = bounds[k].shape();
    ValueBuffer vb;
    IP_CHECK(!__builtin_mul_overflow(numel_of(bshape), static_cast<int64_t>(dtype_size(m.dtype())),
                                     &vb.nbytes),
             kUnsupported, "[compile] node '", ci.node->name, "': a result of shape ",
             shape_str(bshape), " ", dtype_name(m.dtype()), " has more bytes than 64 bits count");
    vb.producer = step_index;
    BVal l;
    l.v = Value::from_tensor(Tensor::meta(m.shape(), m.dtype()));
    l.buffer = {BufferKind::kArena, static_cast<int32_t>(st_.values.size())};
    l.bound = bshape;
    if (dyn_out) l.dyn = new_dyn();
    l.shape_dyn = dyn_out;
    st_.values.push_back(vb);
    step.outs.push_back(
        TensorRef{l.buffer, 0, bshape, contiguous_strides(bshape), m.dtype(), l.dyn});
    out.push_back(std::move(l));
  }
  if (dynamic)
    st_.plan.refresh.push_back({RefreshItem::Kind::kStep, static_cast<int32_t>(step_index)});
  st_.plan.steps.push_back(std::move(step));
  if (out.size() == 1 && !(ci.op->schema.returns.size() == 1 &&
                           ci.op->schema.returns[0].type.rfind("Tensor[]", 0) == 0))
    return out[0];
  BVal list;
  std::vector<Tensor> ms;
  for (const BVal& l : out) ms.push_back(l.v.tensor);
  list.v = pack_results(ci.op->schema, ms);
  list.items = std::move(out);
  return list;
}

void PlanValues::add_output(const BVal& b, size_t j) {
  Plan& plan = st_.plan;
  if (b.v.is_tensor()) {
    plan.output_refs.push_back(ref_of(b));
    Binding out;
    out.name = str_cat("output.", j);
    out.shape = b.dyn >= 0 ? b.bound : b.v.tensor.shape();
    out.dtype = b.v.tensor.dtype();
    plan.outputs.push_back(std::move(out));
    return;
  }
  IP_CHECK(b.v.is_number(), kUnsupported, "[compile] output ", j, " is a ", b.v.kind_name(),
           "; engine outputs are tensors and numbers");
  if (b.sym >= 0) {
    // A runtime int: a 0-dim int64 tensor filled on every call.
    CallInfo ci;
    Node fake;
    fake.name = str_cat("output.", j);
    ci.node = &fake;
    ResolvedCall rc = resolve_call("full", {Value::list({}), Value::integer(examples_[b.sym])},
                                   {{"dtype", Value::dtype_value(DType::kInt64)}}, fake.name);
    ci.op = rc.op;
    ci.args = std::move(rc.args);
    ci.ints.push_back({{1}, b.sym});
    ci.int_args.push_back("fill_value");
    BVal t = compute_call(ci, ci.op->infer(ci.args), StepKind::kOut);
    add_output(t, j);
    return;
  }
  Scalar s = b.v.as_scalar("output");
  add_output(constant(Tensor::scalar(s, s.is_float() ? DType::kFloat64 : s.default_dtype()),
                      str_cat("output.", j)),
             j);
}

}  // namespace inplace
