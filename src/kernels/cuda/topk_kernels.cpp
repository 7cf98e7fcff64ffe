// The CUDA kernel of topk (topk.cu) for the forms it runs: float32, bfloat16 and float16 lanes,
// largest, 1 <= k <= kTopkMaxK; the others run on the host (Step::on_host). Generation's
// sampling calls it on the last row of the logits (program/generate.cpp).
#include "kernels/cuda/registration.h"
#include "kernels/cuda/topk.h"
#include "ops/sort_args.h"

namespace inplace::cuda {

namespace {

// The lanes of `t` along `dim`: the other dims (size-1 dims dropped) as `rows`.
Operand lanes_of(const Tensor& t, int64_t dim) {
  Operand o;
  o.data = static_cast<char*>(t.data_ptr());
  o.dtype = t.dtype();
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d == dim || t.size(d) == 1) continue;
    IP_CHECK(o.ndim < kMaxDims, kUnsupported, "[cuda] topk over more than ", kMaxDims, " dims");
    o.size[o.ndim] = t.size(d);
    o.stride[o.ndim] = t.stride(d);
    ++o.ndim;
  }
  return o;
}

std::string topk_supports(const Args& a) {
  const Tensor& x = a[0].tensor;
  const DType d = x.dtype();
  if (d != DType::kFloat32 && d != DType::kBFloat16 && d != DType::kFloat16)
    return "topk on the device takes float32, bfloat16 or float16";
  if (x.dim() == 0) return "a 0-d topk is a copy, done on the host";
  if (!a[3].as_bool("largest")) return "topk on the device takes the largest";
  if (a[1].kind != Value::Kind::kInt) return "topk on the device takes a constant k";
  const int64_t k = a[1].as_int("k");
  if (k > kTopkMaxK) return str_cat("topk on the device takes k <= ", kTopkMaxK);
  const int64_t n = x.size(sorting::sort_dim(x, a[2], "topk"));
  if (n >= (int64_t{1} << 31)) return "topk on the device takes lanes below 2^31 elements";
  return {};
}

void run_topk(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  const Tensor& x = a[0].tensor;
  const sorting::TopkArgs p = sorting::topk_args(a);
  if (p.k == 0 || x.numel() == 0) return;
  Topk t;
  t.in = lanes_of(x, p.dim);
  t.values = lanes_of(outs[0], p.dim);
  t.indices = lanes_of(outs[1], p.dim);
  t.lanes = numel(t.in);
  t.n = x.size(p.dim);
  t.k = p.k;
  t.in_stride = x.stride(p.dim);
  t.values_stride = outs[0].stride(p.dim);
  t.indices_stride = outs[1].stride(p.dim);
  topk(t, ctx.queue);
}

}  // namespace

void register_topk_kernels(KernelTable& table) {
  table.add(DeviceType::kCuda, "topk", run_topk, topk_supports);
}

}  // namespace inplace::cuda
