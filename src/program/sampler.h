// Choosing the next token from one row of logits: greedy (argmax, the first on ties, as
// torch.argmax), or sampled at a temperature from the top-k tokens and then the smallest set of
// them whose probability reaches top-p. The random numbers come from a std::mt19937_64 seeded by
// the caller and are turned into doubles by bit arithmetic, so a seed gives the same tokens on
// every platform and standard library. Sampling runs on the host; a device session takes a
// greedy token by its own argmax (generate.cpp, docs/programs.md).
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
  int64_t next(const std::vector<double>& logits);

 private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<int64_t> order_;  // reused across tokens
  std::vector<double> probs_;
};

}  // namespace inplace
