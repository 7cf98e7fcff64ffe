// The cpu's differential check of fuse_pointwise over random chains (tests/passes): each chain
// compiled with and without the pass, both run on the chain's inputs, every output bitwise equal.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "compiler/rewrite_differential.h"
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

}  // namespace inplace::testing
