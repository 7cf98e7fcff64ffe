// Choosing the next token from one row of logits: greedy (argmax, the first on ties, as
// torch.argmax), or sampled at a temperature from the top-k tokens and then the smallest set of
// them, most likely first, whose probability reaches top-p. Probabilities are integer weights
// (ops/sampling_weight.h), so every sum is exact and a device's sums are the host's. The random
// numbers come from a std::mt19937_64 seeded by the caller, one a sampled token, so a seed gives
// the same tokens on every platform and device. The draw walks the kept tokens in index order
// (the distribution does not depend on the order): over every token at top_p 1 no sort is
// needed, and sample_row computes it where the logits are; a nucleus over every token is found
// by selection, not a sort. A device session selects the greedy token, the top-k candidates or
// the whole row's draw by its own kernels (next_token.cpp, docs/programs.md).
#pragma once
#include <cstdint>
#include <random>
#include <utility>
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
  // The draw from candidates in descending order whose denominator is `total` (0: their own
  // sum; else the row's): top-p's prefix, then one number among it in index order. -1 (no number
  // used) when top-p's threshold lies past them and `may_fall_short`.
  int64_t draw_sorted(const std::vector<double>& logits, const std::vector<int64_t>& tokens,
                      uint64_t total, bool may_fall_short);
  // Every token at top_p < 1: the nucleus of the row by selection, then the draw.
  int64_t draw_row_nucleus(const std::vector<double>& logits);
  // The draw among kept_ (token, weight), sorted here by token, weighing `kept` together.
  int64_t draw_kept(uint64_t kept);
  // The first `count` tokens of the row in next()'s order into order_ / top_.
  void select(const std::vector<double>& logits, int64_t count);

  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<int64_t> order_, weights_;  // reused across tokens
  std::vector<double> top_;
  std::vector<std::pair<int64_t, int64_t>> kept_;
  std::vector<uint8_t> in_;  // the row's kept tokens
};

}  // namespace inplace
