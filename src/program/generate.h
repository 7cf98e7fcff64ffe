// Session::generate: a prompt through the `prefill` method, then the `decode` method once per
// new token, each token chosen on the host (sampler.h), with no caller code in the loop. The
// methods follow the generation convention of docs/programs.md ("Generation"):
//   prefill(ids [1, T] int64|int32, positions [T]) -> logits [1, T, V] (T dynamic or fixed)
//   decode(ids [1, 1], positions [1])              -> logits [1, 1, V]
// (the first two plain inputs, in that order, and output 0; positions may be [1, T]). A program
// without `prefill` feeds the prompt through `decode` one token at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "program/program.h"
#include "program/sampler.h"

namespace inplace {

struct GenerateOptions {
  int64_t max_new_tokens = 16;
  SamplingOptions sampling;
  std::vector<int64_t> stop_tokens;  // a stop token ends the generation (and is returned)
  int64_t start_position = 0;        // where the prompt starts in the session's cache
  // Called with each new token as soon as it is chosen; returning false stops the generation.
  std::function<bool(int64_t)> on_token;
};

struct GenerateResult {
  std::vector<int64_t> tokens;  // the new tokens, in order
  std::string stopped_by;       // "max_new_tokens", "stop_token" or "callback"
  int64_t prompt_tokens = 0;
  double time_to_first_token_s = 0.0;  // from the call to the first token chosen (prefill)
  double tokens_per_second = 0.0;      // the tokens after the first over their time (decode)
};

// Refuses (kInvalidArgument) a program whose methods do not fit the convention, naming the
// method and what is missing or of the wrong shape or dtype.
void check_generate_methods(const Program& program);

}  // namespace inplace
