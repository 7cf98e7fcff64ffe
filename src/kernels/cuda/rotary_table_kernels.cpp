// The CUDA kernel of rotary_table (the fuse_rotary_table pass's step), and its pair: the cos and
// the sin tables of one rotary embedding, adjacent independent steps, in one launch.
#include "kernels/cuda/launch_groups.h"
#include "kernels/cuda/registration.h"
#include "kernels/cuda/rotary_table.h"
#include "ops/rotary_table_args.h"

namespace inplace::cuda {

namespace {

RotaryTable table_of(const Args& a, const std::vector<Tensor>& outs) {
  using namespace rotary_table;
  IP_CHECK(outs[0].numel() < (int64_t{1} << 31), kUnsupported,
           "[cuda] rotary_table: tables of fewer than 2^31 elements");
  RotaryTable t;
  t.inv = operand(a[kInvFreq].tensor);
  t.positions = operand(a[kPositions].tensor);
  t.out = operand(outs[0]);
  t.sine = a[kSine].as_bool("rotary_table");
  return t;
}

}  // namespace

void register_rotary_table_kernels(KernelTable& table) {
  table.add(DeviceType::kCuda, "rotary_table",
            [](const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
              rotary_table(table_of(a, outs), ctx.queue);
            });
  LaunchKernels::get().add_pair(
      "rotary_table", [](const Args& a1, const std::vector<Tensor>& o1, const KernelContext& c1,
                         const Args& a2, const std::vector<Tensor>& o2, const KernelContext&) {
        rotary_table_pair(table_of(a1, o1), table_of(a2, o2), c1.queue);
      });
}

}  // namespace inplace::cuda
