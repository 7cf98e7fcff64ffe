// Failed calls. The aliased engine writes caller memory as it goes: when a step fails after
// the k-cache was written, the error names the partly updated tensor and the context refuses
// further calls until the caller rebinds it or resets the context. The copy-back engine is
// all or nothing: a failed call leaves every input as it was, and the next call just runs.
#include "engine/contract_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// k_cache <- kv_cache_update(k_cache, k, pos); v_cache <- index_copy(v_cache, 2, idx, v): the
// v-cache write takes its index at run time, after the k-cache was written.
struct TwoCaches {
  Graph g;
  std::vector<std::string> names = {"k_cache", "v_cache", "k", "v", "pos", "idx"};
  TwoCaches() {
    std::vector<Node*> p;
    for (const std::string& n : names) p.push_back(g.add_node(NodeOp::kPlaceholder, n, {}, {}, n));
    Node* ku =
        g.add_node(NodeOp::kCallFunction, "inplace.kv_cache_update", {N(p[0]), N(p[2]), N(p[4])});
    Node* vu = g.add_node(NodeOp::kCallFunction, "aten.index_copy.default",
                          {N(p[1]), I(2), N(p[5]), N(p[3])});
    g.add_node(NodeOp::kOutput, "output", {Tup({N(ku), N(vu)})});
  }
  std::vector<Tensor> inputs(int64_t pos, int64_t idx) const {
    return {Tensor::full({1, 2, 8, 4}, Scalar(7.0), DType::kFloat32),
            Tensor::full({1, 2, 8, 4}, Scalar(7.0), DType::kFloat32),
            Tensor::full({1, 2, 1, 4}, Scalar(1.0), DType::kFloat32),
            Tensor::full({1, 2, 1, 4}, Scalar(2.0), DType::kFloat32),
            lt({pos}, {1}),
            lt({idx}, {1})};
  }
  std::shared_ptr<const Engine> engine(bool alias) const {
    EngineOptions o;
    o.alias = alias;
    return Engine::build(g, {{0, 0}, {1, 1}}, 0, inputs(0, 0), o);
  }
};

void bind_all(ExecutionContext& ctx, const std::vector<Tensor>& in) {
  for (size_t i = 0; i < in.size(); ++i) ctx.bind_input(static_cast<int>(i), in[i]);
}

TEST(FailedCall, AliasedEngineNamesPartlyUpdatedInputsAndRefusesUntilRebound) {
  TwoCaches tc;
  auto engine = tc.engine(true);
  ASSERT_EQ(engine->aliased_io().size(), 2u) << engine->describe();
  ExecutionContext ctx(engine);
  std::vector<Tensor> in = tc.inputs(3, 9);  // idx 9 is out of range for 8 slots
  bind_all(ctx, in);
  std::string msg = error_of([&] { ctx.execute(); });
  EXPECT_TRUE(mentions(msg, {"index_copy", "out of bounds", "partly updated", "'k_cache'"})) << msg;
  EXPECT_EQ(msg.find("'v_cache', which"), std::string::npos) << msg;
  // What the message says: the k-cache row was written, the v-cache was not.
  EXPECT_DOUBLE_EQ(in[0].select(2, 3).to_double_vector()[0], 1.0);
  for (double v : in[1].to_double_vector()) ASSERT_EQ(v, 7.0);

  // Until the caller rebinds the k-cache, every call is refused, naming it.
  in[5].data<int64_t>()[0] = 4;
  msg = error_of([&] { ctx.execute(); });
  EXPECT_TRUE(mentions(msg, {"[execute]", "'k_cache'", "partly updated", "reset()"})) << msg;
  ctx.bind_input(1, in[1]);  // rebinding another input does not clear it
  EXPECT_TRUE(mentions(error_of([&] { ctx.execute(); }), {"'k_cache'"}));

  // Rebound (to a restored cache): runs, with eager's values.
  std::vector<Tensor> fresh = tc.inputs(3, 4);
  ctx.bind_input(0, fresh[0]);
  std::vector<Tensor> out = ctx.execute();
  std::vector<Tensor> ref = eager_outputs(tc.g, tc.names, tc.inputs(3, 4));
  EXPECT_TRUE(tensor_equal(fresh[0], ref[0]));
  EXPECT_TRUE(tensor_equal(in[1], ref[1]));
  EXPECT_EQ(out[0].data_ptr(), fresh[0].data_ptr());
}

TEST(FailedCall, ResetAcceptsThePartlyUpdatedState) {
  TwoCaches tc;
  ExecutionContext ctx(tc.engine(true));
  std::vector<Tensor> in = tc.inputs(0, 8);
  bind_all(ctx, in);
  EXPECT_THROW(ctx.execute(), Error);
  in[5].data<int64_t>()[0] = 1;
  in[4].data<int64_t>()[0] = 1;
  // Valid indices now, but the context still refuses: the k-cache was partly updated.
  EXPECT_TRUE(mentions(error_of([&] { ctx.execute(); }), {"partly updated", "'k_cache'"}));
  ctx.reset();
  ctx.execute();
  EXPECT_DOUBLE_EQ(in[0].select(2, 0).to_double_vector()[0], 1.0);  // the failed call's row
  EXPECT_DOUBLE_EQ(in[0].select(2, 1).to_double_vector()[0], 1.0);
  EXPECT_DOUBLE_EQ(in[1].select(2, 1).to_double_vector()[0], 2.0);
}

TEST(FailedCall, CheckBeforeTheFirstWriteLeavesTheContextUsable) {
  // The k-cache position is out of range: kv_cache_update checks it before writing anything,
  // so nothing is partly updated and the next call runs without a rebind.
  TwoCaches tc;
  ExecutionContext ctx(tc.engine(true));
  std::vector<Tensor> in = tc.inputs(8, 0);
  bind_all(ctx, in);
  std::string msg = error_of([&] { ctx.execute(); });
  EXPECT_TRUE(mentions(msg, {"'k_cache'", "out of range"})) << msg;
  EXPECT_EQ(msg.find("partly updated"), std::string::npos) << msg;
  for (int k : {0, 1})
    for (double v : in[k].to_double_vector()) ASSERT_EQ(v, 7.0);
  in[4].data<int64_t>()[0] = 2;
  ctx.execute();
  EXPECT_TRUE(tensor_equal(in[0], eager_outputs(tc.g, tc.names, tc.inputs(2, 0))[0]));
}

TEST(FailedCall, CopyBackEngineIsAllOrNothing) {
  TwoCaches tc;
  auto engine = tc.engine(false);
  ASSERT_TRUE(engine->aliased_io().empty());
  ASSERT_EQ(engine->mutated_inputs(), (std::vector<int>{0, 1}));
  ExecutionContext ctx(engine);
  std::vector<Tensor> in = tc.inputs(3, 9);
  bind_all(ctx, in);
  std::string msg = error_of([&] { ctx.execute(); });
  EXPECT_TRUE(mentions(msg, {"index_copy", "out of bounds"})) << msg;
  EXPECT_EQ(msg.find("partly updated"), std::string::npos) << msg;
  for (int k : {0, 1})
    for (double v : in[k].to_double_vector()) ASSERT_EQ(v, 7.0);
  in[5].data<int64_t>()[0] = 5;  // no rebind needed
  ctx.execute();
  std::vector<Tensor> ref = eager_outputs(tc.g, tc.names, tc.inputs(3, 5));
  EXPECT_TRUE(tensor_equal(in[0], ref[0]));
  EXPECT_TRUE(tensor_equal(in[1], ref[1]));
}

}  // namespace
