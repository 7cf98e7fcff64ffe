// The CUDA kernel of fused_pointwise: the program decoded and checked on the host (as the cpu
// kernel does, ops/fused_pointwise_args.h), then one launch (fused_pointwise.cu).
#include "kernels/cuda/fused_pointwise.h"
#include "kernels/cuda/registration.h"
#include "ops/fused_pointwise_args.h"

namespace inplace::cuda {

namespace {

// The one place this kernel reads the launch context.
void* stream_of(const KernelContext& ctx) {
  return ctx.queue;
}

}  // namespace

void register_fused_pointwise_kernels(KernelTable& table) {
  table.add(DeviceType::kCuda, "fused_pointwise",
            [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
              const char* op = "fused_pointwise";
              std::vector<DType> dtypes;
              for (const Value& v : args[0].items) dtypes.push_back(v.as_tensor(op).dtype());
              const pointwise::Program prog = pointwise::decode(args[1].as_int_list(op), dtypes);
              FusedPointwise p;
              p.n_code = static_cast<int>(prog.code.size());
              for (int k = 0; k < p.n_code; ++k) p.code[k] = prog.code[k];
              for (size_t k = 0; k < args[0].items.size(); ++k)
                p.inputs[k] = operand(args[0].items[k].tensor, outs[0].shape());
              p.out = operand(outs[0]);
              fused_pointwise(p, stream_of(ctx));
            });
}

}  // namespace inplace::cuda
