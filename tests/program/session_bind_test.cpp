// Session::bind_state and Session::bind_input: caller-owned state and plain inputs bound once
// (the compiled Python module's parameters, the built-in runner's caches and tokens), so a call
// passes only what changes. The same conversation as passing everything at every call, the
// caller's cache written in place; what cannot be bound is refused naming it.
#include "program/program_test_util.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

TEST(SessionBind, CallerCacheBoundOnceEqualsPassingItAtEveryCall) {
  DecoderGraphs g = decoder_graphs(true);
  auto program = decoder_program(g, true);
  std::vector<Call> calls = conversation(5, 3, 41);
  Tensor bound = caller_cache(), passed = caller_cache();
  void* address = bound.data_ptr();
  auto once = program->new_session();
  auto each = program->new_session();
  once->bind_state("k_cache", bound);
  std::vector<std::vector<Tensor>> got, want;
  for (const Call& c : calls) {
    got.push_back(once->run(c.method, c.inputs));
    std::map<std::string, Tensor> in = c.inputs;
    in["k_cache"] = passed;
    want.push_back(each->run(c.method, in));
  }
  expect_outputs_equal(got, want, "bound once");
  EXPECT_TRUE(tensor_equal(bound, passed)) << "the caller's cache after the calls";
  EXPECT_EQ(bound.data_ptr(), address);
  EagerConversation ref = run_eager_conversation(g, calls, true);
  EXPECT_TRUE(tensor_equal(bound, ref.cache));
}

TEST(SessionBind, APlainInputBoundOnceIsReadAtEveryCall) {
  DecoderGraphs g = decoder_graphs(true);
  auto program = decoder_program(g, true);
  auto session = program->new_session();
  Tensor cache = caller_cache();
  session->bind_state("k_cache", cache);
  Tensor q = seeded_uniform({1, 1, 1, kDim}, 3);
  session->bind_input("peek", "q", q);
  const Tensor first = session->run("peek", {})[0].clone();
  cache.fill(Scalar(1.0));  // the bound cache is read where it is
  q.fill(Scalar(2.0));      // and so is the bound input
  const Tensor second = session->run("peek", {})[0];
  std::map<std::string, Tensor> in{{"q", q}, {"k_cache", cache}};
  EXPECT_TRUE(tensor_equal(second, program->new_session()->run("peek", in)[0]));
  EXPECT_FALSE(tensor_equal(first, second));
}

TEST(SessionBind, WhatCannotBeBoundIsRefusedByName) {
  DecoderGraphs runtime = decoder_graphs(false);
  auto owned = decoder_program(runtime, false)->new_session();
  EXPECT_TRUE(mentions(error_of([&] { owned->bind_state("layers.0.k_cache", caller_cache()); }),
                       {"'layers.0.k_cache'", "runtime-owned"}));
  DecoderGraphs g = decoder_graphs(true);
  auto session = decoder_program(g, true)->new_session();
  EXPECT_TRUE(mentions(error_of([&] { session->bind_state("nope", caller_cache()); }), {"'nope'"}));
  EXPECT_TRUE(mentions(error_of([&] { session->bind_input("peek", "k_cache", caller_cache()); }),
                       {"'k_cache'", "bind_state"}));
  EXPECT_TRUE(mentions(error_of([&] { session->bind_input("peek", "x", caller_cache()); }),
                       {"'peek'", "'x'", "'q'"}));
  // A tensor that does not fit its binding: refused when bound, naming it.
  EXPECT_TRUE(mentions(error_of([&] {
                         session->bind_state("k_cache", Tensor::zeros({2, 2}, DType::kFloat32));
                       }),
                       {"'k_cache'"}));
  // Nothing bound: a call still needs the cache.
  EXPECT_TRUE(mentions(error_of([&] {
                         session->run("peek", {{"q", seeded_uniform({1, 1, 1, kDim}, 3)}});
                       }),
                       {"needs input 'k_cache'"}));
}

}  // namespace
