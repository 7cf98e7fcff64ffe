// The device evaluator of runtime scalars (DeviceRuntime::eval_scalars, runtime.cu) against the
// host's eval_sym: random programs (constants, input reads, reads of earlier scalars, every
// arithmetic op), chains of scalar reads several deep, and the first error of a call. Plans of up
// to 256 programs run in one block from shared memory; larger ones take the one-thread
// evaluator, which must give the same slots and the same error. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backend/symbolic.h"
#include "cuda/cuda_test_util.h"
#include "kernels/cuda/device_runtime.h"

#ifdef INPLACE_WITH_CUDA
using namespace inplace;
using namespace inplace::testing;
using Op = SymInstr::Op;

namespace {

// A random program for scalar k: a few leaves combined by random ops (postfix); `divisions`
// false keeps it free of division by zero (floor division and modulo by a nonzero constant).
SymExpr random_program(std::mt19937& rng, int64_t k, int64_t input_numel, bool divisions) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  SymExpr e;
  auto leaf = [&] {
    const int kind = pick(k > 0 ? 3 : 2);
    if (kind == 0) e.code.push_back({Op::kConst, pick(41) - 20, 0});
    if (kind == 1) e.code.push_back({Op::kRead, 0, pick(static_cast<int>(input_numel))});
    if (kind == 2) e.code.push_back({Op::kScalar, pick(static_cast<int>(k)), 0});
  };
  leaf();
  for (int t = pick(4); t > 0; --t) {
    const Op ops[] = {Op::kAdd, Op::kSub, Op::kMul,      Op::kMin,
                      Op::kMax, Op::kNeg, Op::kFloorDiv, Op::kMod};
    const Op op = ops[pick(divisions ? 8 : 6)];
    if (op == Op::kNeg) {
      e.code.push_back({op, 0, 0});
      continue;
    }
    if (op == Op::kFloorDiv || op == Op::kMod) {
      // Mostly a nonzero constant divisor; sometimes a leaf that may be zero.
      if (pick(3) == 0)
        leaf();
      else
        e.code.push_back({Op::kConst, pick(2) ? pick(7) + 1 : -(pick(7) + 1), 0});
    } else {
      leaf();
    }
    e.code.push_back({op, 0, 0});
  }
  return e;
}

std::vector<int64_t> encode(const std::vector<SymExpr>& programs) {
  std::vector<int64_t> code = {static_cast<int64_t>(programs.size())};
  for (const SymExpr& e : programs) {
    code.push_back(static_cast<int64_t>(e.code.size()));
    for (const SymInstr& i : e.code) {
      code.push_back(static_cast<int64_t>(i.op));
      code.push_back(i.a);
      code.push_back(i.b);
    }
  }
  return code;
}

struct DeviceResult {
  std::vector<int64_t> slots;
  int32_t error[2] = {0, 0};
};

// Evaluates on the GPU; `input` int64 [n] with the declared range [lo, hi] (lo > hi: none).
DeviceResult eval_on_device(const std::vector<SymExpr>& programs, const Tensor& input, int64_t lo,
                            int64_t hi) {
  const std::vector<int64_t> code = encode(programs);
  Tensor code_t = Tensor::empty({static_cast<int64_t>(code.size())}, DType::kInt64);
  std::memcpy(code_t.data<int64_t>(), code.data(), code.size() * sizeof(int64_t));
  const Tensor dcode = code_t.to_device(Device::cuda());
  const Tensor dinput = input.to_device(Device::cuda());
  cuda::DeviceScalarInput in;
  in.data = dinput.data_ptr();
  in.dtype = static_cast<int32_t>(DType::kInt64);
  in.numel = dinput.numel();
  in.lo = lo;
  in.hi = hi;
  Tensor in_t = Tensor::empty({static_cast<int64_t>(sizeof in)}, DType::kUInt8);
  std::memcpy(in_t.data_ptr(), &in, sizeof in);
  const Tensor dinputs = in_t.to_device(Device::cuda());
  const int64_t count = static_cast<int64_t>(programs.size());
  Tensor slots = Tensor::zeros({count}, DType::kInt64).to_device(Device::cuda());
  Tensor error = Tensor::zeros({4}, DType::kInt32).to_device(Device::cuda());
  const cuda::DeviceRuntime& rt = cuda::device_runtime();
  void* stream = rt.create_stream();
  rt.eval_scalars(static_cast<const int64_t*>(dcode.data_ptr()), static_cast<int64_t>(code.size()),
                  count, static_cast<const cuda::DeviceScalarInput*>(dinputs.data_ptr()),
                  static_cast<int64_t*>(slots.data_ptr()), static_cast<int32_t*>(error.data_ptr()),
                  stream);
  rt.synchronize(stream);
  rt.destroy_stream(stream);
  DeviceResult r;
  const Tensor hs = slots.to_device(Device::cpu()), he = error.to_device(Device::cpu());
  r.slots.assign(hs.data<int64_t>(), hs.data<int64_t>() + count);
  r.error[0] = he.data<int32_t>()[0];
  r.error[1] = he.data<int32_t>()[1];
  return r;
}

Tensor random_input(std::mt19937& rng, int64_t n) {
  Tensor t = Tensor::empty({n}, DType::kInt64);
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 4097) - 8;
  return t;
}

// The same programs padded past the block evaluator's limit (constants after them): the
// one-thread evaluator's slots and error for the first programs.
DeviceResult eval_serial(std::vector<SymExpr> programs, const Tensor& input, int64_t lo,
                         int64_t hi) {
  const size_t count = programs.size();
  while (programs.size() < 300) programs.push_back(SymExpr{{{Op::kConst, 7, 0}}});
  DeviceResult r = eval_on_device(programs, input, lo, hi);
  r.slots.resize(count);
  return r;
}

TEST(DeviceScalarEval, RandomProgramsEqualTheHostEvaluation) {
  IP_REQUIRE_CUDA();
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t count = 1 + static_cast<int64_t>(rng() % (trial < 30 ? 64 : 256));
    const Tensor input = random_input(rng, 5);
    std::vector<SymExpr> programs;
    for (int64_t k = 0; k < count; ++k) programs.push_back(random_program(rng, k, 5, false));
    std::vector<int64_t> want;
    SymEnv env;
    env.read = [&](int64_t, int64_t e) { return input.data<int64_t>()[e]; };
    env.scalars = &want;
    for (int64_t k = 0; k < count; ++k) want.push_back(eval_sym(programs[k], env, "s"));
    SCOPED_TRACE(str_cat("trial ", trial, " programs ", count));
    const DeviceResult block = eval_on_device(programs, input, 1, 0);
    EXPECT_EQ(block.slots, want);
    EXPECT_EQ(block.error[0], 0);
    const DeviceResult serial = eval_serial(programs, input, 1, 0);
    EXPECT_EQ(serial.slots, want);
  }
}

// A chain: each scalar reads the one before (as many rounds as programs), and a long plan.
TEST(DeviceScalarEval, ChainsOfScalarReads) {
  IP_REQUIRE_CUDA();
  const Tensor input = Tensor::full({1}, Scalar(int64_t{3}), DType::kInt64);
  for (int64_t count : {1, 2, 129, 256}) {
    std::vector<SymExpr> programs = {SymExpr{{{Op::kRead, 0, 0}}}};
    for (int64_t k = 1; k < count; ++k)
      programs.push_back(SymExpr{{{Op::kScalar, k - 1, 0}, {Op::kConst, 1, 0}, {Op::kAdd, 0, 0}}});
    const DeviceResult r = eval_on_device(programs, input, 1, 0);
    for (int64_t k = 0; k < count; ++k) ASSERT_EQ(r.slots[k], 3 + k) << k;
  }
}

// Errors (a division by zero, a read past the input, a value outside its declared range): the
// first one in program order is the call's, in both evaluators, with the same slots.
TEST(DeviceScalarEval, TheFirstErrorInProgramOrder) {
  IP_REQUIRE_CUDA();
  std::mt19937 rng(23);
  int errors = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t count = 2 + static_cast<int64_t>(rng() % 100);
    const Tensor input = random_input(rng, 4);
    std::vector<SymExpr> programs;
    for (int64_t k = 0; k < count; ++k) {
      SymExpr e = random_program(rng, k, trial % 3 == 0 ? 6 : 4, true);  // 6: reads past the end
      programs.push_back(e);
    }
    const int64_t lo = trial % 2 ? 0 : 1, hi = trial % 2 ? 4000 : 0;  // a range on odd trials
    SCOPED_TRACE(str_cat("trial ", trial));
    const DeviceResult block = eval_on_device(programs, input, lo, hi);
    const DeviceResult serial = eval_serial(programs, input, lo, hi);
    EXPECT_EQ(block.slots, serial.slots);
    EXPECT_EQ(block.error[0], serial.error[0]);
    EXPECT_EQ(block.error[1], serial.error[1]);
    errors += block.error[0] != 0;
  }
  EXPECT_GT(errors, 10);
}

}  // namespace

#endif  // INPLACE_WITH_CUDA
