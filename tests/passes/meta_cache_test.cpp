// The metas cached between passes (MetaCache, passes/meta_inference.h): after every pass of the
// whole pipeline, on the built-in decoder with every fusion on and on a Hugging Face export, the
// cache holds exactly what inferring every node afresh gives, while inferring far fewer nodes;
// a change the stamp cannot see is picked up once the pass invalidates the node.
#include <gtest/gtest.h>

#include "backend/fusion_preferences.h"
#include "frontend/graph_json.h"
#include "models/llama.h"
#include "passes/meta_inference.h"
#include "passes/pipeline.h"
#include "test_util.h"

namespace inplace {
using namespace inplace::testing;
namespace {

bool same(const Value& a, const Value& b) {
  if (a.kind != b.kind || a.i != b.i || a.b != b.b || a.items.size() != b.items.size())
    return false;
  if (a.is_tensor() &&
      (a.tensor.shape() != b.tensor.shape() || a.tensor.dtype() != b.tensor.dtype() ||
       a.tensor.strides() != b.tensor.strides() || a.tensor.offset() != b.tensor.offset()))
    return false;
  for (size_t k = 0; k < a.items.size(); ++k)
    if (!same(a.items[k], b.items[k])) return false;
  return true;
}

// Runs the whole pipeline pass by pass; after each, the cache equals fresh inference. Returns
// the metas the cache inferred.
int64_t walk(Graph& g, PassContext& ctx, int64_t* fresh_total) {
  *fresh_total = 0;
  for (auto& pass : compile_passes()) {
    SCOPED_TRACE("after " + pass->name());
    pass->run(g, ctx);
    const MetaTable fresh = infer_metas(g, ctx.options);
    const MetaTable& cached = cached_metas(g, ctx);
    for (const Node* n : g.nodes()) {
      *fresh_total += 1;
      const Value* a = fresh.find(n);
      const Value* b = cached.find(n);
      EXPECT_EQ(a != nullptr, b != nullptr) << n->to_string();
      if (a && b) EXPECT_TRUE(same(*a, *b)) << n->to_string();
    }
  }
  return ctx.meta_cache->inferred();
}

TEST(MetaCache, EqualsFreshInferenceAfterEveryPassOfTheDecoder) {
  const models::LlamaConfig c = models::llama_config("tiny", 64, 1, DType::kBFloat16);
  const auto g = models::llama_decode_graph(c, models::llama_weights(c));
  const std::vector<Tensor> in = models::llama_example_inputs(c, 1);
  PassContext ctx;
  const auto ph = g->placeholders();
  for (size_t i = 0; i < ph.size(); ++i) {
    Meta m;
    m.shape = in[i].shape();
    m.dtype = in[i].dtype();
    ctx.options.input_metas[ph[i]->name] = m;
  }
  ctx.options.merge_sibling_linears = ctx.options.fuse_norm_prologues = true;
  int64_t fresh = 0;
  const int64_t inferred = walk(*g, ctx, &fresh);
  // Each pass would otherwise infer every node; the cache infers the rewritten ones.
  EXPECT_LT(inferred * 3, fresh);
}

TEST(MetaCache, EqualsFreshInferenceAfterEveryPassOfAnHfExport) {
  auto g = read_graph_json(std::string(INPLACE_SOURCE_DIR) +
                           "/tests/compiler/fixtures/hf_style_make_fx.json");
  PassContext ctx;
  int64_t fresh = 0;
  walk(*g, ctx, &fresh);
}

TEST(MetaCache, InvalidateRefreshesWhatTheStampCannotSee) {
  Graph g;
  Node* c = g.add_node(NodeOp::kGetAttr, "w");
  Node* r = g.add_node(NodeOp::kCallFunction, "aten.relu.default", {Value::node_ref(c)});
  g.add_node(NodeOp::kOutput, "output", {Value::node_ref(r)});
  g.constants["w"] = Tensor::zeros({2, 3}, DType::kFloat32);
  PassContext ctx;
  EXPECT_EQ(cached_metas(g, ctx).tensor(r)->shape(), (Shape{2, 3}));
  // A constant replaced under the same target with the same shape but another dtype.
  g.constants["w"] = Tensor::zeros({2, 3}, DType::kFloat64);
  ctx.meta_cache->invalidate(c);
  EXPECT_EQ(cached_metas(g, ctx).tensor(r)->dtype(), DType::kFloat64);
  // Unchanged graph: nothing is inferred again.
  const int64_t before = ctx.meta_cache->inferred();
  cached_metas(g, ctx);
  EXPECT_EQ(ctx.meta_cache->inferred(), before);
}

TEST(FusionPreferences, PassDefaultsAreTheCpuBackendsAndCompileReadsTheDevices) {
  const PassOptions defaults;
  const FusionPreferences cpu = fusion_preferences(DeviceType::kCpu);
  EXPECT_EQ(defaults.decode_max_rows, cpu.decode_max_rows);
  EXPECT_EQ(defaults.merge_sibling_linears, cpu.merge_sibling_linears);
  EXPECT_EQ(defaults.fuse_norm_prologues, cpu.fuse_norm_prologues);
  EXPECT_GT(cpu.decode_max_rows, 0);
  EXPECT_FALSE(cpu.merge_sibling_linears);
#ifdef INPLACE_WITH_CUDA
  const FusionPreferences cuda = fusion_preferences(DeviceType::kCuda);
  EXPECT_TRUE(cuda.merge_sibling_linears);
  EXPECT_TRUE(cuda.fuse_norm_prologues);
  EXPECT_EQ(cuda.decode_max_rows, 4);
  EXPECT_TRUE(cuda.fuse_pointwise);  // cuda has the fused_pointwise kernel
#endif
}

}  // namespace
}  // namespace inplace
