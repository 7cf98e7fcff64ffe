// Overlapping bindings: a binding the engine writes (a mutated input, a bound output) may not
// share memory with any other binding — execute() refuses, naming both — in the aliased and
// the copy-back engine alike; read-only inputs may share memory.
#include "engine/contract_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

std::shared_ptr<const Engine> state_engine(bool alias) {
  auto g = state_update_graph();
  return compile_both(
             *g, {Tensor::zeros({4, 4}, DType::kFloat32), Tensor::zeros({4, 4}, DType::kFloat32)},
             alias)
      .engine;
}

TEST(BindingOverlap, MutatedInputSharingMemoryWithAnInputIsRefused) {
  for (bool alias : {true, false}) {
    SCOPED_TRACE(alias ? "aliased" : "copy-back");
    ExecutionContext ctx(state_engine(alias));
    Tensor t = iota({4, 4});
    ctx.bind_input(0, t);
    ctx.bind_input(1, t);  // the same tensor as state and as x
    std::string msg = error_of([&] { ctx.execute(); });
    EXPECT_TRUE(mentions(msg, {"[execute]", "input 'state'", "input 'x'", "overlaps"})) << msg;
    EXPECT_TRUE(tensor_equal(t, iota({4, 4})));

    // A partial overlap: x is a view reaching into state's rows.
    Tensor big = Tensor::zeros({8, 4}, DType::kFloat32);
    ctx.bind_input(0, big.slice(0, 0, 4));
    ctx.bind_input(1, big.slice(0, 3, 7));
    EXPECT_TRUE(mentions(error_of([&] { ctx.execute(); }), {"input 'state'", "input 'x'"}));

    // Adjacent, not overlapping: runs, with eager's result.
    Tensor state = big.slice(0, 0, 4), x = big.slice(0, 4, 8);
    for (int64_t k = 0; k < 16; ++k) x.data<float>()[k] = 1.0f + k;
    ctx.bind_input(0, state);
    ctx.bind_input(1, x);
    std::vector<Tensor> out = ctx.execute();
    Tensor ref_state = Tensor::zeros({4, 4}, DType::kFloat32);
    auto g = state_update_graph();
    std::vector<Tensor> ref = eager_outputs(*g, {"state", "x"}, {ref_state, x.clone()});
    EXPECT_TRUE(tensor_equal(out[0], ref[0]));
    EXPECT_TRUE(tensor_equal(state, ref_state));
  }
}

TEST(BindingOverlap, ReadOnlyInputsMayShareMemory) {
  // y = a + b, nothing mutated: one tensor bound to both is fine.
  Graph g;
  Node* a = g.add_node(NodeOp::kPlaceholder, "a", {}, {}, "a");
  Node* b = g.add_node(NodeOp::kPlaceholder, "b", {}, {}, "b");
  Node* y = g.add_node(NodeOp::kCallFunction, "aten.add.Tensor", {N(a), N(b)});
  g.add_node(NodeOp::kOutput, "output", {Tup({N(y)})});
  Tensor t = iota({3, 3});
  for (bool alias : {true, false}) {
    ExecutionContext ctx(compile_both(g, {t, t}, alias).engine);
    ctx.bind_input(0, t);
    ctx.bind_input(1, t);
    std::vector<Tensor> out = ctx.execute();
    std::vector<Tensor> ref = eager_outputs(g, {"a", "b"}, {t, t});
    EXPECT_TRUE(tensor_equal(out[0], ref[0]));
  }
}

TEST(BindingOverlap, BoundOutputOntoAnInputIsRefused) {
  // c = a @ b with its output bound to a: refused, a untouched.
  Graph g;
  Node* a = g.add_node(NodeOp::kPlaceholder, "a", {}, {}, "a");
  Node* b = g.add_node(NodeOp::kPlaceholder, "b", {}, {}, "b");
  Node* c = g.add_node(NodeOp::kCallFunction, "aten.matmul.default", {N(a), N(b)});
  g.add_node(NodeOp::kOutput, "output", {Tup({N(c)})});
  Tensor at = iota({3, 3}), bt = iota({3, 3});
  for (bool alias : {true, false}) {
    SCOPED_TRACE(alias ? "aliased" : "copy-back");
    ExecutionContext ctx(compile_both(g, {at, bt}, alias).engine);
    ctx.bind_input(0, at);
    ctx.bind_input(1, bt);
    ctx.bind_output(0, at);
    std::string msg = error_of([&] { ctx.execute(); });
    EXPECT_TRUE(mentions(msg, {"[execute]", "output 'output.0'", "input 'a'", "overlaps"})) << msg;
    EXPECT_TRUE(tensor_equal(at, iota({3, 3})));
    // Bound to memory of its own, the output gets eager's result.
    Tensor c_out = Tensor::zeros({3, 3}, DType::kFloat32);
    ctx.bind_output(0, c_out);
    std::vector<Tensor> out = ctx.execute();
    EXPECT_EQ(out[0].data_ptr(), c_out.data_ptr());
    EXPECT_TRUE(tensor_equal(c_out, eager_outputs(g, {"a", "b"}, {at, bt})[0]));
  }
}

TEST(BindingOverlap, TwoBoundOutputsSharingMemoryAreRefused) {
  Graph g;
  Node* a = g.add_node(NodeOp::kPlaceholder, "a", {}, {}, "a");
  Node* y = g.add_node(NodeOp::kCallFunction, "aten.mul.Tensor", {N(a), F(2.0)});
  Node* z = g.add_node(NodeOp::kCallFunction, "aten.add.Tensor", {N(a), F(1.0)});
  g.add_node(NodeOp::kOutput, "output", {Tup({N(y), N(z)})});
  Tensor at = iota({4});
  ExecutionContext ctx(compile_both(g, {at}, true).engine);
  ctx.bind_input(0, at);
  Tensor shared = Tensor::zeros({4}, DType::kFloat32);
  ctx.bind_output(0, shared);
  ctx.bind_output(1, shared);
  EXPECT_TRUE(
      mentions(error_of([&] { ctx.execute(); }), {"output 'output.0'", "output 'output.1'"}));
}

}  // namespace

TEST(BindingOverlap, ReadOnlyInputBoundAgainAfterACheckedCallIsCheckedAgain) {
  // A decode loop binds a fresh read-only input each call; after the first call's full check
  // only that input is checked again, against the written bindings: an overlap is still found.
  for (bool alias : {true, false}) {
    SCOPED_TRACE(alias ? "aliased" : "copy-back");
    ExecutionContext ctx(state_engine(alias));
    Tensor big = Tensor::zeros({8, 4}, DType::kFloat32);
    Tensor state = big.slice(0, 0, 4);
    ctx.bind_input(0, state);
    ctx.bind_input(1, iota({4, 4}));
    ctx.execute();  // the full check passed
    Tensor before = state.clone();
    ctx.bind_input(1, big.slice(0, 2, 6));  // reaches into state's rows
    std::string msg = error_of([&] { ctx.execute(); });
    EXPECT_TRUE(mentions(msg, {"[execute]", "input 'state'", "input 'x'", "overlaps"})) << msg;
    EXPECT_TRUE(tensor_equal(state, before));
    ctx.bind_input(1, big.slice(0, 4, 8));  // adjacent again: runs
    ctx.execute();
  }
}
