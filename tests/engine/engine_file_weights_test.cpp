// Engine files with weights (64-byte aligned data at offsets from the file start), a user
// alias declared with --mutated-input semantics, and the `inplace compile` / `inspect` CLI.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/engine_file_codec.h"
#include "engine/engine_file_util.h"
#include "ir/builder.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// x.add_(w * 2) with a weight w: the new x is output 1 (a user alias), w is a constant.
std::unique_ptr<Graph> weighted_graph() {
  GraphBuilder b("weighted");
  Node* x = b.placeholder("x");
  Node* w = b.get_attr("w", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  Node* w2 = b.call_method("mul", {w, 2.0});
  b.call_method("add_", {x, w2});
  b.output(arg::tuple({b.call_function("torch.sum", {x})}));
  return b.build();
}

TEST(EngineFileWeights, WeightsAreAlignedAndRoundTrip) {
  auto g = weighted_graph();
  Tensor x = Tensor::from_vector<float>({10, 20, 30, 40, 50, 60}, {2, 3});
  CompiledProgram cp = compile(*g, {x});
  ASSERT_GT(cp.engine->weight_bytes(), 0) << cp.engine->describe();
  std::string bytes = serialize_engine(*cp.engine);
  auto loaded = deserialize_engine(bytes, "w.inplace");
  EXPECT_EQ(loaded->weight_bytes(), cp.engine->weight_bytes());
  EXPECT_EQ(loaded->aliased_io(), cp.engine->aliased_io());
  EXPECT_EQ(serialize_engine(*loaded), bytes);
  // INPLACE_WRITE_FUZZ_CORPUS=1 refreshes the fuzzer's corpus entry with weights.
  if (std::getenv("INPLACE_WRITE_FUZZ_CORPUS"))
    save_engine(*cp.engine, INPLACE_SOURCE_DIR "/tests/fuzz/corpus/engine_file/weighted.inplace");

  // Every weight's data sits at a 64-byte multiple from the file start and equals the tensor.
  const Plan& plan = cp.engine->plan();
  size_t pos = 16;
  for (uint32_t k = 0; k < kFieldWeights; ++k) {
    uint64_t n;
    std::memcpy(&n, bytes.data() + pos, 8);
    pos += 8 + n;
  }
  engine_file::Reader r(std::string_view(bytes).substr(pos + 8), "w", "WEIGHTS");
  ASSERT_EQ(r.u32("count"), plan.constants.size());
  for (const Tensor& c : plan.constants) {
    r.str("name");
    r.dtype("dtype");
    r.shape("shape");
    uint64_t offset = r.u64("offset"), nbytes = r.u64("nbytes");
    EXPECT_EQ(offset % 64, 0u);
    ASSERT_EQ(nbytes, c.nbytes());
    EXPECT_EQ(std::memcmp(bytes.data() + offset, c.data_ptr(), nbytes), 0);
  }

  Tensor xa = x.clone(), xb = x.clone();
  ExecutionContext ca(cp.engine), cb(loaded);
  ca.bind_input(0, xa);
  cb.bind_input(0, xb);
  auto oa = ca.execute(), ob = cb.execute();
  ASSERT_EQ(oa.size(), ob.size());
  for (size_t j = 0; j < oa.size(); ++j) EXPECT_TRUE(tensor_equal(oa[j], ob[j], 0));
  // x + 2w, computed by hand.
  EXPECT_TRUE(tensor_equal(xb, Tensor::from_vector<float>({12, 24, 36, 48, 60, 72}, {2, 3}), 0));
  for (const Mutation& a : loaded->aliased_io()) EXPECT_EQ(ob[a.output].data_ptr(), xb.data_ptr());
}

TEST(EngineFileWeights, MisplacedWeightDataIsRefused) {
  auto g = weighted_graph();
  CompiledProgram cp = compile(*g, {Tensor::zeros({2, 3}, DType::kFloat32)});
  std::string bytes = serialize_engine(*cp.engine);
  // Find the first weight's offset field (the u64 right before its byte count) and nudge it.
  uint64_t nbytes = cp.engine->plan().constants[0].nbytes();
  size_t at = std::string::npos;
  for (size_t k = 16; k + 16 <= bytes.size(); ++k) {
    uint64_t off, n;
    std::memcpy(&off, bytes.data() + k, 8);
    std::memcpy(&n, bytes.data() + k + 8, 8);
    if (n == nbytes && off % 64 == 0 && off > k && off < bytes.size()) at = k;
  }
  ASSERT_NE(at, std::string::npos);
  for (uint64_t bad : {uint64_t{8}, uint64_t{1} << 62, uint64_t{0}}) {
    std::string b = bytes;
    uint64_t off;
    std::memcpy(&off, b.data() + at, 8);
    off = bad == 8 ? off + 8 : bad;
    std::memcpy(b.data() + at, &off, 8);
    uint64_t h = engine_file_checksum(std::string_view(b).substr(0, b.size() - 8));
    std::memcpy(b.data() + b.size() - 8, &h, 8);
    EXPECT_THROW(deserialize_engine(b, "w.inplace"), Error);
  }
}

std::string run_cli(const std::string& args, int* status) {
  std::string out = ::testing::TempDir() + "engine_file_cli.txt";
  *status = std::system((std::string(INPLACE_CLI) + " " + args + " > " + out + " 2>&1").c_str());
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(EngineFileCli, CompileThenInspect) {
  const std::string dir = INPLACE_SOURCE_DIR "/examples/kv_cache_write";
  const std::string file = ::testing::TempDir() + "engine_file_cli.inplace";
  int status = 0;
  std::string out = run_cli(
      "compile " + dir + "/graph.json --inputs " + dir + "/inputs.safetensors -o " + file, &status);
  ASSERT_EQ(status, 0) << out;
  out = run_cli("inspect " + file, &status);
  ASSERT_EQ(status, 0) << out;
  // compile writes a program file of one method (the engine file's successor).
  EXPECT_NE(out.find("program ABI"), std::string::npos) << out;
  EXPECT_NE(out.find("method forward:"), std::string::npos) << out;
  EXPECT_NE(out.find("cache [1,2,8,4] float32  state, caller-owned, written"), std::string::npos)
      << out;
  EXPECT_NE(out.find("'cache' (kv_cache_update)"), std::string::npos) << out;
  EXPECT_NE(out.find("kv_cache_update: 1"), std::string::npos) << out;

  out = run_cli("compile " + dir + "/graph.json --inputs " + dir +
                    "/inputs.safetensors --no-alias -o " + file,
                &status);
  ASSERT_EQ(status, 0) << out;
  out = run_cli("inspect " + file, &status);
  EXPECT_NE(out.find("aliased_io: (none)"), std::string::npos) << out;

  // exec runs the program file like the graph: same outputs, same inputs after the call.
  out = run_cli("compile " + dir + "/graph.json --inputs " + dir + "/inputs.safetensors -o " + file,
                &status);
  ASSERT_EQ(status, 0) << out;
  const std::string a = ::testing::TempDir() + "engine_file_a.safetensors";
  const std::string b = ::testing::TempDir() + "engine_file_b.safetensors";
  out = run_cli("exec " + file + " --inputs " + dir + "/inputs.safetensors --out " + a, &status);
  ASSERT_EQ(status, 0) << out;
  out = run_cli("exec " + dir + "/graph.json --inputs " + dir + "/inputs.safetensors --out " + b,
                &status);
  ASSERT_EQ(status, 0) << out;
  auto ra = read_safetensors(a), rb = read_safetensors(b);
  EXPECT_EQ(ra.size(), rb.size());
  for (const auto& [k, t] : rb) {
    ASSERT_TRUE(ra.count(k)) << k;
    EXPECT_TRUE(tensor_equal(ra.at(k), t, 1e-6)) << k;
  }
  EXPECT_FALSE(tensor_equal(ra.at("input.cache"),
                            read_safetensors(dir + "/inputs.safetensors").at("cache"), 0))
      << "the program wrote the cache (caller-owned state)";

  // A broken file: exit status 1, one line naming the file.
  std::ofstream(file, std::ios::binary) << "INPLACE";
  out = run_cli("inspect " + file, &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find(file), std::string::npos) << out;
  std::remove(file.c_str());
}

}  // namespace
