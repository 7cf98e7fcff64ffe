#include "program/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace inplace {

Sampler::Sampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {
  IP_CHECK(std::isfinite(options.temperature), kInvalidArgument,
           "[generate] temperature must be finite, got ", options.temperature);
  IP_CHECK(options.top_k >= 0, kInvalidArgument,
           "[generate] top_k must be >= 0 (0: every token), got ", options.top_k);
  IP_CHECK(options.top_p > 0.0 && options.top_p <= 1.0, kInvalidArgument,
           "[generate] top_p must be in (0, 1], got ", options.top_p);
}

bool Sampler::greedy() const {
  return options_.temperature <= 0.0 || options_.top_k == 1;
}

namespace {

[[noreturn]] void fail_nan(int64_t token) {
  IP_FAIL(kInvalidArgument, "[generate] the logit of token ", token,
          " is NaN: sampling needs numbers (the model's output is broken)");
}

}  // namespace

int64_t Sampler::next(const std::vector<double>& logits) {
  IP_CHECK(!logits.empty(), kInvalidArgument, "[generate] the logits row is empty");
  const int64_t n = static_cast<int64_t>(logits.size());
  if (greedy())
    return std::max_element(logits.begin(), logits.end()) - logits.begin();  // first maximum
  // NaN orders nothing (the sort below needs an order); the first is the one a device names.
  for (int64_t i = 0; i < n; ++i)
    if (std::isnan(logits[i])) fail_nan(i);
  // Candidates by descending logit (index breaks ties): the top k of them, or all.
  const int64_t k = options_.top_k > 0 ? std::min(options_.top_k, n) : n;
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), int64_t{0});
  auto before = [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(order_.begin(), order_.begin() + k, order_.end(), before);
  order_.resize(k);
  top_.resize(k);
  for (int64_t i = 0; i < k; ++i) top_[i] = logits[order_[i]];
  return draw(top_, order_);
}

int64_t Sampler::next_from_top_k(const std::vector<double>& logits,
                                 const std::vector<int64_t>& tokens) {
  IP_CHECK(!greedy() && options_.top_k > 0, kInternal,
           "[generate] candidates are for sampling from the top k");
  IP_CHECK(!logits.empty() && logits.size() == tokens.size() &&
               static_cast<int64_t>(logits.size()) <= options_.top_k,
           kInternal, "[generate] ", logits.size(), " candidate logits for ", tokens.size(),
           " tokens at top_k ", options_.top_k);
  if (std::isnan(logits[0])) fail_nan(tokens[0]);  // NaN comes first, the smallest token first
  return draw(logits, tokens);
}

int64_t Sampler::draw(const std::vector<double>& logits, const std::vector<int64_t>& tokens) {
  const int64_t k = static_cast<int64_t>(logits.size());
  // Softmax at the temperature over the candidates.
  probs_.resize(k);
  const double top = logits[0];
  double sum = 0.0;
  for (int64_t i = 0; i < k; ++i)
    sum += probs_[i] = std::exp((logits[i] - top) / options_.temperature);
  // Top-p: the shortest prefix whose probability reaches top_p (at least one token).
  int64_t keep = k;
  if (options_.top_p < 1.0) {
    double cumulative = 0.0;
    for (int64_t i = 0; i < k; ++i) {
      cumulative += probs_[i] / sum;
      if (cumulative >= options_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept = 0.0;
  for (int64_t i = 0; i < keep; ++i) kept += probs_[i];
  // A uniform double in [0, 1) from the top 53 bits: the same on every standard library.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * kept;
  double acc = 0.0;
  for (int64_t i = 0; i < keep; ++i) {
    acc += probs_[i];
    if (u < acc) return tokens[i];
  }
  return tokens[keep - 1];
}

}  // namespace inplace
