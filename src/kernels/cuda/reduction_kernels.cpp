// CUDA kernels of the reductions (sum, mean, amax, amin over any dims), softmax and
// log_softmax along a dim, rms_norm / layer_norm over trailing dims (each a RowTask of
// reduction.cu) and upcast_rms_norm over the last dim (upcast_rms_norm.cu), over the operands'
// own strides, so no operand is made contiguous first.
#include <limits>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_groups.h"
#include "kernels/cuda/registration.h"
#include "kernels/cuda/row_write.h"
#include "ops/nn_args.h"
#include "ops/reduction_args.h"

namespace inplace::cuda {

namespace {

// `t` as rows (dims not in `reduced`) x cols (dims in `reduced`); size-1 dims are dropped.
RowView split(const Tensor& t, const std::vector<bool>& reduced) {
  RowView v;
  for (Operand* o : {&v.rows, &v.cols}) {
    o->data = static_cast<char*>(t.data_ptr());
    o->dtype = t.dtype();
  }
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 1) continue;
    Operand& o = reduced[d] ? v.cols : v.rows;
    IP_CHECK(o.ndim < kMaxDims, kUnsupported, "[cuda] reduction over more than ", kMaxDims,
             " dims");
    o.size[o.ndim] = t.size(d);
    o.stride[o.ndim] = t.stride(d);
    ++o.ndim;
  }
  return v;
}

// The dims a reduction folds, decoded as the declaration does (ops/reduction_args.h).
std::vector<bool> dims_of(const Tensor& x, const Value& dim, const char* op) {
  return reduction::plan_reduction(x, dim, false, op).mask;
}

void reduce(RowOp op, const Tensor& x, const std::vector<bool>& reduced, const Tensor& out,
            void* stream) {
  RowTask t;
  t.op = op;
  t.in = split(x, reduced);
  t.out = split(out, std::vector<bool>(out.dim(), false));
  t.compute = out.dtype();
  if (x.dim() == 0 || numel(t.in.cols) == 0) {  // nothing reduced, or an empty reduction
    if (op == RowOp::kSum || x.dim() == 0)
      x.dim() == 0 ? copy_cast(operand(out), operand(x, out.shape()), stream)
                   : fill(operand(out), Scalar(int64_t{0}), stream);
    else
      fill(operand(out), Scalar(std::numeric_limits<double>::quiet_NaN()), stream);
    return;
  }
  row_op(t, stream);
}

Kernel reduction(RowOp op, const char* name, int dim_index) {
  return [=](const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const Tensor& x = a[0].tensor;
    reduce(op, x, dims_of(x, dim_index >= 0 ? a[dim_index] : Value::none(), name), outs[0],
           ctx.queue);
  };
}

// softmax / log_softmax along one dim; `dim` of none is F.softmax's legacy choice.
Kernel softmax(bool log) {
  return [=](const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const Tensor& x = a[0].tensor;
    const int64_t nd = std::max<int64_t>(x.dim(), 1);
    int64_t dim = a[1].is_none() ? reduction::legacy_softmax_dim(x.dim())
                                 : wrap_dim(a[1].as_int("softmax"), nd, "softmax");
    std::vector<bool> reduced(x.dim(), false);
    if (x.dim() > 0) reduced[dim] = true;
    RowTask t;
    t.op = log ? RowOp::kLogSoftmax : RowOp::kSoftmax;
    t.in = split(x, reduced);
    t.out = split(outs[0], reduced);
    t.compute = outs[0].dtype();
    if (x.numel() == 0) return;
    if (x.dim() == 0 || x.size(dim) == 1) {  // a single element per row: 1, or 0 for log
      fill(operand(outs[0]), Scalar(log ? int64_t{0} : int64_t{1}), ctx.queue);
      return;
    }
    row_op(t, ctx.queue);
  };
}

// rms_norm / layer_norm over the trailing normalized_shape dims.
Kernel norm(bool layer) {
  return [=](const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const char* op = layer ? "layer_norm" : "rms_norm";
    const Tensor& x = a[0].tensor;
    const int64_t k = static_cast<int64_t>(a[1].as_int_list(op).size());
    std::vector<bool> reduced(x.dim(), false);
    for (int64_t d = x.dim() - k; d < x.dim(); ++d) reduced[d] = true;
    RowTask t;
    t.op = layer ? RowOp::kLayerNorm : RowOp::kRmsNorm;
    t.in = split(x, reduced);
    t.out = split(outs[0], reduced);
    t.compute = outs[0].dtype();
    const Shape trailing(x.shape().end() - k, x.shape().end());
    auto cols_of = [&](const Value& v, Operand* o, bool* has) {
      *has = v.is_tensor();
      if (!*has) return;
      *o = split(v.tensor, std::vector<bool>(v.tensor.dim(), true)).cols;
    };
    cols_of(a[2], &t.weight, &t.has_weight);
    if (layer) {
      cols_of(a[3], &t.bias, &t.has_bias);
      t.eps = a[4].as_double(op);
    } else {
      t.eps = nn::rms_eps(x, a[3]);
    }
    (void)trailing;
    if (x.numel() == 0) return;
    row_op(t, ctx.queue);
  };
}

// upcast_rms_norm's (ops/nn_ops.cpp) or rms_norm_rotary's (ops/rotary_ops.cpp: cos and sin its
// arguments 4 and 5) step over the last dim, any strides.
NormRotaryStep norm_step(const Args& a, const Tensor& out, bool rotary) {
  const char* op = rotary ? "rms_norm_rotary" : "upcast_rms_norm";
  const Tensor& x = a[0].tensor;
  std::vector<bool> last(x.dim(), false);
  if (x.dim() > 0) last.back() = true;
  NormRotaryStep s;
  s.task.op = RowOp::kRmsNorm;
  s.task.in = split(x, last);
  s.task.out = split(out, last);
  s.task.weight = split(a[1].tensor, std::vector<bool>(a[1].tensor.dim(), true)).cols;
  s.task.has_weight = true;
  s.task.eps = a[2].as_double(op);
  s.weight_in_float = a.size() > 3 && a[3].as_bool(op);
  s.weight_offset = static_cast<float>(
      nn::norm_weight_offset(a, rotary ? nn::kNormRotaryOffsetArg : nn::kUpcastNormOffsetArg));
  const size_t r = nn::kUpcastNormResidualArg;
  if (!rotary && a.size() > r && a[r].is_tensor()) s.residual = split(a[r].tensor, last);
  if (rotary) {  // cos and sin at the result's shape, split as the rows and cols of x
    s.cos = split(a[4].tensor.expand(out.shape()), last);
    s.sin = split(a[5].tensor.expand(out.shape()), last);
    if (a.size() > 6 && a[6].is_tensor()) {  // heads from `split` on take weight2
      s.weight2 = split(a[6].tensor, std::vector<bool>(a[6].tensor.dim(), true)).cols;
      s.split = a[7].as_int(op);
      s.heads = x.size(-2);
    }
  }
  return s;
}

void upcast_norm_kernel(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  if (outs[0].numel() == 0) return;
  const NormRotaryStep s = norm_step(a, outs[0], false);
  upcast_rms_norm(s, ctx.queue);
}

void norm_rotary_kernel(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  if (outs[0].numel() == 0) return;
  const NormRotaryStep s = norm_step(a, outs[0], true);
  rms_norm_rotary(&s, 1, ctx.queue);
}

// The step and the kv_cache_update steps after it that store slices of its result (a layer's k
// heads) in one launch; false (nothing launched) where a write has another form.
bool norm_rotary_writes(const StepCall& p, const StepCall* writes, int n) {
  const Tensor& out = (*p.outs)[0];
  if (!out.is_contiguous() || out.numel() == 0) return false;
  GemvRowWrite w[2];
  for (int k = 0; k < n; ++k)
    if (!row_write_of(writes[k], out.data_ptr(), out.numel(), out.dtype(), &w[k])) return false;
  const NormRotaryStep s = norm_step(*p.args, out, true);
  rms_norm_rotary_writes(s, w, n, p.ctx.queue);
  return true;
}

// A layer's q and k steps in one launch (the engine pairs the two steps).
void norm_rotary_pair(const Args& a1, const std::vector<Tensor>& o1, const KernelContext& c1,
                      const Args& a2, const std::vector<Tensor>& o2, const KernelContext&) {
  const NormRotaryStep s[2] = {norm_step(a1, o1[0], true), norm_step(a2, o2[0], true)};
  rms_norm_rotary(s, 2, c1.queue);
}

}  // namespace

void register_reduction_kernels(KernelTable& t) {
  const auto C = DeviceType::kCuda;
  t.add(C, "sum.dim_IntList", reduction(RowOp::kSum, "sum", 1));
  t.add(C, "sum.default", reduction(RowOp::kSum, "sum", -1));
  t.add(C, "mean.dim", reduction(RowOp::kMean, "mean", 1));
  t.add(C, "mean.default", reduction(RowOp::kMean, "mean", -1));
  t.add(C, "amax", reduction(RowOp::kMax, "amax", 1));
  t.add(C, "amin", reduction(RowOp::kMin, "amin", 1));
  for (const char* name : {"argmax", "argmin"})
    t.add(C, name,
          [name](const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
            const Tensor& x = a[0].tensor;
            RowTask task;
            task.op = std::string(name) == "argmax" ? RowOp::kArgMax : RowOp::kArgMin;
            Value dim = a[1].is_none() ? Value::none() : Value::int_list({a[1].as_int(name)});
            task.in = split(x, dims_of(x, dim, name));
            task.out = split(outs[0], std::vector<bool>(outs[0].dim(), false));
            if (numel(task.in.cols) == 0 || x.dim() == 0)  // a 0-d input: index 0
              return fill(operand(outs[0]), Scalar(int64_t{0}), ctx.queue);
            row_op(task, ctx.queue);
          });
  t.add(C, "softmax.int", softmax(false));
  t.add(C, "log_softmax.int", softmax(true));
  t.add(C, "softmax.functional", softmax(false));
  t.add(C, "log_softmax.functional", softmax(true));
  t.add(C, "_softmax", softmax(false));
  t.add(C, "_log_softmax", softmax(true));
  t.add(C, "rms_norm", norm(false));
  t.add(C, "layer_norm", norm(true));
  t.add(C, "upcast_rms_norm", upcast_norm_kernel);
  t.add(C, "rms_norm_rotary", norm_rotary_kernel);
  LaunchKernels::get().add_pair("rms_norm_rotary", norm_rotary_pair);
  LaunchKernels::get().add_epilogue_writes("rms_norm_rotary", "kv_cache_update",
                                           norm_rotary_writes);
}

}  // namespace inplace::cuda
