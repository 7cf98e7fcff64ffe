// fused_pointwise on the cpu: its program (ops/pointwise_program.h) run over blocks of the output
// by the interpreter of pointwise_exec.h, bitwise the unfused chain.
#include <algorithm>
#include <vector>

#include "kernels/cpu/pointwise_exec.h"
#include "kernels/cpu/registration.h"

namespace inplace::cpu {

namespace {

using pointwise::Program;
using namespace pointwise_exec;

constexpr const char* kOp = "fused_pointwise";

void run_program(const Program& p, const std::vector<Tensor>& inputs, const Tensor& out) {
  const Shape& shape = out.shape();
  const int64_t numel = out.numel();
  if (numel == 0) return;
  IP_CHECK(shape.size() <= 64, kInvalidArgument, "[", kOp, "] more than 64 dims");
  std::vector<View> views;
  for (const Tensor& t : inputs) views.push_back(view_of(t, shape, kOp));
  const View o = view_of(out, shape, kOp);
  thread_local std::vector<Reg> regs;
  if (regs.size() < p.code.size()) regs.resize(p.code.size());
  Block b{&p, regs.data(), &views, &o, &shape, 0, 0};
  for (b.start = 0; b.start < numel; b.start += kBlock) {
    b.n = std::min(kBlock, numel - b.start);
    for (size_t i = 0; i < p.code.size(); ++i) exec(b, i);
  }
}

}  // namespace

void register_fused_pointwise_kernels(KernelTable& table) {
  table.add(DeviceType::kCpu, kOp,
            [](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
              std::vector<Tensor> inputs;
              const Program p = step_program(args, kOp, false, &inputs);
              run_program(p, inputs, outs[0]);
            });
}

}  // namespace inplace::cpu
