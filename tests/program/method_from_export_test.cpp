// state_as_attributes: a method in the torch.export form (state placeholders and a signature
// whose buffer_mutation output is the buffer's new value) compiles into a program whose written
// buffer is runtime-owned state by its dotted name and whose parameter is a weight.
#include <gtest/gtest.h>

#include "inplace/program.h"
#include "ir/builder.h"

using namespace inplace;

namespace {

// total' = total + x (a buffer_mutation), returns total' * w
std::unique_ptr<Graph> exported_accumulate() {
  GraphBuilder b("accumulate");
  Node* x = b.placeholder("x");
  Node* total = b.placeholder("layers_0_total");
  Node* w = b.placeholder("scale");
  Node* next = b.call_function("aten.add.Tensor", {total, x});
  b.output(arg::tuple({next, b.call_function("aten.mul.Tensor", {next, w})}));
  std::unique_ptr<Graph> g = b.build();
  g->signature.inputs = {{"user_input", "x", ""},
                         {"buffer", "layers_0_total", "layers.0.total"},
                         {"parameter", "scale", "scale"}};
  g->signature.outputs = {{"buffer_mutation", "layers.0.total"}, {"user_output", ""}};
  return g;
}

TEST(MethodFromExport, BufferMutationBecomesStateAndParameterAWeight) {
  std::unique_ptr<Graph> exported = exported_accumulate();
  State state = {{"layers.0.total", Tensor::zeros({3}, DType::kFloat32)},
                 {"scale", Tensor::empty({3}, DType::kFloat32)}};
  state["scale"].fill(2.0);
  std::unique_ptr<Graph> g = state_as_attributes(*exported, state);
  EXPECT_EQ(g->placeholders().size(), 1u);
  EXPECT_TRUE(g->signature.empty());
  std::shared_ptr<const Program> p =
      compile_program({{"accumulate", g.get(), {Tensor::zeros({3}, DType::kFloat32)}, {}}});
  ASSERT_EQ(p->state().size(), 1u);
  EXPECT_EQ(p->state()[0].name, "layers.0.total");
  EXPECT_EQ(p->state()[0].ownership, Ownership::kRuntime);
  EXPECT_EQ(p->weights().size(), 1u);
  auto s = p->new_session();
  Tensor x = Tensor::empty({3}, DType::kFloat32);
  x.fill(1.5);
  s->run("accumulate", {{"x", x}});
  std::vector<Tensor> out = s->run("accumulate", {{"x", x}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_double_vector(), std::vector<double>(3, 6.0));  // (1.5 + 1.5) * 2
  EXPECT_EQ(s->state("layers.0.total").to_double_vector(), std::vector<double>(3, 3.0));
  EXPECT_EQ(state["layers.0.total"].to_double_vector(), std::vector<double>(3, 0.0));
}

TEST(MethodFromExport, MissingStateTensorIsNamed) {
  std::unique_ptr<Graph> exported = exported_accumulate();
  State state = {{"scale", Tensor::zeros({3}, DType::kFloat32)}};
  try {
    state_as_attributes(*exported, state);
    FAIL() << "a buffer without a tensor was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tensor for buffer 'layers.0.total'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
