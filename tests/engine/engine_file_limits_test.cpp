// What the engine-file loader refuses is never written: save_engine (`inplace compile -o`) reads
// the PLAN field back with the loader's own reader, so an engine past its limits (sizes,
// strides, offsets past 2^50, the arena) is refused when saved, naming the limit, and no file
// is left. Before, `compile -o` wrote such engines and `run` refused them.
#include <unistd.h>

#include <filesystem>

#include "engine/engine_file_util.h"
#include "ir/builder.h"
#include "program/program_file.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "limits_" + std::to_string(::getpid()) + "_" + name;
}

void expect_save_refused(const Engine& e, const std::string& why) {
  const std::string path = temp_path("refused.inplace");
  std::filesystem::remove(path);
  try {
    save_engine(e, path);
    ADD_FAILURE() << "saved an engine the loader refuses";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kUnsupported) << err.what();
    EXPECT_NE(std::string(err.what()).find("loading would refuse it"), std::string::npos)
        << err.what();
    EXPECT_NE(std::string(err.what()).find(why), std::string::npos) << err.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_THROW(serialize_engine(e), Error);
  EXPECT_THROW(serialize_engine(e, /*with_weights=*/false), Error);  // a program's methods
}

}  // namespace

TEST(EngineFileLimits, HugePlaceholderIsRefusedWhenSavedNotWhenLoaded) {
  GraphBuilder b("huge");
  Node* x = b.placeholder("x");
  b.output(arg::tuple({b.call_function("torch.mul", {x, 2.0})}));
  auto g = b.build();
  // 2^52 elements: past the loader's 2^50, yet its bytes fit 64 bits, so it compiles.
  const int64_t n = int64_t{1} << 26;
  CompiledProgram cp = compile(*g, {Tensor::meta({n, n}, DType::kFloat32)});
  expect_save_refused(*cp.engine, "input binding 'x' has too many elements [67108864,67108864]");
}

TEST(EngineFileLimits, AResultWhoseBytesOverflowIsRefusedAtCompile) {
  GraphBuilder b("huger");
  Node* x = b.placeholder("x");
  b.output(arg::tuple({b.call_function("torch.mul", {x, 2.0})}));
  auto g = b.build();
  const int64_t n = int64_t{1} << 31;  // [2^31, 2^31] float32: 2^64 bytes
  try {
    compile(*g, {Tensor::meta({n, n}, DType::kFloat32)});
    ADD_FAILURE() << "compiled a result of 2^64 bytes";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("more bytes than 64 bits count"), std::string::npos)
        << e.what();
  }
}

TEST(EngineFileLimits, EnginesWithinTheLimitsStillSave) {
  GraphBuilder b("fine");
  Node* x = b.placeholder("x");
  b.output(arg::tuple({b.call_function("torch.mul", {x, 2.0})}));
  auto g = b.build();
  // 2^20 x 2^20 elements: far more than memory, inside the loader's limits (a meta compile).
  const int64_t n = int64_t{1} << 20;
  CompiledProgram cp = compile(*g, {Tensor::meta({n, n}, DType::kFloat32)});
  const std::string bytes = serialize_engine(*cp.engine);
  EXPECT_EQ(deserialize_engine(bytes, "<memory>")->inputs()[0].shape, (Shape{n, n}));
}
