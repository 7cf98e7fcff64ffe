// A lifted buffer's binding keeps the module's dotted name (what named_buffers() gives), so
// state maps back to the module; only when a node already holds that name does it get another.
#include "compiler/compile.h"
#include "compiler/program_compile.h"
#include "ir/builder.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

TEST(LiftedNames, TheBindingIsTheBuffersDottedName) {
  GraphBuilder b("dotted");
  Node* x = b.placeholder("x");
  Node* cache = b.get_attr("layers.0.k_cache", Tensor::zeros({2, 3}, DType::kFloat32));
  Node* k_cache = b.get_attr("k_cache", Tensor::zeros({2, 3}, DType::kFloat32));
  b.call_method("add_", {cache, x});
  b.call_method("add_", {k_cache, x});
  b.output(arg::tuple({b.call_method("sum", {x})}));
  auto g = b.build();
  CompiledProgram cp = compile(*g, {Tensor::zeros({2, 3}, DType::kFloat32)});
  std::vector<std::string> names;
  for (const Binding& bd : cp.engine->inputs()) names.push_back(bd.name);
  EXPECT_EQ(names, (std::vector<std::string>{"x", "layers.0.k_cache", "k_cache"}));
}

TEST(LiftedNames, ANameAlreadyTakenIsRefusedAsProgramState) {
  // A user input named like the buffer: the engine binds the buffer under another name, and a
  // program refuses it (its state could not be told apart from the input).
  GraphBuilder b("clash");
  Node* x = b.placeholder("state");
  Node* buf = b.get_attr("state", Tensor::zeros({3}, DType::kFloat32));
  b.call_method("add_", {buf, x});
  b.output(arg::tuple({b.call_method("sum", {x})}));
  auto g = b.build();
  CompiledProgram cp = compile(*g, {Tensor::zeros({3}, DType::kFloat32)});
  const std::string bound = cp.engine->inputs()[1].name;
  EXPECT_NE(bound, "state");
  EXPECT_EQ(bound.rfind("state_", 0), 0u) << bound;
  EXPECT_TRUE(
      mentions(error_of([&] {
                 compile_program({{"forward", g.get(), {Tensor::zeros({3}, DType::kFloat32)}, {}}});
               }),
               {"buffer 'state'", "'" + bound + "'"}));
}

}  // namespace
