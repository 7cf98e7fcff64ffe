// fused_rows on the cpu: a pointwise program with row reductions (kReduce over the last dim),
// run by the interpreter of pointwise_exec.h one row at a time. A row is walked once for each
// reduction, in program order: the instructions since the previous one run over the row's
// blocks (each block keeping its registers for the next pass) and the reduction's operand is
// gathered into a row buffer, reduced by the loops the unfused sum, mean, amax and amin kernels
// run (reduction_run.h) on that intermediate as they would find it, and the value kept for the
// row; then the rest of the program, every reduction reading its row's value. So the result is
// bitwise the unfused chain.
#include <algorithm>
#include <vector>

#include "kernels/cpu/pointwise_exec.h"
#include "kernels/cpu/reduction_run.h"
#include "kernels/cpu/registration.h"

namespace inplace::cpu {

namespace {

using pointwise::Opcode;
using pointwise::Program;
using pointwise::ReduceOp;
using namespace pointwise_exec;

constexpr const char* kOp = "fused_rows";
// Registers a call keeps at most (4 MiB of them) so that a row's blocks hold theirs across
// passes.
constexpr int64_t kKeptRegs = (int64_t{4} << 20) / static_cast<int64_t>(sizeof(Reg));

// The value of a row's reduction of `row` (n values of T's opmath type, each a T value), as the
// unfused kernel stores it and the next op loads it: a double holding opmath(T(result)). `unit`:
// the unfused kernel reads the operand at unit stride (an intermediate always; an input where
// its last dim has stride 1), which sets its order of summation.
template <typename T>
double reduce_row(ReduceOp op, const opmath_t<T>* row, int64_t n, bool unit) {
  using M = opmath_t<T>;
  if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
    double acc = 0;  // the unfused kernel adds each run's sum to a zero (so -0 sums to +0)
    acc += sum_packed(row, n, unit);
    const T v = op == ReduceOp::kSum ? convert<T>(acc) : convert<T>(acc / static_cast<double>(n));
    return static_cast<double>(static_cast<M>(v));
  }
  const M best = op == ReduceOp::kMax ? extreme_run<true>(row, n) : extreme_run<false>(row, n);
  return static_cast<double>(static_cast<M>(static_cast<T>(best)));
}

void run_rows(const Program& p, const std::vector<Tensor>& inputs, const Tensor& out) {
  const Shape& shape = out.shape();
  const int64_t numel = out.numel();
  if (numel == 0) return;
  IP_CHECK(!shape.empty() && shape.size() <= 64, kInvalidArgument, "[", kOp,
           "] takes 1 to 64 dims, got ", shape.size());
  const int64_t cols = shape.back(), rows = numel / cols;
  std::vector<View> views;
  for (const Tensor& t : inputs) views.push_back(view_of(t, shape, kOp));
  const View o = view_of(out, shape, kOp);
  const size_t ncode = p.code.size();
  const int64_t chunks = (cols + kBlock - 1) / kBlock;
  // Each block of a row keeps its registers from one reduction's pass to the next, so every
  // instruction runs once an element, where they fit in kKeptRegs; longer rows run the
  // instructions before each reduction again in its pass (the same values, bitwise).
  const bool keep = chunks * static_cast<int64_t>(ncode) <= kKeptRegs;
  thread_local std::vector<Reg> regs;
  const size_t need = keep ? static_cast<size_t>(chunks) * ncode : ncode;
  if (regs.size() < need) regs.resize(need);
  std::vector<double> reduced(ncode, 0.0);
  std::vector<double> row(static_cast<size_t>(cols));      // an operand's row (opmath values)
  const std::vector<bool> uniform = uniform_registers(p);  // the row's values: once a block
  const std::vector<bool> scalar = scalar_registers(p, uniform);
  std::vector<size_t> reductions;
  for (size_t i = 0; i < ncode; ++i)
    if (p.code[i].op == Opcode::kReduce) reductions.push_back(i);
  Block b{&p, regs.data(), &views, &o, &shape, 0, 0, reduced.data(), &scalar};
  // Instructions [from, end) (kept registers; else [0, end)) over every block of row r, then
  // gather(c0) after each block.
  auto walk = [&](int64_t r, size_t from, size_t end, auto&& gather) {
    for (int64_t k = 0; k < chunks; ++k) {
      const int64_t c0 = k * kBlock;
      b.regs = regs.data() + (keep ? static_cast<size_t>(k) * ncode : 0);
      b.start = r * cols + c0;
      b.n = std::min(kBlock, cols - c0);
      for (size_t i = keep ? from : 0; i < end; ++i) uniform[i] ? exec_uniform(b, i) : exec(b, i);
      gather(c0);
    }
  };
  for (int64_t r = 0; r < rows; ++r) {
    size_t from = 0;
    for (size_t q : reductions) {
      const pointwise::Instr& in = p.code[q];
      visit_dtype(static_cast<DType>(in.dtype), [&]<typename T>() {
        if constexpr (kIsFloat<T>) {
          using M = opmath_t<T>;
          M* buf = reinterpret_cast<M*>(row.data());  // a double holds one M at least
          walk(r, from, q, [&](int64_t c0) {
            const M* x = as<M>(b.regs[in.a]);
            std::copy(x, x + b.n, buf + c0);
          });
          const pointwise::Instr& x = p.code[in.a];
          const bool unit = x.op != Opcode::kLoad || views[x.a].strides.back() == 1;
          reduced[q] = reduce_row<T>(static_cast<ReduceOp>(in.b), buf, cols, unit);
        }
      });
      from = q;  // the next pass starts with this reduction's register
    }
    walk(r, from, ncode, [](int64_t) {});
  }
}

}  // namespace

void register_fused_rows_kernels(KernelTable& table) {
  table.add(DeviceType::kCpu, kOp,
            [](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
              std::vector<Tensor> inputs;
              const Program p = step_program(args, kOp, true, &inputs);
              run_rows(p, inputs, outs[0]);
            });
}

}  // namespace inplace::cpu
