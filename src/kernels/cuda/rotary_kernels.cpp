// The CUDA kernel of rotary_embedding(x, cos, sin), the step the fuse_rotary pass makes of
// Hugging Face's apply_rotary_pos_emb chain.
#include "kernels/cuda/launch.h"
#include "kernels/cuda/registration.h"
#include "ops/rotary_args.h"

namespace inplace::cuda {

void register_rotary_kernels(KernelTable& table) {
  table.add(DeviceType::kCuda, "rotary_embedding",
            [](const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
              const Tensor& out = outs[0];
              rotary(operand(out), operand(a[rotary::kX].tensor, out.shape()),
                     operand(a[rotary::kCos].tensor, out.shape()),
                     operand(a[rotary::kSin].tensor, out.shape()), ctx.queue);
            });
}

}  // namespace inplace::cuda
