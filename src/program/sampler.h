// Choosing the next token from one row of logits: greedy (argmax, the first on ties, as
// torch.argmax), or sampled at a temperature from the top-k tokens and then the smallest set of
// them whose probability reaches top-p. The random numbers come from a std::mt19937_64 seeded by
// the caller and are turned into doubles by bit arithmetic, so a seed gives the same tokens on
// every platform and standard library. The draw runs on the host; a device session selects a
// greedy token, or the top-k candidates, by its own kernels (generate.cpp, docs/programs.md).
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace inplace {

struct SamplingOptions {
  double temperature = 0.0;  // <= 0: greedy
  int64_t top_k = 0;         // 0: every token; 1: greedy
  double top_p = 1.0;        // in (0, 1]
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);  // checks the options ([generate] ...)
  bool greedy() const;
  int64_t top_k() const { return options_.top_k; }
  // The next token from a whole row. Sampling refuses a row holding NaN ([generate] ...).
  int64_t next(const std::vector<double>& logits);
  // The next token when top_k > 0, from the candidates a device selected: the min(top_k, V)
  // largest logits of the row in next()'s order (logit descending, the smaller token first
  // among equals, NaN first) and their tokens. Draws exactly as next() on that row.
  int64_t next_from_top_k(const std::vector<double>& logits, const std::vector<int64_t>& tokens);

 private:
  // The draw from candidates already in order: softmax at the temperature, top-p, one number.
  int64_t draw(const std::vector<double>& logits, const std::vector<int64_t>& tokens);

  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<int64_t> order_;  // reused across tokens
  std::vector<double> top_, probs_;
};

}  // namespace inplace
