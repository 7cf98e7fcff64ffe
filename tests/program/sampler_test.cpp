// The Sampler's two entries draw alike: next() on a whole row and next_from_top_k() on that
// row's top-k candidates (what a device selects) give the same token for the same seed, on
// random rows, rows of ties and rows with -inf, for every option; NaN is refused on both with
// the same message.
#include "program/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "core/error.h"

using namespace inplace;

namespace {

// Deterministic rows: `levels` > 0 quantizes to that many values (ties), and every
// `inf_every`-th entry is -inf.
std::vector<double> row(int64_t n, uint32_t seed, int levels = 0, int inf_every = 0) {
  std::vector<double> r(n);
  uint32_t x = seed * 2654435761u + 11;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    double v = static_cast<double>(x >> 8) / double(1 << 24) * 8.0 - 4.0;
    if (levels > 0) v = std::floor(v * levels / 8.0);
    if (inf_every > 0 && i % inf_every == 0) v = -std::numeric_limits<double>::infinity();
    r[i] = v;
  }
  return r;
}

// The top k of a row as a device returns them: logit descending, the smaller token first among
// equal logits (a stable sort, independent of the Sampler's partial_sort).
void top_k(const std::vector<double>& r, int64_t k, std::vector<double>* values,
           std::vector<int64_t>* tokens) {
  std::vector<int64_t> order(r.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return r[a] > r[b]; });
  order.resize(std::min<int64_t>(k, static_cast<int64_t>(r.size())));
  tokens->assign(order.begin(), order.end());
  values->clear();
  for (int64_t t : order) values->push_back(r[t]);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Sampler, TopKCandidatesDrawAsTheWholeRowForEveryOption) {
  int cases = 0, distinct_tokens = 0;
  for (int64_t n : {1, 2, 7, 100, 1000})
    for (int pattern = 0; pattern < 4; ++pattern)
      for (int64_t k : {2, 5, 40, 1000, 1005})
        for (double temperature : {0.3, 1.0, 2.5})
          for (double top_p : {1.0, 0.9, 0.5, 1e-9}) {
            // Random, a few levels (ties), all equal, every third -inf.
            std::vector<double> r = row(n, static_cast<uint32_t>(n * 31 + k), pattern == 1 ? 3 : 0,
                                        pattern == 3 ? 3 : 0);
            if (pattern == 2) std::fill(r.begin(), r.end(), 1.5);
            const SamplingOptions o{temperature, k, top_p, /*seed=*/static_cast<uint64_t>(k + n)};
            Sampler whole(o), candidates(o);
            std::vector<double> values;
            std::vector<int64_t> tokens;
            top_k(r, k, &values, &tokens);
            std::vector<int64_t> drawn;
            for (int draw = 0; draw < 6; ++draw) {  // the generators stay in step
              const int64_t want = whole.next(r);
              ASSERT_EQ(candidates.next_from_top_k(values, tokens), want)
                  << "n " << n << " pattern " << pattern << " k " << k << " temperature "
                  << temperature << " top_p " << top_p << " draw " << draw;
              drawn.push_back(want);
            }
            std::sort(drawn.begin(), drawn.end());
            distinct_tokens += std::unique(drawn.begin(), drawn.end()) - drawn.begin();
            ++cases;
          }
  EXPECT_GT(distinct_tokens, cases * 2);  // the draws do sample, not only the top token
}

TEST(Sampler, NaNIsRefusedAlikeOnBothEntries) {
  std::vector<double> r = row(50, 4);
  r[31] = r[12] = std::numeric_limits<double>::quiet_NaN();
  const SamplingOptions o{0.8, 40, 0.9, 7};
  Sampler whole(o), candidates(o);
  const std::string host = error_of([&] { whole.next(r); });
  EXPECT_NE(host.find("[generate] the logit of token 12 is NaN"), std::string::npos) << host;
  // A device orders NaN first, the smaller token first.
  std::vector<double> values = {r[12], r[31], 3.0};
  std::vector<int64_t> tokens = {12, 31, 0};
  EXPECT_EQ(error_of([&] { candidates.next_from_top_k(values, tokens); }), host);
  // Over every token (top_k 0) too.
  Sampler all({0.8, 0, 1.0, 7});
  EXPECT_EQ(error_of([&] { all.next(r); }), host);
}

TEST(Sampler, CandidatesOutsideTheOptionsAreRefused) {
  Sampler s({0.8, 2, 1.0, 7});
  EXPECT_THROW(s.next_from_top_k({1.0, 0.5, 0.2}, {0, 1, 2}), Error);  // more than top_k
  EXPECT_THROW(s.next_from_top_k({1.0}, {0, 1}), Error);
  Sampler every({0.8, 0, 1.0, 7});
  EXPECT_THROW(every.next_from_top_k({1.0}, {0}), Error);  // top_k 0 samples from the row
}

}  // namespace
