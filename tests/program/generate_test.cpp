// Session::generate against a caller's loop of eager steps (the built-in tiny Llama): greedy
// token for token, with and without a prefill method (a prompt prefill does not fit goes
// through decode); seeded sampling reproducible; top_k 1 is
// greedy; stop tokens and the callback stop; NaN logits stop sampling; methods off the
// convention are refused by name.
#include <gtest/gtest.h>

#include <cmath>

#include "program/generate_test_util.h"
#include "program/program_test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

const std::vector<int64_t> kPrompt = {1, 17, 42, 9, 200};
constexpr int64_t kNew = 12;

class Generate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new TinyLlama();
    program_ = new std::shared_ptr<const Program>(tiny_llama_program(*model_));
    greedy_ = new std::vector<int64_t>(eager_greedy(*model_, kPrompt, kNew));
  }
  static void TearDownTestSuite() {
    delete greedy_;
    delete program_;
    delete model_;
  }
  static GenerateResult generate(GenerateOptions options,
                                 const std::vector<int64_t>& prompt = kPrompt) {
    return (*program_)->new_session()->generate(prompt, options);
  }
  static GenerateOptions sampled(uint64_t seed) {
    GenerateOptions o;
    o.max_new_tokens = kNew;
    o.sampling = {/*temperature=*/1.5, /*top_k=*/50, /*top_p=*/0.95, seed};
    return o;
  }
  static TinyLlama* model_;
  static std::shared_ptr<const Program>* program_;
  static std::vector<int64_t>* greedy_;
};
TinyLlama* Generate::model_ = nullptr;
std::shared_ptr<const Program>* Generate::program_ = nullptr;
std::vector<int64_t>* Generate::greedy_ = nullptr;

TEST_F(Generate, GreedyEqualsEagerLoopTokenForToken) {
  GenerateOptions o;
  o.max_new_tokens = kNew;
  std::vector<int64_t> streamed;
  o.on_token = [&](int64_t t) {
    streamed.push_back(t);
    return true;
  };
  GenerateResult r = generate(o);
  EXPECT_EQ(r.tokens, *greedy_);
  EXPECT_EQ(streamed, *greedy_);
  EXPECT_EQ(r.stopped_by, "max_new_tokens");
  EXPECT_EQ(r.prompt_tokens, static_cast<int64_t>(kPrompt.size()));
  EXPECT_GT(r.time_to_first_token_s, 0.0);
  EXPECT_GT(r.tokens_per_second, 0.0);
}

TEST_F(Generate, WithoutPrefillThePromptGoesThroughDecode) {
  GenerateOptions o;
  o.max_new_tokens = kNew;
  EXPECT_EQ(tiny_llama_program(*model_, false)->new_session()->generate(kPrompt, o).tokens,
            *greedy_);
}

TEST_F(Generate, PromptShorterThanAFixedPrefillGoesThroughDecode) {
  const std::vector<int64_t> prompt = {7, 8, 9};
  GenerateOptions o;
  o.max_new_tokens = 4;
  EXPECT_EQ(generate(o, prompt).tokens, eager_greedy(*model_, prompt, 4));
}

TEST_F(Generate, SeededSamplingIsReproducible) {
  GenerateResult a = generate(sampled(7)), b = generate(sampled(7));
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.tokens.size(), static_cast<size_t>(kNew));
  bool some_seed_differs = false;
  for (uint64_t seed = 8; seed < 12; ++seed)
    some_seed_differs |= generate(sampled(seed)).tokens != a.tokens;
  EXPECT_TRUE(some_seed_differs);
  EXPECT_NE(a.tokens, *greedy_);  // a temperature of 1.5 over 50 tokens does sample
}

TEST_F(Generate, TopK1AndTinyTopPAreGreedy) {
  GenerateOptions o = sampled(3);
  o.sampling.top_k = 1;
  EXPECT_EQ(generate(o).tokens, *greedy_);
  o.sampling.top_k = 0;
  o.sampling.top_p = 1e-9;
  EXPECT_EQ(generate(o).tokens, *greedy_);
}

TEST_F(Generate, StopTokenAndCallbackStop) {
  GenerateOptions o;
  o.max_new_tokens = kNew;
  o.stop_tokens = {(*greedy_)[3], 255};
  GenerateResult r = generate(o);
  auto first = std::find(greedy_->begin(), greedy_->end(), (*greedy_)[3]);
  EXPECT_EQ(r.tokens, std::vector<int64_t>(greedy_->begin(), first + 1));
  EXPECT_EQ(r.stopped_by, "stop_token");

  GenerateOptions c;
  c.max_new_tokens = kNew;
  int calls = 0;
  c.on_token = [&](int64_t) { return ++calls < 2; };
  r = generate(c);
  EXPECT_EQ(r.tokens, std::vector<int64_t>(greedy_->begin(), greedy_->begin() + 2));
  EXPECT_EQ(r.stopped_by, "callback");
}

TEST_F(Generate, BadOptionsAndPromptsAreRefused) {
  GenerateOptions o;
  o.sampling.top_p = 0.0;
  EXPECT_THROW(generate(o), Error);
  GenerateOptions v;
  try {
    generate(v, {1, 256});
    FAIL() << "a token outside the vocabulary was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside the vocabulary [0, 256)"), std::string::npos);
  }
}

// NaN logits (the tied embedding rows of tokens 33 and 77) stop sampling with an error naming
// the first, top-k or every token; greedy takes the argmax as it comes.
TEST(GenerateNaN, SamplingRefusesNaNLogits) {
  TinyLlama model;
  Tensor& embed = model.weights.at("embed_tokens.weight");
  embed = embed.clone();
  for (int64_t token : {77, 33}) embed.select(0, token).fill(std::nan(""));
  std::shared_ptr<const Program> program = tiny_llama_program(model);
  GenerateOptions o;
  o.max_new_tokens = 4;
  for (int64_t top_k : {40, 0}) {
    o.sampling = {/*temperature=*/0.8, top_k, /*top_p=*/0.9, /*seed=*/7};
    try {
      program->new_session()->generate(kPrompt, o);
      FAIL() << "NaN logits were sampled at top_k " << top_k;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("[generate] the logit of token 33 is NaN"),
                std::string::npos)
          << e.what();
    }
  }
  o.sampling = {};
  EXPECT_EQ(program->new_session()->generate(kPrompt, o).tokens.size(), 4u);
}

TEST(GenerateConvention, MethodsOffTheConventionAreRefusedByName) {
  DecoderGraphs g = decoder_graphs(false);
  std::shared_ptr<const Program> p = decoder_program(g, false);
  try {
    check_generate_methods(*p);
    FAIL() << "a decode(x float, start) method was taken";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("method 'decode'"), std::string::npos) << what;
    EXPECT_NE(what.find("'x' [1,1,1,4] float32"), std::string::npos) << what;
    EXPECT_NE(what.find("generate needs decode(ids [1, 1], positions [1])"), std::string::npos)
        << what;
  }
}

}  // namespace
