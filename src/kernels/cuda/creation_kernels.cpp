// CUDA kernels of the creation ops: every fill-shaped factory (zeros, ones, full, *_like,
// new_*, scalar_tensor) and arange. Sizes were fixed by the shape rule; the kernels only write.
#include "kernels/cuda/launch.h"
#include "kernels/cuda/registration.h"
#include "ops/creation_args.h"

namespace inplace::cuda {

namespace {

// A factory whose every element is one value (its row of ops/creation_args.h).
Kernel filled(const creation::FilledDecl& d) {
  return [d](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    fill(operand(outs[0]), creation::filled_value(d, args), ctx.queue);
  };
}

// arange's start and step, as the cpu kernel reads them (ints stay exact).
Kernel arange_kernel(int start, int step) {
  return [=](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const Scalar s = start >= 0 ? args[start].as_scalar("arange") : Scalar(int64_t{0});
    const Scalar st = step >= 0 ? args[step].as_scalar("arange") : Scalar(int64_t{1});
    const bool ints = !is_floating(outs[0].dtype());
    arange(operand(outs[0]), ints ? static_cast<double>(s.to_int()) : s.to_double(),
           ints ? static_cast<double>(st.to_int()) : st.to_double(), ctx.queue);
  };
}

// cat: each input copied into its slice of out along dim (1-D empty inputs are skipped, as
// torch does), up to kMaxCopyBatch of them a launch; stack: each input into out.select(dim, i).
void cat_kernel(const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  const Tensor& out = outs[0];
  const int64_t dim = wrap_dim(args[1].as_int("cat"), out.dim(), "cat");
  std::vector<Operand> regions, sources;
  auto flush = [&] {
    copy_cast_batch(regions.data(), sources.data(), static_cast<int>(regions.size()), ctx.queue);
    regions.clear();
    sources.clear();
  };
  int64_t at = 0;
  for (const Value& v : args[0].items) {
    const Tensor& t = v.tensor;
    if (t.dim() == 1 && t.numel() == 0 && out.dim() != 1) continue;
    const Tensor region = out.narrow(dim, at, t.size(dim));
    regions.push_back(operand(region));
    sources.push_back(operand(t, region.shape()));
    if (regions.size() == static_cast<size_t>(kMaxCopyBatch)) flush();
    at += t.size(dim);
  }
  if (!regions.empty()) flush();
}

void stack_kernel(const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  const Tensor& out = outs[0];
  const int64_t dim = wrap_dim(args[1].as_int("stack"), out.dim(), "stack");
  for (size_t i = 0; i < args[0].items.size(); ++i) {
    const Tensor region = out.select(dim, static_cast<int64_t>(i));
    copy_cast(operand(region), operand(args[0].items[i].tensor, region.shape()), ctx.queue);
  }
}

}  // namespace

void register_creation_kernels(KernelTable& t) {
  const auto C = DeviceType::kCuda;
  for (const creation::FilledDecl& d : creation::kFilledOps) t.add(C, d.name, filled(d));
  t.add(C, "arange.default", arange_kernel(-1, -1));
  t.add(C, "arange.start", arange_kernel(0, -1));
  t.add(C, "arange.start_step", arange_kernel(0, 2));
  t.add(C, "cat", cat_kernel);
  t.add(C, "stack", stack_kernel);
}

}  // namespace inplace::cuda
