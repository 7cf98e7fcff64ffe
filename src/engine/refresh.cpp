// The refresh: everything a call's runtime values change, worked out before the first kernel
// runs, so that a call the values make invalid is refused with every caller tensor untouched.
// Runtime scalars are evaluated from the bound inputs; views and results whose size or offset
// depends on them are recomputed by the ops' own view and shape functions (the same code eager
// runs, so an index eager accepts is accepted and one it refuses is refused with its message);
// then the kernels' operands are pointed at this call's extents.
#include "core/device_allocator.h"
#include "core/value.h"
#include "engine/execution_context.h"
#include "engine/op_meta.h"
#include "engine/refresh_slice.h"
#include "ops/kv_cache_args.h"

namespace inplace {

namespace {

// The last byte a meta view touches, relative to its buffer (offset included); -1 if empty.
int64_t last_byte(const Tensor& m) {
  if (m.numel() == 0) return -1;
  int64_t last = m.offset();
  for (int64_t d = 0; d < m.dim(); ++d) last += (m.size(d) - 1) * m.stride(d);
  return (last + 1) * static_cast<int64_t>(m.itemsize()) - 1;
}

// An int leaf of an argument template takes this call's value (no new Value).
void set_int(Value& leaf, int64_t v) {
  if (leaf.kind == Value::Kind::kInt)
    leaf.i = v;
  else
    leaf = Value::integer(v);
}

}  // namespace

int64_t ExecutionContext::read_input_element(int64_t input, int64_t element) const {
  const Plan& plan = engine_->plan();
  const Binding& b = plan.inputs[input];
  const Tensor& t = bound_inputs_[input];
  IP_CHECK(element < t.numel(), kOutOfRange, "[execute] input '", b.name, "' has ", t.numel(),
           " elements; the engine reads element ", element);
  const char* p = static_cast<const char*>(input_storage_[input]->data()) +
                  element * static_cast<int64_t>(dtype_size(b.dtype));
  int64_t staged = 0;  // the element, brought to the host when the input is not there
  if (!executable_->host_reads_inputs()) {
    device_allocator(device_).copy_to_host(&staged, p, dtype_size(b.dtype));
    p = reinterpret_cast<const char*>(&staged);
  }
  int64_t v = 0;
  switch (b.dtype) {
    case DType::kInt64:
      v = *reinterpret_cast<const int64_t*>(p);
      break;
    case DType::kInt32:
      v = *reinterpret_cast<const int32_t*>(p);
      break;
    case DType::kInt16:
      v = *reinterpret_cast<const int16_t*>(p);
      break;
    case DType::kInt8:
      v = *reinterpret_cast<const int8_t*>(p);
      break;
    case DType::kUInt8:
      v = *reinterpret_cast<const uint8_t*>(p);
      break;
    case DType::kBool:
      v = *reinterpret_cast<const uint8_t*>(p) != 0;
      break;
    default:
      IP_FAIL(kDTypeMismatch, "[execute] input '", b.name, "' is ", dtype_name(b.dtype),
              "; runtime scalars are read from integer inputs");
  }
  if (b.value_range)
    IP_CHECK(v >= b.value_range->lo && v <= b.value_range->hi, kOutOfRange, "[execute] input '",
             b.name, "' = ", v, " is outside its declared range [", b.value_range->lo, ", ",
             b.value_range->hi, "]");
  return v;
}

TensorRef ExecutionContext::current(const TensorRef& r) const {
  if (r.dyn < 0) return r;
  const Tensor& m = dyn_metas_[r.dyn];
  return TensorRef{r.buffer, m.offset(), m.shape(), m.strides(), r.dtype, r.dyn};
}

void ExecutionContext::check_positions() {
  const Plan& plan = engine_->plan();
  // Where the inputs are not in host memory, the backend's cache-update kernel reads the
  // positions itself and writes no row outside the cache; the host never reads them.
  if (!executable_->host_reads_inputs()) return;
  for (int q : position_checks_) {
    const Step& s = plan.steps[q];
    const std::vector<Value>& a = step_args_[q];
    try {
      kv_cache::positions(a);
    } catch (const Error& e) {
      std::string binding =
          s.writes_binding.empty() ? "" : str_cat(" writing binding '", s.writes_binding, "'");
      throw Error(e.code(), str_cat("[execute] step '", s.node, "'", binding, ": ", e.what()));
    }
  }
}

void ExecutionContext::refresh() {
  const Plan& plan = engine_->plan();
  SymEnv env;
  env.read = [this](int64_t input, int64_t element) { return read_input_element(input, element); };
  env.dim = [this](int64_t dyn, int64_t d) -> int64_t {
    const Tensor& m = dyn_metas_[dyn];
    IP_CHECK(m.defined() && d < m.dim(), kInvalidArgument, "[execute] the size of dim ", d,
             " of a value that does not exist at this call is read");
    return m.size(d);
  };
  env.scalars = &scalar_values_;
  for (const RefreshItem& item : plan.refresh) {
    switch (item.kind) {
      case RefreshItem::Kind::kInput: {
        const Binding& b = plan.inputs[item.index];
        dyn_metas_[b.dyn] = Tensor::meta(bound_inputs_[item.index].shape(), b.dtype);
        break;
      }
      case RefreshItem::Kind::kScalar:
        // Evaluated by the backend instead; the host keeps the bound its prefix views are
        // planned at (Executable::fixed_scalars).
        if (executable_->evaluates_scalars()) break;
        scalar_values_[item.index] =
            eval_sym(plan.scalars[item.index], env, plan.scalar_names[item.index]);
        if (!executable_->host_reads_inputs()) ++stats_.host_scalar_reads;
        break;
      case RefreshItem::Kind::kStep:
        if (profile_) {
          const int64_t t0 = StepProfile::now_ns();
          refresh_step(item.index);
          profile_->add_refresh(item.index, StepProfile::now_ns() - t0);
        } else {
          refresh_step(item.index);
        }
        break;
    }
  }
}

void ExecutionContext::refresh_step(int q) {
  const Plan& plan = engine_->plan();
  const Step& s = plan.steps[q];
  Args& args = refresh_args_[q];  // the template; only runtime leaves change
  for (const TensorSlot& t : s.tensors) {
    if (t.ref.dyn < 0) continue;
    const Tensor& m = dyn_metas_[t.ref.dyn];
    IP_CHECK(m.defined(), kOutOfRange, "[execute] step '", s.node,
             "' reads a piece that its split does not have at this call");
    leaf_at(args, t.path)->tensor = m;
  }
  for (const IntSlot& i : s.ints) set_int(*leaf_at(args, i.path), scalar_values_[i.scalar]);
  try {
    if (s.kind == StepKind::kCopy) {  // a write-back whose source has a per-call extent
      IP_CHECK(args[0].tensor.shape() == s.outs[0].shape, kShapeMismatch,
               "the new value has shape ", shape_str(args[0].tensor.shape()), " but its input is ",
               shape_str(s.outs[0].shape));
    } else if (s.kind == StepKind::kView && stop_dims_[q] >= 0) {
      // cache[:, :, :p + 1]: the slice itself, without parsing the index (refresh_slice.h).
      Tensor& m = dyn_metas_[s.outs[0].dyn];
      m = slice_to_stop(args[0].tensor, stop_dims_[q], scalar_values_[s.ints[0].scalar]);
      IP_CHECK(m.offset() >= 0 &&
                   last_byte(m) < static_cast<int64_t>(buffer_storage(s.outs[0].buffer)->nbytes()),
               kOutOfRange, "view ", shape_str(m.shape()), " at offset ", m.offset(),
               " leaves its buffer");
      return;
    } else if (s.kind == StepKind::kView) {
      Value result = view_metas(*s.op, args);
      std::vector<Value> leaves;
      if (result.is_tensor())
        leaves.push_back(std::move(result));  // the common case: one view, no flattening
      else
        flatten_value(result, &leaves);
      for (size_t k = 0; k < s.outs.size(); ++k) {
        Tensor& m = dyn_metas_[s.outs[k].dyn];
        if (k >= leaves.size()) {
          m = Tensor();
          continue;
        }
        IP_CHECK(leaves[k].is_tensor(), kInvalidArgument, "a view returns a ",
                 leaves[k].kind_name());
        m = std::move(leaves[k].tensor);
        IP_CHECK(m.offset() >= 0 && last_byte(m) < static_cast<int64_t>(
                                                       buffer_storage(s.outs[k].buffer)->nbytes()),
                 kOutOfRange, "view ", shape_str(m.shape()), " at offset ", m.offset(),
                 " leaves its buffer");
      }
      return;
    } else {
      std::vector<Tensor> metas = result_metas(*s.op, args);
      IP_CHECK(metas.size() == s.outs.size(), kInvalidArgument, "the op returns ", metas.size(),
               " results where the plan has ", s.outs.size());
      for (size_t k = 0; k < s.outs.size(); ++k) {
        const TensorRef& o = s.outs[k];
        if (o.dyn < 0) {
          IP_CHECK(metas[k].shape() == o.shape, kShapeMismatch, "result ", k, " has shape ",
                   shape_str(metas[k].shape()), " at this call but the plan fixed ",
                   shape_str(o.shape));
          continue;
        }
        IP_CHECK(metas[k].numel() <= numel_of(o.shape), kOutOfRange, "result ", k, " of shape ",
                 shape_str(metas[k].shape()), " exceeds its planned bound ", shape_str(o.shape));
        dyn_metas_[o.dyn] = Tensor::meta(metas[k].shape(), o.dtype, std::nullopt, o.offset);
      }
    }
  } catch (const Error& e) {
    std::string values;
    for (const IntSlot& i : s.ints)
      values += str_cat(values.empty() ? " (" : ", ", plan.scalar_names[i.scalar], " = ",
                        scalar_values_[i.scalar]);
    if (!values.empty()) values += ")";
    throw Error(e.code(), str_cat("[execute] node '", s.node, "'", values, ": ", e.what()));
  }
  // Point the kernel at this call's operands and results.
  std::vector<Value>& kargs = step_args_[q];
  auto bound = [&](const TensorRef& r) {
    const Tensor& m = dyn_metas_[r.dyn];
    return Tensor(buffer_storage(r.buffer), m.offset(), m.shape(), m.strides(), r.dtype);
  };
  for (const TensorSlot& t : s.tensors)
    if (t.ref.dyn >= 0) leaf_at(kargs, t.path)->tensor = bound(t.ref);
  for (const IntSlot& i : s.ints) set_int(*leaf_at(kargs, i.path), scalar_values_[i.scalar]);
  for (size_t k = 0; k < s.outs.size(); ++k)
    if (s.outs[k].dyn >= 0) step_outs_[q][k] = bound(s.outs[k]);
}

}  // namespace inplace
