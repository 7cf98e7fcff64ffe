// Choosing the next token from one row of logits: greedy (argmax, the first on ties, as
// torch.argmax), or sampled at a temperature from the top-k tokens and then the smallest set of
// them whose probability reaches top-p. Probabilities are integer weights
// (ops/sampling_weight.h), so every sum is exact and a device's sums are the host's. The random
// numbers come from a std::mt19937_64 seeded by the caller, one a sampled token, so a seed gives
// the same tokens on every platform and device. Over every token at top_p 1 the draw runs in
// index order (no sort: sample_row computes it where the logits are); otherwise over the
// candidates in descending order. A device session selects the greedy token, the top-k
// candidates or the whole row's draw by its own kernels (generate.cpp, docs/programs.md).
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
  const SamplingOptions& options() const { return options_; }
  // Sampling over every token at top_p 1: sample_row's draw in index order of the whole row.
  bool draws_whole_row() const;
  // The next token from a whole row. Sampling refuses a row holding NaN ([generate] ...).
  int64_t next(const std::vector<double>& logits);
  // The next token when top_k > 0, from the candidates a device selected: the min(top_k, V)
  // largest logits of the row in next()'s order (logit descending, the smaller token first
  // among equals, NaN first) and their tokens. Draws exactly as next() on that row.
  int64_t next_from_top_k(const std::vector<double>& logits, const std::vector<int64_t>& tokens);
  // The next token when top_k is 0 and top_p < 1, from the row's total weight (sample_row's) and
  // its largest logits in next()'s order: as next() on the row, or -1 (nothing drawn) when the
  // nucleus reaches past these candidates; the caller then calls next() on the row.
  int64_t next_from_nucleus(const std::vector<double>& logits, const std::vector<int64_t>& tokens,
                            int64_t total);
  // The next draw number, in [0, 2^53), for a whole-row draw computed elsewhere (sample_row).
  uint64_t next_draw() { return rng_() >> 11; }
  [[noreturn]] static void refuse_nan(int64_t token);  // [generate] the logit of token ... is NaN

 private:
  // The draw from candidates in order (the largest first) whose weights' denominator is
  // `total` (their own sum, or the row's): top-p, then one number. -1 (no number used) when
  // top-p's threshold lies past them.
  int64_t draw_sorted(const std::vector<double>& logits, const std::vector<int64_t>& tokens,
                      uint64_t total, bool may_fall_short);
  // The first `count` tokens of the row in next()'s order into order_ / top_.
  void select(const std::vector<double>& logits, int64_t count);

  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<int64_t> order_;  // reused across tokens
  std::vector<double> top_;
  std::vector<uint64_t> cumulative_;
};

}  // namespace inplace
