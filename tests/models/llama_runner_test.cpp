// The built-in model's runner is a program on a session: the program save_llama_engines writes
// (methods prefill and decode, the caches caller-owned state), run through one Session with the
// caller's caches bound once, and a runner over the loaded file steps exactly as the compiled one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "models/llama.h"
#include "models/llama_runner.h"
#include "test_util.h"

namespace inplace::models {
using namespace inplace::testing;
namespace {

constexpr int64_t kSMax = 24, kPrompt = 5;
const std::vector<int64_t> kPromptTokens{3, 141, 59, 26, 53};

TEST(LlamaRunner, RunsTheSavedProgramOnOneSessionWithTheCallersCaches) {
  const LlamaConfig c = llama_config("tiny", kSMax, 7);
  const LlamaEngines e = compile_llama(c, llama_weights(c), kPrompt, true);
  std::vector<Tensor> caches = llama_new_caches(c);
  LlamaEngineRunner runner(c, e, caches);
  const Program& p = runner.session().program();
  ASSERT_EQ(p.methods().size(), 2u);
  EXPECT_EQ(p.methods()[0].name, "prefill");
  EXPECT_EQ(p.methods()[1].name, "decode");
  const std::vector<std::string> names = llama_input_names(c);
  ASSERT_EQ(p.state().size(), caches.size());
  for (size_t i = 0; i < caches.size(); ++i) {
    EXPECT_EQ(p.state()[i].name, names[i + 2]);
    EXPECT_EQ(p.state()[i].ownership, Ownership::kCaller);
  }
  // The file holds the same program: a runner over it steps bit for bit as this one.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("inplace_llama_runner_" + std::to_string(::getpid()) + ".inplace"))
                               .string();
  save_llama_engines(e, path);
  LlamaEngineRunner loaded(c, load_llama_engines(path), llama_new_caches(c));
  std::filesystem::remove(path);
  EXPECT_EQ(loaded.session().program().describe().substr(0, 40), p.describe().substr(0, 40));
  EXPECT_TRUE(tensor_equal(runner.prefill(kPromptTokens), loaded.prefill(kPromptTokens), 0));
  for (int64_t pos = kPrompt; pos < kPrompt + 3; ++pos)
    EXPECT_TRUE(tensor_equal(runner.decode(11, pos), loaded.decode(11, pos), 0)) << pos;
  // Bound once: the caller's tensors are written where they are, one session call per step.
  for (size_t i = 0; i < caches.size(); ++i) {
    EXPECT_EQ(runner.caches()[i].data_ptr(), caches[i].data_ptr());
    EXPECT_TRUE(tensor_equal(caches[i], loaded.caches()[i], 0)) << "cache " << i;
  }
  EXPECT_NE(caches[0].at(0), 0.0);
  EXPECT_EQ(runner.session().stats("prefill").calls, 1);
  EXPECT_EQ(runner.session().stats("decode").calls, 3);
}

TEST(LlamaRunner, WithoutPrefillOnlyDecodeRuns) {
  const LlamaConfig c = llama_config("tiny", kSMax, 7);
  LlamaEngineRunner runner(c, compile_llama(c, llama_weights(c), 0, true), llama_new_caches(c));
  EXPECT_EQ(runner.session().program().methods().size(), 1u);
  EXPECT_TRUE(mentions(error_of([&] { runner.prefill(kPromptTokens); }), {"no prefill"}));
  EXPECT_EQ(runner.decode(1, 0).shape(), (Shape{1, c.vocab}));
}

}  // namespace
}  // namespace inplace::models
