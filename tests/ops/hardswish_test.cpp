// hardswish, the op added in the three places of docs/extending.md (its row of kUnaryOps, its
// cpu case, its CUDA case): values torch 1.13 computed, at both graph levels, eager and compiled.
#include <gtest/gtest.h>

#include <cstring>

#include "../compiler/differential.h"
#include "frontend/graph_json.h"
#include "test_util.h"

namespace inplace {
namespace {

using namespace inplace::testing;

// torch.nn.functional.hardswish on these inputs (torch 1.13, cpu), as float32 bit patterns:
// x * min(max(x + 3, 0), 6) / 6, -0.0 below -3, NaN kept.
const std::vector<float> kX = {-4.0f, -3.0f, -1.5f, -0.25f, 0.0f, 0.5f, 2.9f, 3.0f, 7.5f, NAN};
const uint32_t kTorchF32[] = {2147483648u, 2147483648u, 3200253952u, 3186272939u, 0u,
                              1049974101u, 1077313973u, 1077936128u, 1089470464u, 2143289344u};
// The same in bfloat16 (torch computes in float and rounds once).
const std::vector<double> kTorchBF16 = {
    -0.0, -0.0, -0.375, -0.11474609375, 0.0, 0.291015625, 2.859375, 3.0, 7.5, NAN};

Tensor x_f32() {
  return Tensor::from_vector<float>(kX, {static_cast<int64_t>(kX.size())});
}

void expect_torch_f32(const Tensor& y) {
  ASSERT_EQ(y.dtype(), DType::kFloat32);
  ASSERT_EQ(y.numel(), static_cast<int64_t>(kX.size()));
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float v = static_cast<float>(y.at(i));
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    EXPECT_EQ(bits, kTorchF32[i]) << "element " << i << " = " << v;
  }
}

std::unique_ptr<Graph> graph(const std::string& target, const std::string& kwargs = "{}") {
  return read_graph_json_string(R"({"format": "inplace.graph", "version": 1, "name": "g",
    "nodes": [
      {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {}},
      {"name": "y", "op": "call_function", "target": ")" +
                                    target + R"(", "args": [{"node": "x"}], "kwargs": )" + kwargs +
                                    R"(},
      {"name": "output", "op": "output", "target": "output", "args": [{"node": "y"}],
       "kwargs": {}}]})",
                                "hardswish");
}

TEST(Hardswish, MatchesTorchBitForBitInFloat32) {
  expect_torch_f32(call_t("aten.hardswish.default", {T(x_f32())}));
  expect_torch_f32(call_t("torch.nn.functional.hardswish", {T(x_f32())}));
}

TEST(Hardswish, Bfloat16RoundsOnceLikeTorch) {
  Tensor y = call_t("hardswish", {T(x_f32().to(DType::kBFloat16))});
  ASSERT_EQ(y.dtype(), DType::kBFloat16);
  for (int64_t i = 0; i < y.numel(); ++i) {
    if (std::isnan(kTorchBF16[i]))
      EXPECT_TRUE(std::isnan(y.at(i)));
    else
      EXPECT_EQ(y.at(i), kTorchBF16[i]) << i;
  }
}

TEST(Hardswish, InPlaceFormsWriteTheirInputOnAStridedView) {
  // torch: F.hardswish(y, inplace=True) on [[-1, 2], [4, -5]].t()
  Tensor y = Tensor::from_vector<float>({-1, 2, 4, -5}, {2, 2}).transpose(0, 1);
  Tensor r = call_t("torch.nn.functional.hardswish", {T(y)}, {{"inplace", B(true)}});
  EXPECT_TRUE(r.same_view(y));
  EXPECT_TRUE(tensor_near(y, {2, 2}, {-0.3333333432674408, 4.0, 1.6666666269302368, -0.0}));
  Tensor z = Tensor::from_vector<float>({-1, 2}, {2});
  call("aten.hardswish_.default", {T(z)});
  EXPECT_TRUE(tensor_near(z, {2}, {-0.3333333432674408, 2 * 5 / 6.0}));
}

TEST(Hardswish, RefusesIntegersAsTorch) {
  // torch: "hardswish_cpu" not implemented for 'Long'
  const std::string msg = error_of([] {
    call("hardswish", {T(Tensor::from_vector<int64_t>({1, 2}, {2}))});
  });
  EXPECT_NE(msg.find("[hardswish] not implemented for int64"), std::string::npos) << msg;
}

TEST(Hardswish, GraphJsonEagerAndCompiledAgreeWithTorch) {
  for (const char* target : {"aten.hardswish.default", "torch.nn.functional.hardswish"}) {
    SCOPED_TRACE(target);
    auto g = graph(target);
    EagerRun eager = run_reference(*g, {x_f32()});
    ASSERT_EQ(eager.outputs.size(), 1u);
    expect_torch_f32(eager.outputs[0]);
    CompiledRun compiled = expect_compiled_equals_eager(*g, {x_f32()});
    ASSERT_EQ(compiled.outputs.size(), 1u);
    expect_torch_f32(compiled.outputs[0]);
  }
}

}  // namespace
}  // namespace inplace
