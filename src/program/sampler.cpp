#include "program/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "ops/sampling_weight.h"

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

bool Sampler::draws_whole_row() const {
  return !greedy() && options_.top_k == 0 && options_.top_p >= 1.0;
}

void Sampler::refuse_nan(int64_t token) {
  IP_FAIL(kInvalidArgument, "[generate] the logit of token ", token,
          " is NaN: sampling needs numbers (the model's output is broken)");
}

int64_t Sampler::next(const std::vector<double>& logits) {
  IP_CHECK(!logits.empty(), kInvalidArgument, "[generate] the logits row is empty");
  const int64_t n = static_cast<int64_t>(logits.size());
  if (greedy())
    return std::max_element(logits.begin(), logits.end()) - logits.begin();  // first maximum
  // NaN orders nothing (the sort below needs an order); the first is the one a device names.
  for (int64_t i = 0; i < n; ++i)
    if (std::isnan(logits[i])) refuse_nan(i);
  const double t = options_.temperature;
  if (draws_whole_row())
    return sampling::draw_in_order([&](int64_t i) { return logits[i]; }, n, t, next_draw()).token;
  if (options_.top_k > 0) {  // the top k, their own total
    select(logits, std::min(options_.top_k, n));
    uint64_t total = 0;
    for (double v : top_) total += static_cast<uint64_t>(sampling::weight(v, top_[0], t));
    return draw_sorted(top_, order_, total, false);
  }
  // Every token, top_p < 1: the row's total, then as many candidates as the nucleus needs.
  const double top = *std::max_element(logits.begin(), logits.end());
  uint64_t total = 0;
  for (double v : logits) total += static_cast<uint64_t>(sampling::weight(v, top, t));
  for (int64_t count = std::min<int64_t>(n, 1024);; count = std::min(n, count * 8)) {
    select(logits, count);
    const int64_t token = draw_sorted(top_, order_, total, count < n);
    if (token >= 0) return token;
  }
}

int64_t Sampler::next_from_top_k(const std::vector<double>& logits,
                                 const std::vector<int64_t>& tokens) {
  IP_CHECK(!greedy() && options_.top_k > 0, kInternal,
           "[generate] candidates are for sampling from the top k");
  IP_CHECK(!logits.empty() && logits.size() == tokens.size() &&
               static_cast<int64_t>(logits.size()) <= options_.top_k,
           kInternal, "[generate] ", logits.size(), " candidate logits for ", tokens.size(),
           " tokens at top_k ", options_.top_k);
  if (std::isnan(logits[0])) refuse_nan(tokens[0]);  // NaN comes first, the smallest token first
  uint64_t total = 0;
  for (double v : logits)
    total += static_cast<uint64_t>(sampling::weight(v, logits[0], options_.temperature));
  return draw_sorted(logits, tokens, total, false);
}

int64_t Sampler::next_from_nucleus(const std::vector<double>& logits,
                                   const std::vector<int64_t>& tokens, int64_t total) {
  IP_CHECK(!greedy() && options_.top_k == 0 && options_.top_p < 1.0, kInternal,
           "[generate] nucleus candidates are for sampling every token at top_p < 1");
  IP_CHECK(!logits.empty() && logits.size() == tokens.size() && total > 0, kInternal, "[generate] ",
           logits.size(), " candidate logits for ", tokens.size(), " tokens, total ", total);
  if (std::isnan(logits[0])) refuse_nan(tokens[0]);
  return draw_sorted(logits, tokens, static_cast<uint64_t>(total), true);
}

void Sampler::select(const std::vector<double>& logits, int64_t count) {
  const int64_t n = static_cast<int64_t>(logits.size());
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), int64_t{0});
  auto before = [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(order_.begin(), order_.begin() + count, order_.end(), before);
  order_.resize(count);
  top_.resize(count);
  for (int64_t i = 0; i < count; ++i) top_[i] = logits[order_[i]];
}

int64_t Sampler::draw_sorted(const std::vector<double>& logits, const std::vector<int64_t>& tokens,
                             uint64_t total, bool may_fall_short) {
  const int64_t k = static_cast<int64_t>(logits.size());
  cumulative_.resize(k);
  uint64_t running = 0;
  for (int64_t i = 0; i < k; ++i)
    cumulative_[i] = running +=
        static_cast<uint64_t>(sampling::weight(logits[i], logits[0], options_.temperature));
  // Top-p: the shortest prefix whose weight reaches top_p of the total (at least one token).
  int64_t keep = k;
  if (options_.top_p < 1.0) {
    const double threshold = options_.top_p * static_cast<double>(total);
    keep = 0;
    while (keep < k && static_cast<double>(cumulative_[keep]) < threshold) ++keep;
    if (keep == k) {
      if (may_fall_short) return -1;
      keep = k - 1;
    }
    ++keep;
  }
  const uint64_t place = sampling::scaled_draw(next_draw(), cumulative_[keep - 1]);
  for (int64_t i = 0; i < keep; ++i)
    if (cumulative_[i] > place) return tokens[i];
  return tokens[keep - 1];
}

}  // namespace inplace
