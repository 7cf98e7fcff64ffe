// One reading rule for inputs: every input is read when execute() runs, whatever its strides.
// A strided read-only input is gathered per call, so the caller's updates between calls show.
#include "engine/contract_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

TEST(StridedInput, CallerUpdatesBetweenCallsAreSeen) {
  auto g = state_update_graph();
  for (bool alias : {true, false}) {
    SCOPED_TRACE(alias ? "aliased" : "copy-back");
    Tensor state = Tensor::zeros({4, 4}, DType::kFloat32);
    Tensor ref_state = state.clone();
    Tensor base = iota({4, 4});
    Tensor x = base.transpose(0, 1);  // non-contiguous, read-only
    ASSERT_FALSE(x.is_contiguous());
    ExecutionContext ctx(compile_both(*g, {state, x.clone()}, alias).engine);
    ctx.bind_input(0, state);
    ctx.bind_input(1, x);
    for (int call = 0; call < 3; ++call) {
      std::vector<Tensor> out = ctx.execute();
      std::vector<Tensor> ref = eager_outputs(*g, {"state", "x"}, {ref_state, x});
      EXPECT_TRUE(tensor_equal(out[0], ref[0])) << "call " << call;
      EXPECT_TRUE(tensor_equal(state, ref_state)) << "call " << call;
      // The caller updates its tensor in place between calls, without binding again.
      for (int64_t k = 0; k < 16; ++k) base.data<float>()[k] += 10.0f * (call + 1);
    }
  }
}

TEST(StridedInput, ContiguousAndStridedInputsAreReadAlike) {
  auto g = state_update_graph();
  Tensor base = iota({4, 8});
  Tensor strided = base.slice(1, 0, 8, 2);  // every other column
  Tensor dense = strided.clone();
  Tensor s1 = Tensor::zeros({4, 4}, DType::kFloat32), s2 = s1.clone();
  auto engine = compile_both(*g, {s1, dense}, true).engine;
  ExecutionContext c1(engine), c2(engine);
  c1.bind_input(0, s1);
  c1.bind_input(1, strided);
  c2.bind_input(0, s2);
  c2.bind_input(1, dense);
  for (int call = 0; call < 2; ++call) {
    Tensor o1 = c1.execute()[0], o2 = c2.execute()[0];
    EXPECT_TRUE(tensor_equal(o1, o2)) << "call " << call;
    EXPECT_TRUE(tensor_equal(s1, s2)) << "call " << call;
    base.data<float>()[0] += 100.0f;
    dense.data<float>()[0] += 100.0f;
  }
}

}  // namespace
