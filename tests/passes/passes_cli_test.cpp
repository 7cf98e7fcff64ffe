// `inplace passes` and `inplace exec --mode functional`, run as separate processes: functional
// mode must leave exactly what eager mode leaves (outputs, inputs, buffers).
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "pass_test_util.h"
#include "random_program.h"

namespace inplace::testing {
namespace {

namespace fs = std::filesystem;
const std::string kFixtures = std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures";

struct Result {
  int code = -1;
  std::string out, err;
};

class PassesCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("inplace_passes_cli_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }
  static std::string slurp(const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  Result run(const std::string& args) const {
    std::string cmd =
        std::string(INPLACE_CLI) + " " + args + " >" + path("stdout") + " 2>" + path("stderr");
    int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(path("stdout"));
    r.err = slurp(path("stderr"));
    return r;
  }
  // Runs exec in both modes and compares every tensor they write.
  ::testing::AssertionResult modes_agree(const std::string& graph, const TensorMap& inputs) {
    write_safetensors(path("in.safetensors"), inputs);
    for (const char* mode : {"eager", "functional"}) {
      Result r = run("exec " + graph + " --inputs " + path("in.safetensors") + " --out " +
                     path(std::string(mode) + ".safetensors") + " --mode " + mode);
      if (r.code != 0) return ::testing::AssertionFailure() << mode << ": " << r.err;
    }
    auto eager = read_safetensors(path("eager.safetensors"));
    auto functional = read_safetensors(path("functional.safetensors"));
    if (eager.size() != functional.size())
      return ::testing::AssertionFailure() << eager.size() << " vs " << functional.size();
    for (const auto& [k, t] : eager) {
      if (!functional.count(k)) return ::testing::AssertionFailure() << "missing " << k;
      auto r = tensor_equal(functional.at(k), t);
      if (!r) return ::testing::AssertionFailure() << k << ": " << r.message();
    }
    return ::testing::AssertionSuccess();
  }
  fs::path dir_;
};

TEST_F(PassesCli, FunctionalModeAgreesWithEagerOnTheFixtures) {
  std::mt19937 rng(11);
  TensorMap torch_in{{"x", random_tensor({2, 3}, DType::kFloat32, rng)},
                     {"k", random_tensor({1, 2, 3}, DType::kFloat32, rng)},
                     {"pos", Tensor::scalar(2, DType::kInt64)}};
  EXPECT_TRUE(modes_agree(kFixtures + "/torch_level.json", torch_in));
  TensorMap aten_in{{"x", random_tensor({2, 3}, DType::kFloat32, rng)},
                    {"k", random_tensor({1, 2, 1, 3}, DType::kFloat32, rng)},
                    {"idx", lt({3}, {1})}};
  EXPECT_TRUE(modes_agree(kFixtures + "/aten_level.json", aten_in));
}

TEST_F(PassesCli, FunctionalModeAgreesOnRandomPrograms) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    RandomProgram p = make_random_program(seed * 7919);
    // Graph JSON keeps buffers as constants and inputs by name: the same program as a file.
    std::string g = path("random.json");
    write_graph_json_file(*p.graph, g);
    EXPECT_TRUE(modes_agree(g, p.inputs)) << "seed " << seed * 7919;
  }
}

TEST_F(PassesCli, PassesPrintsTheFunctionalGraphAndTheIoMap) {
  Result r = run("passes " + kFixtures + "/torch_level.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("add_"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("setitem"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x_modified = call_function[target=aten.add.Tensor]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("cache_modified"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# io_map: {2: 0, 3: 3}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("new value of buffer 'cache'"), std::string::npos) << r.out;
}

TEST_F(PassesCli, UntilPrintAfterVerboseAndJson) {
  const std::string g = kFixtures + "/torch_level.json";
  Result r = run("passes " + g + " --until alias_analysis");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("aten.add_.Tensor"), std::string::npos) << r.out;
  r = run("passes " + g + " --print-after normalize --verbose");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("aten.add_.Tensor"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("x_modified"), std::string::npos) << r.out;
  for (const char* pass :
       {"normalize", "alias_analysis", "inplace_to_out_of_place", "dead_code_elimination"})
    EXPECT_NE(r.err.find(pass), std::string::npos) << r.err;
  r = run("passes " + g + " --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  std::unique_ptr<Graph> back = read_graph_json_string(r.out, kFixtures);
  EXPECT_EQ(count_target(*back, "aten.add.Tensor"), 2);
}

TEST_F(PassesCli, UntilAndPrintAfterReachTheEnginePasses) {
  // Without them the engine passes do not run: the buffer stays a get_attr.
  const std::string g = kFixtures + "/torch_level.json";
  Result r = run("passes " + g);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("get_attr[target=cache]"), std::string::npos) << r.out;
  r = run("passes " + g + " --print-after lift_mutated_buffers");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("get_attr[target=cache]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("placeholder[target=cache]"), std::string::npos) << r.out;
  // The KV matcher needs the cache's shape: from --inputs.
  const std::string kv = std::string(INPLACE_SOURCE_DIR) + "/examples/kv_cache_write";
  r = run("passes " + kv + "/graph.json --inputs " + kv +
          "/inputs.safetensors --until kv_cache_update");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("inplace.kv_cache_update"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("written by kv_cache_update"), std::string::npos) << r.out;
  r = run("passes " + kv + "/graph.json --inputs " + kv + "/inputs.safetensors");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("inplace.kv_cache_update"), std::string::npos) << r.out;
}

TEST_F(PassesCli, ErrorsAreOneLine) {
  Result r = run("passes " + kFixtures + "/torch_level.json --until fold");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("inplace: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("unknown pass 'fold'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  r = run("passes");
  EXPECT_EQ(r.code, 2) << r.err;
  r = run("passes " + kFixtures +
          "/torch_level.json --until normalize --print-after alias_analysis");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("comes after --until"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace inplace::testing
