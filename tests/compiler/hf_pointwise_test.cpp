// fuse_pointwise on the Hugging Face graphs (torch.export's Llama, Qwen2 and GPT-2 decode steps,
// and the make_fx capture of the Hugging Face-style module): what the named fusions leave of
// the elementwise chains becomes fused_pointwise steps, so the plan runs fewer steps, and every
// output and cache is bitwise the plan's without the pass.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "frontend/graph_json.h"

namespace inplace::testing {
namespace {

size_t steps(const Graph& g, const std::vector<Tensor>& example, CompileOptions o) {
  return compile(g, clones(example), o).engine->plan().steps.size();
}

TEST(HfPointwise, DecodeStepsRunFewerStepsAndStayBitwise) {
  const std::string dir = std::string(INPLACE_SOURCE_DIR) + "/tests/";
  for (const char* file :
       {"frontend/fixtures/hf/llama.json", "frontend/fixtures/hf/qwen2.json",
        "frontend/fixtures/hf/gpt2.json", "compiler/fixtures/hf_style_make_fx.json"}) {
    SCOPED_TRACE(file);
    auto g = read_graph_json(dir + file);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t s = 1; s <= 3; ++s) draws.push_back(seeded_hf_inputs(*g, s * 7, 32));
    const std::string plan = expect_rewrite_exact(*g, draws[0], draws, {"fuse_pointwise"}, 0);
    // GPT-2's one chain (its GELU-tanh) is c_fc's epilogue (fuse_product_epilogues).
    if (std::string(file).find("gpt2") == std::string::npos)
      EXPECT_GT(count_of(plan, "fused_pointwise"), 0) << plan;
    CompileOptions without;
    without.skip_passes = {"fuse_pointwise"};
    const size_t fused = steps(*g, draws[0], {}), unfused = steps(*g, draws[0], without);
    std::printf("[fuse_pointwise] %s: %zu steps, %zu without the pass\n", file, fused, unfused);
    EXPECT_LT(fused, unfused);
  }
}

}  // namespace
}  // namespace inplace::testing
