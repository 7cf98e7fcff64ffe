// The cpu's checks of fuse_pointwise's steps (tests/passes): random chains compiled with and
// without the pass, both run on the chain's inputs, every output bitwise equal; random programs
// given to a fused op, each refused naming the op or run without fault.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "backend/eager_call.h"
#include "compiler/rewrite_differential.h"
#include "ops/fused_pointwise_args.h"
#include "ops/registry.h"
#include "passes/pointwise_chains.h"

namespace inplace::testing {

// Seeds 1..seeds, each chain written with options_of(seed), the fused engine compiled with
// `with`; returns how many fused plans hold `step` ("= fused_rows(", ...).
template <typename OptionsOf>
int fused_random_chains(uint32_t seeds, OptionsOf&& options_of, const std::string& step,
                        const CompileOptions& with = {}) {
  int fused_graphs = 0;
  for (uint32_t seed = 1; seed <= seeds; ++seed) {
    SCOPED_TRACE(str_cat("seed ", seed));
    std::vector<Tensor> inputs;
    ChainWriter w(seed, options_of(seed));
    std::unique_ptr<Graph> g = w.write(&inputs);
    set_cast_dtypes(*g, seed);
    CompileOptions without;
    without.skip_passes = {"fuse_pointwise"};
    std::unique_ptr<CompiledOnce> without_pass;
    try {
      without_pass = std::make_unique<CompiledOnce>(*g, inputs, without);
    } catch (const Error& e) {
      continue;  // a draw eager refuses too (a dtype an op lacks)
    }
    CompiledOnce with_pass(*g, inputs, with);
    EngineCall a = with_pass.call(inputs), b = without_pass->call(inputs);
    EXPECT_EQ(a.outputs.size(), b.outputs.size());
    for (size_t j = 0; j < std::min(a.outputs.size(), b.outputs.size()); ++j)
      EXPECT_TRUE(bitwise_equal(a.outputs[j], b.outputs[j])) << "output " << j << "\n"
                                                             << with_pass.plan() << "\n"
                                                             << without_pass->plan();
    fused_graphs += count_of(with_pass.plan(), step) > 0;
  }
  return fused_graphs;
}

// 4000 programs of mostly well-formed fields (opcodes below `opcodes`, small dtypes and register
// numbers), some wild ones, a trailing int now and then, over a float32 input [4, 3] (0-dim now
// and then) and an int64 [3]: what `op`'s shape rule accepts its cpu kernel runs without fault,
// and every refusal names `op`. Returns how many were accepted.
inline int random_programs_refused_or_run(const char* op_name, uint32_t seed, int opcodes) {
  const OpDef* op = Registry::get().find(op_name);
  EXPECT_NE(op, nullptr);
  if (!op) return 0;
  std::mt19937 rng(seed);
  int accepted = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const int n = static_cast<int>(rng() % 5 + 2);
    std::vector<int64_t> program;
    for (int i = 0; i < n; ++i) {
      const int64_t fields[pointwise::kWidth] = {
          i == n - 1 ? 8 : static_cast<int64_t>(rng() % opcodes),
          rng() % 2 ? 0 : static_cast<int64_t>(rng() % 11),
          static_cast<int64_t>(rng() % (i + 2)),
          static_cast<int64_t>(rng() % (i + 2)),
          static_cast<int64_t>(rng() % (i + 2)),
          static_cast<int64_t>(rng() % 3)};
      for (int64_t f : fields) program.push_back(rng() % 50 == 0 ? int64_t(rng()) - (1 << 30) : f);
    }
    if (trial % 9 == 0) program.push_back(1);
    const Shape shape = trial % 7 == 0 ? Shape{} : Shape{4, 3};
    Args args = {Value::list({Value::from_tensor(Tensor::meta(shape, DType::kFloat32)),
                              Value::from_tensor(Tensor::meta({3}, DType::kInt64))}),
                 Value::int_list(program)};
    try {
      std::vector<Tensor> metas = op->infer(args);
      ++accepted;
      Tensor a = seeded_uniform(shape, trial), bi = Tensor::zeros({3}, DType::kInt64);
      Value r = eager_call(*op, {Value::list({Value::from_tensor(a), Value::from_tensor(bi)}),
                                 Value::int_list(program)});
      EXPECT_EQ(r.tensor.shape(), metas[0].shape());
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(op_name), std::string::npos) << e.what();
    }
  }
  return accepted;
}

}  // namespace inplace::testing
