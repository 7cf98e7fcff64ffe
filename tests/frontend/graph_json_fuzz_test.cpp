// Random mutations of valid graph JSON files: the reader must only ever throw inplace::Error
// (never crash, never another exception), and whatever it accepts must round-trip.
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "frontend/graph_equal.h"
#include "frontend/graph_json.h"
#include "test_util.h"

namespace inplace {
namespace {

using namespace inplace::testing;
using Json = nlohmann::ordered_json;

const std::string kFixtures = std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures";

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Values that stress the reader where a valid one was.
Json random_json(std::mt19937& rng) {
  static const std::vector<Json> kPool = {
      nullptr,
      true,
      false,
      0,
      -1,
      1,
      2,
      3,
      1.5,
      -0.0,
      1e308,
      9223372036854775807LL,
      static_cast<uint64_t>(18446744073709551615ULL),
      "",
      "x",
      "add_",
      "float32",
      "int8",
      "output",
      "placeholder",
      "call_function",
      "cache",
      "aten_level_weights.safetensors",
      Json::array(),
      Json::object(),
      Json::array({1, 2, 3}),
      Json::array({-1}),
      Json{{"node", "x"}},
      Json{{"node", "nope"}},
      Json{{"tuple", Json::array()}},
      Json{{"slice", Json::array({nullptr, nullptr, nullptr})}},
      Json{{"float", "nan"}},
      Json{{"tensor", {{"dtype", "float32"}, {"shape", {2}}, {"data", {1, 2}}}}},
      Json{{"tensor", {{"dtype", "int8"}, {"shape", {1000000000000}}, {"data", {1}}}}},
      Json{{"dtype", "bogus"}},
      Json{{"ellipsis", true}},
      Json{{"dict", {{"a", 1}}}},
      Json{{"file", "aten_level_weights.safetensors"}, {"key", "w"}},
      Json{{"file", "../fixtures/aten_level_weights.safetensors"}, {"key", "w"}, {"shape", {3}}},
  };
  return kPool[rng() % kPool.size()];
}

// Every sub-value of `j`, for picking one to mutate.
void collect(Json& j, std::vector<Json*>* out) {
  out->push_back(&j);
  if (j.is_array() || j.is_object())
    for (auto& c : j) collect(c, out);
}

std::string mutate_structure(const Json& original, std::mt19937& rng) {
  Json j = original;
  int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    std::vector<Json*> all;
    collect(j, &all);
    Json* target = all[rng() % all.size()];
    switch (rng() % 4) {
      case 0:
        *target = random_json(rng);
        break;
      case 1:  // drop an element or field
        if (target->is_array() && !target->empty())
          target->erase(rng() % target->size());
        else if (target->is_object() && !target->empty())
          target->erase(target->begin().key());
        break;
      case 2:  // duplicate an element
        if (target->is_array() && !target->empty())
          target->push_back((*target)[rng() % target->size()]);
        break;
      case 3:  // add a field
        if (target->is_object())
          (*target)[std::to_string(rng() % 4)] = random_json(rng);
        else if (target->is_array())
          target->push_back(random_json(rng));
        break;
    }
  }
  return j.dump();
}

std::string mutate_bytes(std::string s, std::mt19937& rng) {
  static const std::string kChars = "{}[]\",:0123456789-.eE nulltrufs\\\x01\xff";
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    size_t pos = rng() % s.size();
    switch (rng() % 4) {
      case 0:
        s[pos] = kChars[rng() % kChars.size()];
        break;
      case 1:
        s.erase(pos, 1 + rng() % 8);
        break;
      case 2:
        s.insert(pos, 1, kChars[rng() % kChars.size()]);
        break;
      case 3:
        s.resize(pos);
        break;
    }
  }
  return s;
}

void fuzz(const std::string& fixture, uint32_t seed, int rounds) {
  const std::string text = slurp(kFixtures + "/" + fixture);
  const Json parsed = Json::parse(text);
  std::mt19937 rng(seed);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < rounds; ++i) {
    std::string input = (i % 2) ? mutate_bytes(text, rng) : mutate_structure(parsed, rng);
    std::unique_ptr<Graph> g;
    try {
      g = read_graph_json_string(input, kFixtures, fixture);
    } catch (const Error&) {
      ++rejected;
      continue;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "round " << i << ": non-inplace exception " << e.what() << "\n" << input;
      return;
    }
    ++accepted;
    // What the reader accepts, the writer writes and the reader reads back the same.
    std::unique_ptr<Graph> back = read_graph_json_string(write_graph_json(*g));
    ASSERT_TRUE(graphs_identical(*g, *back)) << "round " << i << "\n" << input;
  }
  // Both outcomes happen, or the mutations are not exercising the reader.
  EXPECT_GT(accepted, rounds / 50) << fixture;
  EXPECT_GT(rejected, rounds / 4) << fixture;
}

TEST(GraphJsonFuzz, TorchLevelMutationsOnlyThrowInplaceErrors) {
  fuzz("torch_level.json", 1, 3000);
}

TEST(GraphJsonFuzz, AtenLevelMutationsOnlyThrowInplaceErrors) {
  fuzz("aten_level.json", 2, 3000);
}

}  // namespace
}  // namespace inplace
