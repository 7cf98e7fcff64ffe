// Program files: a saved program loads back with the same methods, state table, initial
// values and one copy of the weights, and runs the same conversation; anything broken is
// refused naming the file (and the method or state entry) — under the sanitizer build a
// refused load must leak nothing (LeakSanitizer is on there).
#include <cstring>

#include "engine/engine_file.h"
#include "engine/engine_file_codec.h"
#include "program/program_test_util.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

std::vector<std::vector<Tensor>> run_calls(Session& s, const std::vector<Call>& calls) {
  std::vector<std::vector<Tensor>> out;
  for (const Call& c : calls) out.push_back(s.run(c.method, c.inputs));
  return out;
}

// The file's fields (after magic, ABI and count), as offsets of their contents.
struct Framing {
  std::vector<size_t> start, length;
};
Framing framing(const std::string& bytes) {
  Framing f;
  size_t pos = 16;
  for (uint32_t k = 0; k < kProgramFileFieldCount; ++k) {
    uint64_t n = 0;
    std::memcpy(&n, bytes.data() + pos, 8);
    f.start.push_back(pos + 8);
    f.length.push_back(n);
    pos += 8 + n;
  }
  return f;
}
void fix_checksum(std::string& bytes) {
  uint64_t sum = engine_file_checksum(std::string_view(bytes).substr(0, bytes.size() - 8));
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
}

TEST(ProgramFile, RoundTripKeepsMethodsStateInitialValuesAndSharedWeights) {
  DecoderGraphs g = decoder_graphs(false);
  g.prefill->constants["layers.0.k_cache"] = seeded_uniform({1, 1, kSlots, kDim}, 5);
  g.decode->constants["layers.0.k_cache"] = seeded_uniform({1, 1, kSlots, kDim}, 5);
  g.peek->constants["layers.0.k_cache"] = seeded_uniform({1, 1, kSlots, kDim}, 5);
  auto program = decoder_program(g, false);
  std::string bytes = serialize_program(*program);
  ASSERT_TRUE(is_program_file(bytes));
  auto loaded = deserialize_program(bytes, "<memory>");
  EXPECT_EQ(loaded->describe(), program->describe());
  ASSERT_EQ(loaded->weights().size(), 1u);
  EXPECT_TRUE(loaded->method("prefill").engine->plan().constants[0].same_storage(
      loaded->method("decode").engine->plan().constants[0]));
  const StateEntry& cache = loaded->state()[loaded->state().find("layers.0.k_cache")];
  EXPECT_TRUE(tensor_equal(cache.initial, seeded_uniform({1, 1, kSlots, kDim}, 5)));
  std::vector<Call> calls = conversation(5, 2, 80);
  auto a = program->new_session();
  auto b = loaded->new_session();
  auto want = run_calls(*a, calls), got = run_calls(*b, calls);
  for (size_t c = 0; c < want.size(); ++c)
    for (size_t j = 0; j < want[c].size(); ++j)
      EXPECT_TRUE(tensor_equal(got[c][j], want[c][j])) << "call " << c << " output " << j;
  EXPECT_TRUE(tensor_equal(b->state("layers.0.k_cache"), a->state("layers.0.k_cache")));
  // The weights are stored once: the file is smaller than the methods saved as engines.
  size_t engines = 0;
  for (const Method& m : program->methods()) engines += serialize_engine(*m.engine).size();
  EXPECT_LT(bytes.size(), engines + 2 * kSlots * kDim * 4 + 4096);
}

TEST(ProgramFile, CorruptedMethodIsRefusedNamingTheMethod) {
  DecoderGraphs g = decoder_graphs(false);
  std::string bytes = serialize_program(*decoder_program(g, false));
  Framing f = framing(bytes);
  // Damage the embedded decode engine's magic: every engine-file check applies to a method.
  size_t at = bytes.find("INPLACE", f.start[kProgramFieldMethods] + 200);
  ASSERT_NE(at, std::string::npos);
  std::string broken = bytes;
  broken[at] = 'X';
  fix_checksum(broken);
  std::string err = error_of([&] { deserialize_program(broken, "p.inplace"); });
  EXPECT_TRUE(mentions(err, {"p.inplace", "method '", "bad magic"})) << err;
  // Without fixing the checksum, the damage is caught by it.
  broken = bytes;
  broken[at] = 'X';
  EXPECT_TRUE(
      mentions(error_of([&] { deserialize_program(broken, "p.inplace"); }), {"checksum mismatch"}));
  // Every truncation is refused, never a crash.
  for (size_t n : {size_t{0}, size_t{7}, size_t{20}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_FALSE(
        error_of([&] { deserialize_program(std::string_view(bytes).substr(0, n), "t"); }).empty())
        << n;
}

TEST(ProgramFile, RuntimeStateOverTheLimitIsRefusedStatingIt) {
  DecoderGraphs g = decoder_graphs(false);
  std::string bytes = serialize_program(*decoder_program(g, false));
  Framing f = framing(bytes);
  // The cache entry's shape [1, 1, 8, 4] becomes [1, 2^20, 2^20, 4] in place (same bytes).
  std::string field = bytes.substr(f.start[kProgramFieldState], f.length[kProgramFieldState]);
  size_t name = field.find("layers.0.k_cache");
  ASSERT_NE(name, std::string::npos);
  size_t dims = name + std::strlen("layers.0.k_cache") + 2 + 4;  // ownership, dtype, rank
  int64_t big = int64_t{1} << 20;
  std::memcpy(bytes.data() + f.start[kProgramFieldState] + dims + 8, &big, 8);
  std::memcpy(bytes.data() + f.start[kProgramFieldState] + dims + 16, &big, 8);
  fix_checksum(bytes);
  std::string err = error_of([&] { deserialize_program(bytes, "p.inplace"); });
  EXPECT_TRUE(mentions(err, {"p.inplace", "'layers.0.k_cache'", "over the limit of",
                             std::to_string(kMaxStateBytes)}))
      << err;
}

TEST(ProgramFile, RuntimeStateWithoutAnInitialValueIsRefused) {
  DecoderGraphs g = decoder_graphs(false);
  std::string bytes = serialize_program(*decoder_program(g, false));
  Framing f = framing(bytes);
  std::string field = bytes.substr(f.start[kProgramFieldState], f.length[kProgramFieldState]);
  size_t name = field.find("layers.0.count");
  ASSERT_NE(name, std::string::npos);
  size_t init = name + std::strlen("layers.0.count") + 2 + 4 + 8;  // rank 1
  uint32_t none = 0xffffffffu;
  std::memcpy(bytes.data() + f.start[kProgramFieldState] + init, &none, 4);
  fix_checksum(bytes);
  EXPECT_TRUE(mentions(error_of([&] { deserialize_program(bytes, "p.inplace"); }),
                       {"'layers.0.count'", "no initial value"}));
}

TEST(ProgramFile, AnEngineFileLoadsAsAOneMethodProgram) {
  DecoderGraphs g = decoder_graphs(true);
  auto program = decoder_program(g, true);
  auto one = program_from_engine(program->method("decode").engine);
  EXPECT_EQ(one->methods()[0].name, "forward");
  ASSERT_GE(one->state().find("k_cache"), 0) << one->describe();
  // Lifted buffers of a plain engine have no stored initial value: the caller owns them.
  EXPECT_EQ(one->state()[one->state().find("layers.0.count")].ownership, Ownership::kCaller);
}

TEST(ProgramFile, SaveAndLoadThroughAFile) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  std::string path = ::testing::TempDir() + "/program_file_test.inplace";
  save_program(*program, path);
  auto loaded = load_program_or_engine(path);
  EXPECT_EQ(loaded->describe(), program->describe());
  std::remove(path.c_str());
  EXPECT_TRUE(mentions(error_of([&] { load_program(path); }), {path}));
}

}  // namespace
