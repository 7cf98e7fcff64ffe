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
  if (draws_whole_row())
    return sampling::draw_in_order(logits.data(), n, options_.temperature, next_draw()).token;
  if (options_.top_k > 0) {  // the top k, their own total
    select(logits, std::min(options_.top_k, n));
    return draw_sorted(top_, order_, 0, false);
  }
  return draw_row_nucleus(logits);
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
  return draw_sorted(logits, tokens, 0, false);
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
  weights_.resize(k);
  sampling::weights(logits.data(), k, logits[0], options_.temperature, weights_.data());
  if (total == 0)  // their own
    for (int64_t w : weights_) total += static_cast<uint64_t>(w);
  // Top-p: the shortest prefix whose weight reaches top_p of the total (at least one token).
  const double threshold = options_.top_p * static_cast<double>(total);
  int64_t keep = 0;
  uint64_t kept = 0;
  while (keep < k) {
    kept += static_cast<uint64_t>(weights_[keep++]);
    if (options_.top_p < 1.0 && static_cast<double>(kept) >= threshold) break;
  }
  if (options_.top_p < 1.0 && static_cast<double>(kept) < threshold && may_fall_short) return -1;
  kept_.clear();
  for (int64_t i = 0; i < keep; ++i) kept_.emplace_back(tokens[i], weights_[i]);
  return draw_kept(kept);
}

int64_t Sampler::draw_row_nucleus(const std::vector<double>& logits) {
  const int64_t n = static_cast<int64_t>(logits.size());
  const double top = *std::max_element(logits.begin(), logits.end());
  weights_.resize(n);
  sampling::weights(logits.data(), n, top, options_.temperature, weights_.data());
  uint64_t total = 0;
  order_.clear();
  for (int64_t i = 0; i < n; ++i) {
    total += static_cast<uint64_t>(weights_[i]);
    if (weights_[i] > 0) order_.push_back(i);  // a weightless token neither reaches nor is drawn
  }
  const double threshold = options_.top_p * static_cast<double>(total);
  auto before = [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  // Select the shortest prefix of order_ in next()'s order whose weight reaches the threshold:
  // order_[0, lo) precedes the rest and weighs `kept` (< threshold); partition [lo, hi) around a
  // pivot until the prefix ends at it or the range is short enough to sort.
  uint64_t kept = 0;
  size_t lo = 0, hi = order_.size(), end = order_.size();
  auto at = [&](size_t i) { return order_.begin() + static_cast<std::ptrdiff_t>(i); };
  while (true) {
    if (hi - lo <= 32) {
      std::sort(at(lo), at(hi), before);
      for (end = lo; end < hi;) {
        kept += static_cast<uint64_t>(weights_[order_[end++]]);
        if (static_cast<double>(kept) >= threshold) break;
      }
      break;
    }
    int64_t a = order_[lo], b = order_[lo + (hi - lo) / 2], c = order_[hi - 1];  // median of 3
    if (before(b, a)) std::swap(a, b);
    if (before(c, b)) std::swap(b, c);
    if (before(b, a)) std::swap(a, b);
    const int64_t pivot = b;
    auto mid = std::partition(at(lo), at(hi), [&](int64_t i) { return before(i, pivot); });
    std::iter_swap(mid, std::find(mid, at(hi), pivot));
    const size_t m = static_cast<size_t>(mid - order_.begin());
    uint64_t ahead = 0;
    for (size_t i = lo; i < m; ++i) ahead += static_cast<uint64_t>(weights_[order_[i]]);
    if (static_cast<double>(kept + ahead) >= threshold) {
      hi = m;  // the prefix ends before the pivot
      continue;
    }
    kept += ahead + static_cast<uint64_t>(weights_[pivot]);
    lo = m + 1;
    if (static_cast<double>(kept) >= threshold) {
      end = lo;  // it ends at the pivot
      break;
    }
  }
  // The draw in index order over the kept tokens, marked (a pass, not a sort of them).
  in_.assign(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < end; ++i) in_[order_[i]] = 1;
  const uint64_t place = sampling::scaled_draw(next_draw(), kept);
  uint64_t running = 0;
  for (int64_t i = 0; i < n; ++i)
    if (in_[i] && (running += static_cast<uint64_t>(weights_[i])) > place) return i;
  return order_[end - 1];  // unreachable: place < kept
}

int64_t Sampler::draw_kept(uint64_t kept) {
  std::sort(kept_.begin(), kept_.end());  // index order
  const uint64_t place = sampling::scaled_draw(next_draw(), kept);
  uint64_t running = 0;
  for (const auto& [token, w] : kept_) {
    running += static_cast<uint64_t>(w);
    if (running > place) return token;
  }
  return kept_.back().first;  // unreachable: place < kept
}

}  // namespace inplace
