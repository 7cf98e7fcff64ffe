// A 0-d tensor passed where an op takes a number (torch.full((2,), t), x.add(y, alpha=t)) is a
// runtime value: the engine compiles, reads t when it runs, and equals eager on every fresh t
// (aliased, copy-back and a saved-and-loaded engine). An op whose result shape would depend on
// such a value is refused at compile time, naming the node.
#include "compiler/differential.h"
#include "ir/builder.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Tensor scalar_f(double v, DType dtype = DType::kFloat32) {
  return Tensor::scalar(v, dtype);
}

std::vector<std::vector<Tensor>> draws(const Tensor& x, DType dtype = DType::kFloat32) {
  std::vector<std::vector<Tensor>> d;
  for (double t : {0.5, -3.25, 0.0, 7.0, 1e-3}) d.push_back({x, scalar_f(t, dtype)});
  return d;
}

// return torch.full((2, 3), t), x.add(x, alpha=t), x * t
std::unique_ptr<Graph> torch_level() {
  GraphBuilder b("numbers");
  Node* x = b.placeholder("x");
  b.set_meta(x, {2, 3}, DType::kFloat32);
  Node* t = b.placeholder("t");
  b.set_meta(t, {}, DType::kFloat32);
  Node* full = b.call_function("torch.full", {arg::tuple({2, 3}), t});
  Node* add = b.call_method("add", {x, x}, {{"alpha", t}});
  Node* mul = b.call_function("_operator.mul", {x, t});
  return b.output(arg::tuple({full, add, mul})), b.build();
}

// The same at aten level, and a fill computed in the graph (s = x.sum()).
std::unique_ptr<Graph> aten_level(DType t_dtype) {
  GraphBuilder b("numbers_aten");
  Node* x = b.placeholder("x");
  b.set_meta(x, {2, 3}, DType::kFloat32);
  Node* t = b.placeholder("t");
  b.set_meta(t, {}, t_dtype);
  Node* full = b.call_function("aten.full.default", {arg::ints({2, 3}), t});
  Node* add = b.call_function("aten.add.Tensor", {x, x}, {{"alpha", t}});
  Node* s = b.call_function("aten.sum.default", {x});
  Node* fill = b.call_function("aten.full_like.default", {x, s});
  // In place with a number operand: x.add_(x, alpha=t).
  b.call_function("aten.add_.Tensor", {x, x}, {{"alpha", t}});
  return b.output(arg::tuple({full, add, fill})), b.build();
}

TEST(NumberOperand, ZeroDimFloatTensorAsScalarIsReadAtRunTime) {
  const Tensor x = seeded_uniform({2, 3}, 21);
  std::unique_ptr<Graph> g = torch_level();
  EXPECT_EQ(expect_engine_exact_on_draws(*g, {x, scalar_f(0.25)}, draws(x)), 5);
}

TEST(NumberOperand, AtenLevelWithComputedAndFloat64Numbers) {
  const Tensor x = seeded_uniform({2, 3}, 22);
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    std::unique_ptr<Graph> g = aten_level(dtype);
    EXPECT_EQ(expect_engine_exact_on_draws(*g, {x, scalar_f(0.25, dtype)}, draws(x, dtype)), 5);
  }
}

TEST(NumberOperand, AShapeThatDependsOnSuchAValueIsRefusedNamingTheNode) {
  GraphBuilder b("ranged");
  Node* t = b.placeholder("t");
  b.set_meta(t, {}, DType::kFloat32);
  b.output(b.call_function("aten.arange.default", {t}));
  std::unique_ptr<Graph> g = b.build();
  try {
    compile(*g, {scalar_f(4.0)});
    FAIL() << "compiled an arange whose length is a float tensor's value";
  } catch (const Error& e) {
    EXPECT_TRUE(mentions(e.what(), {"arange", "depends on the value"})) << e.what();
  }
}

}  // namespace
