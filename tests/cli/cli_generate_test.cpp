// `inplace generate` on a saved program of the built-in tiny Llama: the printed tokens equal a
// loop of eager greedy steps and Session::generate with the same options; stop tokens stop;
// a program off the generation convention is a one-line error naming the method.
#include <sstream>

#include "cli/cli_util.h"
#include "program/generate_test_util.h"
#include "program/program_test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

std::vector<int64_t> printed_tokens(const std::string& out) {
  auto at = out.find("tokens: ");
  EXPECT_NE(at, std::string::npos) << out;
  std::stringstream line(out.substr(at + 8, out.find('\n', at) - at - 8));
  std::vector<int64_t> tokens;
  for (int64_t t; line >> t;) tokens.push_back(t);
  return tokens;
}

class CliGenerate : public Cli {};

TEST_F(CliGenerate, GreedyAndSeededTokensEqualTheApi) {
  TinyLlama model;
  std::shared_ptr<const Program> program = tiny_llama_program(model);
  save_program(*program, path("llama.inplace"));
  const std::vector<int64_t> prompt = {1, 17, 42, 9, 200};
  CliResult r = run("generate " + path("llama.inplace") +
                    " --prompt-ids 1,17,42,9,200 "
                    "--max-new-tokens 10");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(printed_tokens(r.out), eager_greedy(model, prompt, 10));
  EXPECT_NE(r.out.find("time to first token"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokens/s"), std::string::npos) << r.out;

  GenerateOptions o;
  o.max_new_tokens = 10;
  o.sampling = {1.5, 50, 0.95, 7};
  std::vector<int64_t> sampled = program->new_session()->generate(prompt, o).tokens;
  std::string args = "generate " + path("llama.inplace") +
                     " --prompt-ids 1,17,42,9,200 --max-new-tokens 10 --temperature 1.5 "
                     "--top-k 50 --top-p 0.95 --seed 7";
  r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(printed_tokens(r.out), sampled);
  r = run(args + " --stop " + std::to_string(sampled[2]));
  ASSERT_EQ(r.code, 0) << r.err;
  auto first = std::find(sampled.begin(), sampled.end(), sampled[2]);
  EXPECT_EQ(printed_tokens(r.out), std::vector<int64_t>(sampled.begin(), first + 1));
  EXPECT_NE(r.out.find("stopped by stop_token"), std::string::npos) << r.out;
}

TEST_F(CliGenerate, ProgramOffTheConventionIsRefused) {
  DecoderGraphs g = decoder_graphs(false);
  save_program(*decoder_program(g, false), path("p.inplace"));
  CliResult r = run("generate " + path("p.inplace") + " --prompt-ids 1,2");
  EXPECT_TRUE(one_line_error(r, 1, {"[generate]", "method 'decode'", "generate needs"}));
  r = run("generate " + path("p.inplace") + " --prompt-ids 1,x");
  EXPECT_EQ(r.code, 2) << r.err;
}

}  // namespace
