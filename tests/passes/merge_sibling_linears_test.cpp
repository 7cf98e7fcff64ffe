// merge_sibling_linears on small q/k/v-like graphs (products of one input): constant weights are
// stacked into one new constant, weights that are graph inputs make one grouped product
// (more_weights) of at most four, at a float32 input with bf16 weights and at a half input with
// weights of its dtype, each with its own bias where the products have biases that are inputs
// (more_biases: Qwen2's q, k, v); every engine equals the eager interpreter bitwise on fresh draws
// (and after its engine file is loaded back).
#include <gtest/gtest.h>

#include "compiler/differential.h"
#include "compiler/rewrite_differential.h"
#include "frontend/graph_json.h"
#include "ir/builder.h"

namespace inplace::testing {
namespace {

constexpr int64_t kK = 16;

// y_i = product(x, w_i) for weights of rows[i] x kK rows, read from inputs or from constants;
// `target` the product (aten.linear at a half input, inplace.fused_linear at float32); with
// biased[i] the product adds a bias b_i of x's dtype, an input.
std::unique_ptr<Graph> siblings(DType x_dtype, DType w_dtype, const std::vector<int64_t>& rows,
                                bool constants, const std::string& target,
                                const std::vector<bool>& biased = {}) {
  const std::string xd = dtype_name(x_dtype), wd = dtype_name(w_dtype);
  std::string nodes = str_cat(R"({"name": "x", "op": "placeholder", "target": "x", "args": [],
      "kwargs": {}, "meta": {"shape": [1, 1, )",
                              kK, R"(], "dtype": ")", xd, R"("}})");
  std::string consts, outs;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string w = str_cat("w", i), shape = str_cat("[", rows[i], ", ", kK, "]");
    if (constants) {
      std::string data;
      for (int64_t e = 0; e < rows[i] * kK; ++e)
        data += str_cat(e ? ", " : "", ((e * 7 + i * 3) % 17 - 8) / 16.0);
      consts += str_cat(consts.empty() ? "" : ", ", "\"", w, "\": {\"dtype\": \"", wd,
                        "\", \"shape\": ", shape, ", \"data\": [", data, "]}");
      nodes += str_cat(R"(, {"name": ")", w, R"(", "op": "get_attr", "target": ")", w,
                       R"(", "args": [], "kwargs": {}})");
    } else {
      nodes += str_cat(R"(, {"name": ")", w, R"(", "op": "placeholder", "target": ")", w,
                       R"(", "args": [], "kwargs": {}, "meta": {"shape": )", shape,
                       R"(, "dtype": ")", wd, R"("}})");
    }
    const bool bias = i < biased.size() && biased[i];
    if (bias)
      nodes += str_cat(R"(, {"name": "b)", i, R"(", "op": "placeholder", "target": "b)", i,
                       R"(", "args": [], "kwargs": {}, "meta": {"shape": [)", rows[i],
                       R"(], "dtype": ")", xd, R"("}})");
    nodes += str_cat(R"(, {"name": "y)", i, R"(", "op": "call_function", "target": ")", target,
                     R"(", "args": [{"node": "x"}, {"node": ")", w, R"("})",
                     bias ? str_cat(R"(, {"node": "b)", i, R"("})") : "", R"(], "kwargs": {}})");
    outs += str_cat(i ? ", " : "", R"({"node": "y)", i, R"("})");
  }
  nodes +=
      str_cat(R"(, {"name": "output", "op": "output", "target": "output", "args": [{"tuple": [)",
              outs, "]}], \"kwargs\": {}}");
  return read_graph_json_string(
      str_cat(R"({"format": "inplace.graph", "version": 1, "name": "siblings", "nodes": [)", nodes,
              R"(], "constants": {)", consts, "}}"),
      "siblings");
}

CompileOptions merging() {
  CompileOptions o;
  o.merge_sibling_linears = true;
  return o;
}

std::vector<std::vector<Tensor>> draws_of(const Graph& g) {
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s = 1; s <= 3; ++s) {
    std::vector<Tensor> in;
    for (Node* p : g.placeholders())
      in.push_back(seeded_uniform(*p->meta.shape, s * 29 + static_cast<uint32_t>(in.size()))
                       .to(*p->meta.dtype));
    draws.push_back(in);
  }
  return draws;
}

// The plan of g compiled with the merge, after checking it equals eager on fresh draws.
std::string merged_plan(const Graph& g) {
  const auto draws = draws_of(g);
  EXPECT_EQ(expect_engine_exact_on_draws(g, draws[0], draws, 0, merging()), 3);
  return compile(g, clones(draws[0]), merging()).engine->describe();
}

TEST(MergeSiblingLinears, ConstantWeightsAreStackedAtFloat32AndAtAHalfInput) {
  for (DType x : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(x));
    const DType w = x == DType::kFloat32 ? DType::kBFloat16 : x;
    auto g = siblings(x, w, {24, 8, 8}, /*constants=*/true,
                      x == DType::kFloat32 ? "inplace.fused_linear" : "aten.linear.default");
    const std::string plan = merged_plan(*g);
    EXPECT_EQ(count_of(plan, "= fused_linear("), 1) << plan;
    EXPECT_EQ(count_of(plan, "[40,16]"), 1) << plan;  // the stacked weight
  }
}

TEST(MergeSiblingLinears, InputWeightsMakeOneGroupedProductOfAtMostFour) {
  for (DType x : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(x));
    const DType w = x == DType::kFloat32 ? DType::kBFloat16 : x;
    const std::string target =
        x == DType::kFloat32 ? "inplace.fused_linear" : "aten.linear.default";
    auto g = siblings(x, w, {24, 8, 8}, /*constants=*/false, target);
    std::string plan = merged_plan(*g);
    EXPECT_EQ(count_of(plan, "= fused_linear("), 1) << plan;
    EXPECT_EQ(count_of(plan, "weight_bytes: 0"), 1) << plan;  // no stacked copy
    // Six products: four in one, then two.
    g = siblings(x, w, {8, 16, 8, 8, 24, 8}, /*constants=*/false, target);
    plan = merged_plan(*g);
    EXPECT_EQ(count_of(plan, "= fused_linear("), 2) << plan;
  }
}

// Products with biases (inputs) group with one another, each weight with its own bias, never a
// concatenated copy; products with and without a bias do not group together.
TEST(MergeSiblingLinears, BiasedProductsGroupWithTheirOwnBiases) {
  for (DType x : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(x));
    const DType w = x == DType::kFloat32 ? DType::kBFloat16 : x;
    const std::string target =
        x == DType::kFloat32 ? "inplace.fused_linear" : "aten.linear.default";
    auto g = siblings(x, w, {24, 8, 8}, /*constants=*/false, target, {true, true, true});
    std::string plan = merged_plan(*g);
    EXPECT_EQ(count_of(plan, "= fused_linear("), 1) << plan;
    EXPECT_EQ(count_of(plan, "weight_bytes: 0"), 1) << plan;  // no stacked copy
    EXPECT_EQ(count_of(plan, "[40]"), 0) << plan;             // nor a concatenated bias
    // Biased, plain, biased, plain: two groups of two.
    g = siblings(x, w, {8, 16, 8, 8}, /*constants=*/false, target, {true, false, true, false});
    plan = merged_plan(*g);
    EXPECT_EQ(count_of(plan, "= fused_linear("), 2) << plan;
  }
}

TEST(MergeSiblingLinears, Float32WeightsAreLeftApart) {
  auto g = siblings(DType::kFloat32, DType::kFloat32, {8, 8}, /*constants=*/false,
                    "inplace.fused_linear");
  const std::string plan = merged_plan(*g);
  EXPECT_EQ(count_of(plan, "= fused_linear("), 2) << plan;
}

// A float32 layer whose bf16 q/k/v weights are inputs: the grouped product takes the norm
// (fuse_norm_prologues) and the rotation of q and k (fuse_rotary_epilogues, its rotated prefix
// spanning two weights' columns) and keeps its more_weights; bitwise eager.
TEST(MergeSiblingLinears, GroupedProductTakesTheNormAndTheRotary) {
  GraphBuilder b("layer");
  Node* x = b.placeholder("x");
  Node* nw = b.placeholder("nw");
  Node* wq = b.placeholder("wq");
  Node* wk = b.placeholder("wk");
  Node* wv = b.placeholder("wv");
  Node* cos = b.placeholder("cos");
  Node* sin = b.placeholder("sin");
  Node* h = b.call_function("aten.rms_norm.default", {x, arg::ints({32}), nw, 1e-5});
  auto head = [&](Node* w, int64_t heads) {
    Node* y = b.call_function("inplace.fused_linear", {h, w});
    Node* v = b.call_function("aten.view.default", {y, arg::ints({1, 1, heads, 8})});
    return b.call_function("aten.transpose.int", {v, 1, 2});
  };
  Node* q = b.call_function("inplace.rotary_embedding", {head(wq, 4), cos, sin});
  Node* k = b.call_function("inplace.rotary_embedding", {head(wk, 2), cos, sin});
  Node* v = b.call_function("inplace.fused_linear", {h, wv});
  b.output(arg::tuple({q, k, v}));
  auto g = b.build();
  const Shape shapes[] = {{1, 1, 32}, {32},         {32, 32},    {16, 32},
                          {16, 32},   {1, 1, 1, 8}, {1, 1, 1, 8}};
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s = 1; s <= 3; ++s) {
    std::vector<Tensor> in;
    for (const Shape& shape : shapes) {
      const bool weight = in.size() >= 2 && in.size() <= 4;
      in.push_back(seeded_uniform(shape, s * 41 + static_cast<uint32_t>(in.size()))
                       .to(weight ? DType::kBFloat16 : DType::kFloat32));
    }
    draws.push_back(in);
  }
  CompileOptions o = merging();
  o.fuse_norm_prologues = true;
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0, o), 3);
  const std::string plan = compile(*g, clones(draws[0]), o).engine->describe();
  EXPECT_EQ(count_of(plan, "= rms_norm_linear("), 1) << plan;
  EXPECT_EQ(count_of(plan, "rotary_embedding"), 0) << plan;
  EXPECT_EQ(count_of(plan, "input3[16,32]:bfloat16, input4[16,32]:bfloat16"), 1) << plan;
}

}  // namespace
}  // namespace inplace::testing
