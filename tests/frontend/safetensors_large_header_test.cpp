// safetensors headers of many tensors are read and written in time linear in their size: the
// order-preserving JSON object used to find every key by linear search (40k / 80k / 160k
// one-element tensors: 0.9 / 5.3 / 22.4 s; 200k would be about 35 s). 200k tensors now take a
// fraction of a second in Release; the test compares 50k with 200k.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "frontend/json_util.h"
#include "frontend/safetensors.h"
#include "test_util.h"

namespace inplace {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A header of `n` one-element float32 tensors, written by hand (not by the writer under test).
std::string many_tensors_file(int n) {
  std::string header = "{";
  for (int k = 0; k < n; ++k) {
    if (k) header += ',';
    header += str_cat("\"layer.", k, ".w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[",
                      4 * k, ",", 4 * k + 4, "]}");
  }
  header += "}";
  std::string out(8, '\0');
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  for (int k = 0; k < n; ++k) {
    float v = static_cast<float>(k);
    out.append(reinterpret_cast<const char*>(&v), 4);
  }
  return out;
}

constexpr int kTensors = 200000;

// Seconds to read and to write a header of n tensors.
std::pair<double, double> read_write_seconds(int n) {
  const std::string bytes = many_tensors_file(n);
  auto t0 = std::chrono::steady_clock::now();
  auto tensors = read_safetensors_bytes(bytes, "<many>");
  const double read_s = seconds_since(t0);
  EXPECT_EQ(tensors.size(), static_cast<size_t>(n));
  t0 = std::chrono::steady_clock::now();
  const std::string written = write_safetensors_bytes(tensors);
  const double write_s = seconds_since(t0);
  auto again = read_safetensors_bytes(written, "<rewritten>");
  EXPECT_EQ(again.size(), tensors.size());
  for (int k : {0, 1, n / 2 + 7, n - 1}) {
    const std::string key = str_cat("layer.", k, ".w");
    EXPECT_EQ(*tensors.at(key).data<float>(), static_cast<float>(k)) << key;
    EXPECT_EQ(*again.at(key).data<float>(), static_cast<float>(k)) << key;
  }
  return {read_s, write_s};
}

// Linear, not quadratic: four times the tensors take about four times as long (a quadratic
// parse, sixteen). A ratio, not a bound in seconds, so a loaded machine or a sanitizer build
// (both slow every size alike) does not fail it; benchmarks give the seconds
// (docs/performance.md, "safetensors headers of many tensors").
TEST(SafetensorsLargeHeader, TwoHundredThousandTensorsParseInLinearTime) {
  // The best of three, the sizes alternating: another process's burst (CTest runs tests side by
  // side) slows one run, not all three.
  double read_small = 1e9, write_small = 1e9, read_big = 1e9, write_big = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    const auto [rs, ws] = read_write_seconds(kTensors / 4);
    const auto [rb, wb] = read_write_seconds(kTensors);
    read_small = std::min(read_small, rs), write_small = std::min(write_small, ws);
    read_big = std::min(read_big, rb), write_big = std::min(write_big, wb);
  }
  // A floor on the small times keeps a timer's granularity out of the ratio.
  EXPECT_LT(read_big, 10 * std::max(read_small, 0.01))
      << "reading " << kTensors / 4 << " tensors: " << read_small << " s, " << kTensors << ": "
      << read_big << " s";
  EXPECT_LT(write_big, 10 * std::max(write_small, 0.01))
      << "writing " << kTensors / 4 << " tensors: " << write_small << " s, " << kTensors << ": "
      << write_big << " s";
}

TEST(SafetensorsLargeHeader, StrictParseKeepsOrderAndStillRefusesRepeatedKeys) {
  // parse_strict appends keys without searching: order is the text's, and a repeat is refused.
  json_util::Json j = json_util::parse_strict(R"({"b":1,"a":{"y":2,"x":3},"c":[4]})", "t", "<t>");
  std::string order;
  for (auto it = j.begin(); it != j.end(); ++it) order += it.key();
  EXPECT_EQ(order, "bac");
  EXPECT_EQ(j["a"]["x"], 3);
  EXPECT_EQ(j.dump(), R"({"b":1,"a":{"y":2,"x":3},"c":[4]})");
  EXPECT_THROW(json_util::parse_strict(R"({"a":1,"b":2,"a":3})", "t", "<t>"), Error);
  EXPECT_THROW(json_util::parse_strict(R"({"o":{"k":1,"k":1}})", "t", "<t>"), Error);
}

}  // namespace
}  // namespace inplace
