// inplace generate PROGRAM --prompt-ids 1,2,3 --max-new-tokens N [--temperature T] [--top-k K]
//                  [--top-p P] [--seed S] [--stop ID]... [--device DEVICE]
// Session::generate on a new session of PROGRAM: prints each new token as it comes, then the
// time to first token and the decode rate (docs/programs.md, "Generation").
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "arg_parser.h"
#include "commands.h"
#include "inplace/program.h"
#include "measure.h"

namespace inplace::cli {

namespace {

std::vector<int64_t> parse_ids(const std::string& option, const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) ids.push_back(parse_int_option(option, item, 0, INT64_MAX));
  if (ids.empty()) throw UsageError(option + " needs at least one token id (1,2,3)");
  return ids;
}

double parse_double_option(const std::string& option, const std::string& value) {
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0')
    throw UsageError(option + " takes a number, got '" + value + "'");
  return v;
}

}  // namespace

int run_generate(const std::vector<std::string>& args) {
  std::string path, prompt, max_new = "16", temperature = "0", top_k = "0", top_p = "1", seed = "0",
                            device;
  std::vector<std::string> stops;
  ArgParser p("generate",
              "Generates tokens from a program with methods decode (and prefill) taking\n"
              "(ids [1, T], positions [T]) and returning logits [.., V] (docs/programs.md,\n"
              "\"Generation\"): greedy at temperature 0, else sampled with the seed.\n"
              "Prints each token as it comes, then the time to first token and tokens/s.");
  p.positional("PROGRAM", &path, "the program file");
  p.option("--prompt-ids", "1,2,3", &prompt, "the prompt's token ids", /*required=*/true);
  p.option("--max-new-tokens", "N", &max_new, "at most N new tokens (default 16)");
  p.option("--temperature", "T", &temperature, "sampling temperature (default 0: greedy)");
  p.option("--top-k", "K", &top_k, "sample from the K most likely tokens (default 0: all)");
  p.option("--top-p", "P", &top_p, "and from the fewest whose probability reaches P (default 1)");
  p.option("--seed", "S", &seed, "the sampler's seed (default 0)");
  p.repeated("--stop", "ID", &stops, "a token that ends the generation (repeatable)");
  p.option("--device", "DEVICE", &device,
           "run on DEVICE (cpu, cuda, cuda:N) instead of the device PROGRAM was compiled for");
  if (!p.parse(args)) return 0;
  GenerateOptions options;
  options.max_new_tokens = parse_int_option("--max-new-tokens", max_new, 0, INT64_MAX);
  options.sampling.temperature = parse_double_option("--temperature", temperature);
  options.sampling.top_k = parse_int_option("--top-k", top_k, 0, INT64_MAX);
  options.sampling.top_p = parse_double_option("--top-p", top_p);
  options.sampling.seed = static_cast<uint64_t>(parse_int_option("--seed", seed, 0, INT64_MAX));
  for (const std::string& s : stops)
    options.stop_tokens.push_back(parse_int_option("--stop", s, 0, INT64_MAX));
  std::vector<int64_t> ids = parse_ids("--prompt-ids", prompt);

  std::shared_ptr<const Program> program = load_program_or_engine(
      path, device.empty() ? std::nullopt : std::optional<Device>(Device::parse(device)));
  std::unique_ptr<Session> session = program->new_session();
  bool first = true;
  options.on_token = [&](int64_t token) {
    std::printf("%s%lld", first ? "tokens: " : " ", static_cast<long long>(token));
    std::fflush(stdout);
    first = false;
    return true;
  };
  GenerateResult r = session->generate(ids, options);
  std::printf("%s\n", first ? "tokens: (none)" : "");
  std::printf(
      "prompt %lld tokens, %zu new (stopped by %s); time to first token %.3f ms, "
      "%.1f tokens/s\n",
      static_cast<long long>(r.prompt_tokens), r.tokens.size(), r.stopped_by.c_str(),
      r.time_to_first_token_s * 1e3, r.tokens_per_second);
  return 0;
}

}  // namespace inplace::cli
