// The Sampler's entries draw alike: next() on a whole row, next_from_top_k() on that row's
// top-k candidates, sample_row's kernel with the Sampler's draw number (every token, top_p 1)
// and next_from_nucleus() on the 1024 largest with the row's total (every token, top_p < 1; the
// whole row's nucleus found by selection equals the walk down the sorted row) give the same
// token for the same seed, on random rows, rows of ties and rows with -inf, for every
// option; NaN is refused alike. The integer weights are 2^42 exp(y) within about a unit, and the
// draws' frequencies are the softmax's.
#include "program/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

#include "backend/kernel_table.h"
#include "core/error.h"
#include "ops/registry.h"
#include "ops/sampling_weight.h"

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

// sample_row's cpu kernel on a row: [token, total, first NaN].
std::vector<int64_t> sample_row(const std::vector<double>& r, double temperature, uint64_t draw) {
  const Kernel* k = KernelTable::get().find(*Registry::get().find("sample_row"), DeviceType::kCpu);
  Tensor row = Tensor::empty({static_cast<int64_t>(r.size())}, DType::kFloat64);
  std::copy(r.begin(), r.end(), row.data<double>());
  Tensor out = Tensor::empty({3}, DType::kInt64);
  (*k)({Value::from_tensor(row), Value::floating(temperature),
        Value::integer(static_cast<int64_t>(draw))},
       {out}, KernelContext{});
  return {out.data<int64_t>()[0], out.data<int64_t>()[1], out.data<int64_t>()[2]};
}

TEST(Sampler, WeightsAreTwoToThe42TimesExpWithinAUnit) {
  using sampling::kWeightOne;
  using sampling::weight;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(weight(3.5, 3.5, 0.7), kWeightOne);
  EXPECT_EQ(weight(inf, inf, 0.7), kWeightOne);
  EXPECT_EQ(weight(-inf, -inf, 0.7), kWeightOne);  // a row of -inf: all alike
  EXPECT_EQ(weight(-inf, 1.0, 0.7), 0);
  EXPECT_EQ(weight(1.0, inf, 0.7), 0);
  EXPECT_EQ(weight(-40.0, 0.0, 1.0), 0);
  int64_t previous = kWeightOne;
  for (int i = 1; i <= 31000; ++i) {
    const double y = -i * 1e-3;
    const int64_t w = weight(y, 0.0, 1.0);
    const double want = std::ldexp(std::exp(y), sampling::kWeightBits);
    ASSERT_LE(std::abs(static_cast<double>(w) - std::floor(want)), 1.0 + want * 1e-14) << y;
    ASSERT_LE(w, previous) << y;  // never rising as the logit falls
    previous = w;
  }
}

TEST(Sampler, WholeRowDrawIsSampleRowsKernel) {
  for (int64_t n : {1, 2, 100, 5000})
    for (int pattern = 0; pattern < 4; ++pattern)
      for (double temperature : {0.3, 1.0, 2.5}) {
        std::vector<double> r =
            row(n, static_cast<uint32_t>(n + pattern), pattern == 1 ? 3 : 0, pattern == 3 ? 3 : 0);
        if (pattern == 2) std::fill(r.begin(), r.end(), -0.5);
        const uint64_t seed = static_cast<uint64_t>(n * 5 + pattern);
        Sampler s({temperature, 0, 1.0, seed});
        ASSERT_TRUE(s.draws_whole_row());
        std::mt19937_64 twin(seed);
        for (int draw = 0; draw < 6; ++draw) {
          const std::vector<int64_t> k = sample_row(r, temperature, twin() >> 11);
          ASSERT_EQ(k[2], -1);
          ASSERT_EQ(s.next(r), k[0]) << "n " << n << " pattern " << pattern << " draw " << draw;
        }
      }
  std::vector<double> r = row(50, 4);
  r[31] = r[12] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(sample_row(r, 1.0, 5), (std::vector<int64_t>{-1, 0, 12}));
}

TEST(Sampler, NucleusFromTheLargestCandidatesDrawsAsTheWholeRow) {
  int fell_short = 0, drew = 0;
  for (int64_t n : {10, 3000, 5000})
    for (int pattern = 0; pattern < 4; ++pattern)
      for (double temperature : {0.3, 1.0, 4.0})
        for (double top_p : {0.5, 0.9, 0.99}) {
          std::vector<double> r = row(n, static_cast<uint32_t>(n + 3 * pattern),
                                      pattern == 1 ? 3 : 0, pattern == 3 ? 3 : 0);
          if (pattern == 2) std::fill(r.begin(), r.end(), 2.0);
          const SamplingOptions o{temperature, 0, top_p, static_cast<uint64_t>(n + pattern)};
          Sampler whole(o), candidates(o), sorted(o);
          std::vector<double> values, all_values;
          std::vector<int64_t> tokens, all_tokens;
          top_k(r, 1024, &values, &tokens);
          top_k(r, n, &all_values, &all_tokens);  // the definition: the whole row in order
          const int64_t total = sample_row(r, temperature, 0)[1];
          for (int draw = 0; draw < 4; ++draw) {
            int64_t got = candidates.next_from_nucleus(values, tokens, total);
            if (got < 0) {
              ++fell_short;
              got = candidates.next(r);
            } else {
              ++drew;
            }
            const int64_t want = whole.next(r);  // by selection, not a sort
            ASSERT_EQ(got, want) << "n " << n << " pattern " << pattern << " temperature "
                                 << temperature << " top_p " << top_p;
            ASSERT_EQ(sorted.next_from_nucleus(all_values, all_tokens, total), want);
          }
        }
  EXPECT_GT(fell_short, 0);  // flat rows' nuclei reach past 1024 tokens
  EXPECT_GT(drew, fell_short);
}

// The frequencies of 200000 draws against the probabilities: the softmax at the temperature
// over every token (index order), over the top 3 (sorted), and over the nucleus of 0.8.
TEST(Sampler, DrawsFollowTheSoftmax) {
  const std::vector<double> r = {0.1, 1.2, -0.7, 1.2, 0.4, -3.0};
  const double temperature = 0.7;
  for (const auto& [top_k, top_p] : {std::pair<int64_t, double>{0, 1.0}, {3, 1.0}, {0, 0.8}}) {
    std::vector<double> p(r.size());
    for (size_t i = 0; i < r.size(); ++i) p[i] = std::exp((r[i] - 1.2) / temperature);
    std::vector<size_t> order(r.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r[a] > r[b]; });
    const double all = std::accumulate(p.begin(), p.end(), 0.0);
    double kept = 0;
    size_t keep = 0;
    while (keep < order.size()) {
      if (top_k > 0 && static_cast<int64_t>(keep) == top_k) break;
      if (top_p < 1 && keep > 0 && kept >= top_p * all) break;
      kept += p[order[keep]];
      ++keep;
    }
    std::vector<double> want(r.size(), 0.0);
    for (size_t i = 0; i < keep; ++i) want[order[i]] = p[order[i]] / kept;
    Sampler s({temperature, top_k, top_p, 17});
    const int draws = 200000;
    std::vector<int> count(r.size(), 0);
    for (int i = 0; i < draws; ++i) ++count[s.next(r)];
    for (size_t i = 0; i < r.size(); ++i) {
      const double sigma = std::sqrt(want[i] * (1 - want[i]) / draws);
      EXPECT_NEAR(count[i] / double(draws), want[i], 5 * sigma + 1e-9)
          << "token " << i << " top_k " << top_k << " top_p " << top_p;
    }
  }
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
