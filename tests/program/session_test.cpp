// Sessions over a program with prefill / decode / peek methods: decode and peek observe what
// prefill wrote (runtime-owned cache, and the caller's cache), the caller's cache keeps its
// identity, a fresh session starts from the stored initial state, reset() restores it,
// sessions are isolated, interleaving equals running one after the other, and every result
// equals the eager interpreter run over the same calls.
#include "program/program_test_util.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// Runs `calls` on `session`; the caller's cache, when given, is passed to every call.
std::vector<std::vector<Tensor>> run_calls(Session& session, const std::vector<Call>& calls,
                                           const Tensor& cache = Tensor()) {
  std::vector<std::vector<Tensor>> out;
  for (const Call& c : calls) {
    std::map<std::string, Tensor> in = c.inputs;
    if (cache.defined()) in["k_cache"] = cache;
    out.push_back(session.run(c.method, in));
  }
  return out;
}

TEST(Session, DecodeObservesTheRuntimeOwnedCacheThatPrefillWrote) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  ASSERT_EQ(program->state().size(), 2u);
  EXPECT_GE(program->state().find("layers.0.k_cache"), 0) << program->describe();
  EXPECT_EQ(program->state()[program->state().find("layers.0.k_cache")].ownership,
            Ownership::kRuntime);
  for (int64_t prompt : {int64_t{1}, int64_t{5}, kSlots - 2}) {
    std::vector<Call> calls = conversation(prompt, 2, 10);
    auto session = program->new_session();
    auto got = run_calls(*session, calls);
    EagerConversation ref = run_eager_conversation(g, calls, false);
    expect_outputs_equal(got, ref.outputs, str_cat("prompt ", prompt));
    EXPECT_TRUE(tensor_equal(session->state("layers.0.k_cache"), ref.state.at("layers.0.k_cache")));
    EXPECT_TRUE(tensor_equal(session->state("layers.0.count"), ref.state.at("layers.0.count")));
    // The peek (a method that only reads the cache) sees the rows prefill and decode wrote.
    double nonzero_rows = 0;
    Tensor cache = session->state("layers.0.k_cache");
    for (int64_t r = 0; r < kSlots; ++r)
      nonzero_rows += cache.select(2, r).to_double_vector()[0] != 0;
    EXPECT_EQ(nonzero_rows, prompt + 2);
    EXPECT_NE(got.back()[0].to_double_vector(), std::vector<double>(kSlots, 0.0));
  }
}

TEST(Session, DecodeObservesTheCallersCacheThatPrefillWrote) {
  DecoderGraphs g = decoder_graphs(true);
  auto program = decoder_program(g, true);
  int s = program->state().find("k_cache");
  ASSERT_GE(s, 0) << program->describe();
  EXPECT_EQ(program->state()[s].ownership, Ownership::kCaller);
  for (int64_t prompt : {int64_t{1}, int64_t{5}, kSlots - 2}) {
    std::vector<Call> calls = conversation(prompt, 2, 20);
    Tensor cache = caller_cache();
    void* address = cache.data_ptr();
    auto session = program->new_session();
    auto got = run_calls(*session, calls, cache);
    EagerConversation ref = run_eager_conversation(g, calls, true);
    expect_outputs_equal(got, ref.outputs, str_cat("prompt ", prompt));
    EXPECT_TRUE(tensor_equal(cache, ref.cache)) << "the caller's cache after the calls";
    EXPECT_EQ(cache.data_ptr(), address);
    EXPECT_TRUE(mentions(error_of([&] { session->state("k_cache"); }), {"'k_cache'", "caller"}));
  }
}

TEST(Session, ABufferDeclaredCallerOwnedIsPassedByItsDottedName) {
  DecoderGraphs g = decoder_graphs(false);
  ProgramOptions options;
  options.caller_owned = {"layers.0.k_cache"};
  auto program = decoder_program(g, false, options);
  const StateEntry& e = program->state()[program->state().find("layers.0.k_cache")];
  EXPECT_EQ(e.ownership, Ownership::kCaller);
  EXPECT_TRUE(e.initial.defined()) << "the buffer's initial value is kept";
  std::vector<Call> calls = conversation(3, 3, 30);
  Tensor cache = e.initial.clone();
  auto session = program->new_session();
  std::vector<std::vector<Tensor>> got;
  for (const Call& c : calls) {
    std::map<std::string, Tensor> in = c.inputs;
    in["layers.0.k_cache"] = cache;
    got.push_back(session->run(c.method, in));
  }
  EagerConversation ref = run_eager_conversation(g, calls, false);
  expect_outputs_equal(got, ref.outputs, "caller-owned buffer");
  EXPECT_TRUE(tensor_equal(cache, ref.state.at("layers.0.k_cache")));
  EXPECT_TRUE(mentions(error_of([&] { session->run("decode", calls[1].inputs); }),
                       {"needs input 'layers.0.k_cache'", "'x', 'start', 'layers.0.k_cache'"}));
}

TEST(Session, StateAddressesAreStableAndTheCallersWritesAreVisible) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  auto session = program->new_session();
  Tensor cache = session->state("layers.0.k_cache");
  void* address = cache.data_ptr();
  std::vector<Call> calls = conversation(2, 4, 40);
  run_calls(*session, calls);
  EXPECT_EQ(session->state("layers.0.k_cache").data_ptr(), address);
  EXPECT_TRUE(cache.same_storage(session->state("layers.0.k_cache")));
  EXPECT_EQ(session->state("layers.0.count").to_double_vector(),
            std::vector<double>{5});  // prefill and 4 decodes (the peek writes nothing)
  session->reset();
  EXPECT_EQ(session->state("layers.0.k_cache").data_ptr(), address);
}

TEST(Session, AFreshSessionStartsFromTheInitialStateAndResetRestoresIt) {
  DecoderGraphs g = decoder_graphs(false);
  // A non-zero initial cache, so "initial" cannot be mistaken for zero-filled memory.
  g.prefill->constants["layers.0.k_cache"] = seeded_uniform({1, 1, kSlots, kDim}, 55);
  g.decode->constants["layers.0.k_cache"] = seeded_uniform({1, 1, kSlots, kDim}, 55);
  g.peek->constants["layers.0.k_cache"] = seeded_uniform({1, 1, kSlots, kDim}, 55);
  auto program = decoder_program(g, false);
  const Tensor initial = seeded_uniform({1, 1, kSlots, kDim}, 55);
  std::vector<Call> calls = conversation(4, 2, 50);
  auto first = program->new_session();
  auto out_first = run_calls(*first, calls);
  EXPECT_FALSE(tensor_equal(first->state("layers.0.k_cache"), initial));
  auto fresh = program->new_session();
  EXPECT_TRUE(tensor_equal(fresh->state("layers.0.k_cache"), initial));
  EXPECT_EQ(fresh->state("layers.0.count").to_double_vector(), std::vector<double>{0});
  first->reset();
  EXPECT_TRUE(tensor_equal(first->state("layers.0.k_cache"), initial));
  EXPECT_EQ(first->state("layers.0.count").to_double_vector(), std::vector<double>{0});
  // After reset the same calls give the same results.
  expect_outputs_equal(run_calls(*first, calls), out_first, "after reset");
  EagerConversation ref = run_eager_conversation(g, calls, false);
  expect_outputs_equal(out_first, ref.outputs, "against eager");
}

TEST(Session, InterleavedSessionsEqualSessionsRunOneAfterTheOther) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  std::vector<Call> a = conversation(5, 3, 60), b = conversation(2, 3, 70);
  auto sa = program->new_session(), sb = program->new_session();
  std::vector<std::vector<Tensor>> got_a, got_b;
  for (size_t k = 0; k < std::max(a.size(), b.size()); ++k) {
    if (k < a.size()) got_a.push_back(sa->run(a[k].method, a[k].inputs));
    if (k < b.size()) got_b.push_back(sb->run(b[k].method, b[k].inputs));
  }
  auto seq_a = program->new_session();
  expect_outputs_equal(got_a, run_calls(*seq_a, a), "session a");
  auto seq_b = program->new_session();
  expect_outputs_equal(got_b, run_calls(*seq_b, b), "session b");
  EXPECT_TRUE(tensor_equal(sa->state("layers.0.k_cache"), seq_a->state("layers.0.k_cache")));
  EXPECT_TRUE(tensor_equal(sb->state("layers.0.k_cache"), seq_b->state("layers.0.k_cache")));
  EXPECT_FALSE(sa->state("layers.0.k_cache").same_storage(sb->state("layers.0.k_cache")));
  expect_outputs_equal(got_b, run_eager_conversation(g, b, false).outputs, "b against eager");
}

TEST(Session, WeightsAreStoredOnceForEveryMethod) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  ASSERT_EQ(program->weights().size(), 1u) << program->describe();
  EXPECT_EQ(program->weights()[0].name, "proj.weight");
  const Tensor& w0 = program->method("prefill").engine->plan().constants.at(0);
  const Tensor& w1 = program->method("decode").engine->plan().constants.at(0);
  EXPECT_TRUE(w0.same_storage(w1));
}

TEST(Session, NamesInErrorsListTheValidOnes) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  auto session = program->new_session();
  EXPECT_TRUE(mentions(error_of([&] { session->run("generate", {}); }),
                       {"no method 'generate'", "'prefill', 'decode', 'peek'"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         session->run("decode", {{"tok", position(0)}});
                       }),
                       {"no input 'tok'", "'x', 'start'"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         session->run("decode", {{"x", seeded_uniform({1, 1, 1, kDim}, 1)}});
                       }),
                       {"needs input 'start'"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         session->run("peek", {{"q", seeded_uniform({1, 1, 1, kDim}, 1)},
                                               {"layers.0.k_cache", caller_cache()}});
                       }),
                       {"'layers.0.k_cache' is runtime-owned"}));
  EXPECT_TRUE(mentions(error_of([&] { session->state("k_cache"); }),
                       {"no state named 'k_cache'", "'layers.0.k_cache', 'layers.0.count'"}));
  ExecutionContext ctx(program->method("decode").engine);
  EXPECT_TRUE(mentions(error_of([&] { ctx.bind_input("tok", position(0)); }),
                       {"'tok'", "'x', 'start', 'layers.0.k_cache'"}));
}

TEST(Session, AFailedCallThatPartlyWroteStateIsRefusedUntilReset) {
  // a.total += x writes one buffer, then b.index_copy_(0, p, x) refuses a bad index: a is
  // partly updated, so the session refuses calls until reset().
  GraphBuilder b("two_writes");
  Node* x = b.placeholder("x");
  Node* p = b.placeholder("p");
  Node* total = b.get_attr("a.total", Tensor::zeros({4}, DType::kFloat32));
  Node* slots = b.get_attr("b.slots", Tensor::zeros({4}, DType::kFloat32));
  b.call_method("add_", {total, x});
  b.call_method("index_copy_", {slots, 0, p, x});
  b.output(arg::tuple({b.call_method("sum", {x})}));
  auto graph = b.build();
  Tensor x1 = Tensor::full({1}, Scalar(1.0), DType::kFloat32);
  auto idx = [](int64_t v) { return Tensor::from_vector<int64_t>({v}, {1}); };
  auto program = compile_program({{"step", graph.get(), {x1, idx(0)}, {}}});
  auto session = program->new_session();
  session->run("step", {{"x", x1}, {"p", idx(1)}});
  EXPECT_TRUE(session->refused_reason().empty());
  std::string err = error_of([&] { session->run("step", {{"x", x1}, {"p", idx(9)}}); });
  ASSERT_FALSE(session->refused_reason().empty()) << err;
  EXPECT_TRUE(mentions(err, {"'a.total'", "refuses calls until reset()"})) << err;
  EXPECT_TRUE(mentions(error_of([&] {
                         session->run("step", {{"x", x1}, {"p", idx(1)}});
                       }),
                       {"refused", "partly wrote runtime-owned state 'a.total'", "reset()"}));
  session->reset();
  EXPECT_TRUE(session->refused_reason().empty());
  EXPECT_TRUE(tensor_equal(session->state("a.total"), Tensor::zeros({4}, DType::kFloat32)));
  session->run("step", {{"x", x1}, {"p", idx(2)}});
  EXPECT_EQ(session->state("a.total").to_double_vector(), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(session->state("b.slots").to_double_vector(), (std::vector<double>{0, 0, 1, 0}));
  // A call refused before anything is written leaves the session usable.
  EXPECT_FALSE(error_of([&] { session->run("step", {{"x", idx(1)}, {"p", idx(1)}}); }).empty());
  EXPECT_TRUE(session->refused_reason().empty());
}

TEST(Session, AStatefulModuleBehavesLikeThePyTorchModule) {
  // forward(x): self.total += x; self.steps += 1; return self.total * 2 — the buffers persist.
  GraphBuilder b("module");
  Node* x = b.placeholder("x");
  Node* total = b.get_attr("acc.total", Tensor::zeros({3}, DType::kFloat32));
  Node* steps = b.get_attr("acc.steps", Tensor::zeros({}, DType::kInt64));
  b.call_method("add_", {total, x});
  b.call_method("add_", {steps, 1});
  b.output(arg::tuple({b.call_function("_operator.mul", {total, 2.0})}));
  auto graph = b.build();
  auto program = compile_program({{"forward", graph.get(), {seeded_uniform({3}, 1)}, {}}});
  auto session = program->new_session();
  State state = initial_state(*graph);
  for (uint32_t call = 0; call < 4; ++call) {
    Tensor in = seeded_uniform({3}, 10 + call);
    std::vector<Tensor> out = session->run("forward", {{"x", in}});
    RunOutput ref = run_eager(*graph, {{"x", Value::from_tensor(in.clone())}}, &state);
    EXPECT_TRUE(tensor_equal(out[0], ref.flat[0].tensor, 1e-6)) << "call " << call;
  }
  EXPECT_TRUE(tensor_equal(session->state("acc.total"), state.at("acc.total"), 1e-6));
  EXPECT_EQ(session->state("acc.steps").item().to_double(), 4.0);
}

}  // namespace
