// Engine and program files loaded from a path: read once into private memory that the weights
// point into (no second copy), the engine runs exactly like one loaded from bytes, a damaged
// file (checksum, truncation, empty) is refused naming it, leaking nothing (LeakSanitizer), and
// whatever happens to the file after the load (truncated, rewritten in place, another engine
// copied over it with `cp`) changes nothing the loaded engine computes and cannot fault it.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "core/checksum.h"
#include "core/mapped_file.h"
#include "engine/engine_file_util.h"
#include "ir/builder.h"
#include "program/program_file.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// out = x @ w.T + b with float32 and bfloat16 weights: constants of several sizes and dtypes.
std::unique_ptr<Graph> weighted_graph(float scale = 1.0f) {
  GraphBuilder b("mapped");
  Node* x = b.placeholder("x");
  std::vector<float> wv(96 * 40), bv(96);
  for (size_t k = 0; k < wv.size(); ++k)
    wv[k] = scale * (0.01f * static_cast<float>(k % 97) - 0.4f);
  for (size_t k = 0; k < bv.size(); ++k) bv[k] = 0.5f - 0.01f * static_cast<float>(k);
  Node* w = b.get_attr("w", Tensor::from_vector<float>(wv, {96, 40}));
  Node* bias = b.get_attr("b", Tensor::from_vector<float>(bv, {96}));
  Node* wb = b.get_attr("wb", Tensor::from_vector<float>(wv, {96, 40}).to(DType::kBFloat16));
  Node* y = b.call_function("torch.nn.functional.linear", {x, w, bias});
  Node* z = b.call_function("torch.nn.functional.linear",
                            {x, b.call_method("to", {wb, DType::kFloat32})});
  b.output(arg::tuple({b.call_function("torch.add", {y, z})}));
  return b.build();
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "mmap_" + std::to_string(::getpid()) + "_" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

Tensor input() {
  std::vector<float> v(3 * 40);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.03f * static_cast<float>(k % 11) - 0.1f;
  return Tensor::from_vector<float>(v, {3, 40});
}

std::vector<Tensor> run(const std::shared_ptr<const Engine>& e) {
  return run_engine(e, {input()}).outputs;
}

// The message names the file and says what is wrong.
void expect_refused(const std::string& path, const std::string& why) {
  try {
    load_engine(path);
    ADD_FAILURE() << path << " loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Checksum, StreamingEqualsOneShotAndIsXxh3) {
  // XXH3-64 of the empty input, seed 0 (the reference value of xxHash's own tests).
  EXPECT_EQ(checksum64("", 0), 0x2D06800538D394C2ull);
  std::string bytes(100000, '\0');
  for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<char>(k * 131 + k / 7);
  for (size_t piece : {size_t{1}, size_t{63}, size_t{4096}, size_t{99999}}) {
    Checksum64 sum;
    for (size_t at = 0; at < bytes.size(); at += piece)
      sum.update(bytes.data() + at, std::min(piece, bytes.size() - at));
    EXPECT_EQ(sum.digest(), checksum64(bytes)) << piece;
  }
}

TEST(EngineFileMmap, MappedLoadEqualsBytesLoadAndPointsIntoTheFile) {
  auto g = weighted_graph();
  CompiledProgram cp = compile(*g, {input()});
  const std::string path = temp_path("engine.inplace");
  save_engine(*cp.engine, path);
  const std::string bytes = read_file(path);
  EXPECT_EQ(bytes, serialize_engine(*cp.engine));  // saved as streamed == serialized whole

  auto mapped = load_engine(path);
  auto copied = deserialize_engine(bytes, "<memory>");
  ASSERT_EQ(mapped->plan().constants.size(), 3u);
  for (size_t k = 0; k < mapped->plan().constants.size(); ++k) {
    const Tensor& m = mapped->plan().constants[k];
    const Tensor& c = copied->plan().constants[k];
    EXPECT_FALSE(m.storage()->owned()) << "a loaded weight views the file's bytes, no 2nd copy";
    EXPECT_TRUE(c.storage()->owned()) << "a weight loaded from bytes is a copy";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data_ptr()) % 64, 0u);
    EXPECT_TRUE(tensor_equal(m, c, 0));
  }
  std::vector<Tensor> a = run(mapped), b = run(copied), ref = run(cp.engine);
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); ++j) {
    EXPECT_TRUE(tensor_equal(a[j], b[j], 0));
    EXPECT_TRUE(tensor_equal(a[j], ref[j], 0));
  }

  // Saving over a file an engine still maps replaces it (rename): the engine is unaffected.
  save_engine(*copied, path);
  std::vector<Tensor> again = run(mapped);
  for (size_t j = 0; j < a.size(); ++j) EXPECT_TRUE(tensor_equal(again[j], a[j], 0));
  ::unlink(path.c_str());
}

TEST(EngineFileMmap, DamagedFilesAreRefusedNamingThem) {
  auto g = weighted_graph();
  CompiledProgram cp = compile(*g, {input()});
  const std::string bytes = serialize_engine(*cp.engine);
  const std::string path = temp_path("damaged.inplace");

  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x40;  // inside the weights
  write_file(path, flipped);
  expect_refused(path, "checksum mismatch");

  std::string bad_sum = bytes;
  bad_sum.back() ^= 1;
  write_file(path, bad_sum);
  expect_refused(path, "checksum mismatch");

  for (size_t keep : {bytes.size() - 1, bytes.size() / 2, size_t{20}, size_t{8}}) {
    write_file(path, bytes.substr(0, keep));
    try {
      load_engine(path);
      ADD_FAILURE() << "a file truncated to " << keep << " bytes loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCorrupt) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  write_file(path, "");
  expect_refused(path, "bad magic");
  ::unlink(path.c_str());
  expect_refused(path, "cannot open");
}

TEST(EngineFileMmap, ProgramFileWeightsAreMappedOnceForEveryMethod) {
  auto g = weighted_graph();
  CompiledProgram cp = compile(*g, {input()});
  auto program = Program::assemble("p", {cp.engine, cp.engine}, {"a", "b"},
                                   StateTable(std::vector<StateEntry>{}));
  const std::string path = temp_path("program.inplace");
  save_program(*program, path);
  EXPECT_EQ(read_file(path), serialize_program(*program));
  auto mapped = load_program(path);
  auto copied = deserialize_program(read_file(path), "<memory>");
  const Plan& a = mapped->method("a").engine->plan();
  const Plan& b = mapped->method("b").engine->plan();
  ASSERT_EQ(a.constants.size(), 3u);
  for (size_t k = 0; k < a.constants.size(); ++k) {
    EXPECT_FALSE(a.constants[k].storage()->owned());
    EXPECT_EQ(a.constants[k].data_ptr(), b.constants[k].data_ptr()) << "one copy for both";
  }
  std::vector<Tensor> x = run(mapped->method("a").engine), y = run(copied->method("b").engine);
  for (size_t j = 0; j < x.size(); ++j) EXPECT_TRUE(tensor_equal(x[j], y[j], 0));

  std::string damaged = read_file(path);
  damaged[damaged.size() - 20] ^= 1;
  write_file(path, damaged);
  try {
    load_program(path);
    ADD_FAILURE() << "a damaged program file loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  ::unlink(path.c_str());
}

TEST(MappedFile, RefusesWhatIsNotARegularFile) {
  try {
    MappedFile::open(::testing::TempDir(), "test");
    ADD_FAILURE() << "a directory was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a directory"), std::string::npos) << e.what();
  }
}

namespace {

// What `cp NEW PATH` does to an existing PATH: the same file (inode) opened with O_TRUNC and
// written again, so a process that has it mapped sees it shrink, then change.
void cp_over(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

// Every byte of the file overwritten in place (same size, same inode).
void scribble_over(const std::string& path) {
  const std::string bytes = read_file(path);
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << path;
  const std::string junk(bytes.size(), '\x7f');
  ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), 0), static_cast<ssize_t>(junk.size()));
  ::close(fd);
}

void expect_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                    const char* after) {
  ASSERT_EQ(got.size(), want.size()) << after;
  for (size_t j = 0; j < got.size(); ++j) EXPECT_TRUE(tensor_equal(got[j], want[j], 0)) << after;
}

// Every weight of `e` equals the weight of `ref` (reads every byte: a weight the kernel had
// unmapped under the engine would fault here).
void expect_weights(const Engine& e, const Engine& ref, const char* after) {
  ASSERT_EQ(e.plan().constants.size(), ref.plan().constants.size()) << after;
  for (size_t k = 0; k < e.plan().constants.size(); ++k)
    EXPECT_TRUE(tensor_equal(e.plan().constants[k], ref.plan().constants[k], 0)) << after;
}

}  // namespace

TEST(LoadedFile, EngineSurvivesTruncationCpOverAndRewriteInPlace) {
  CompiledProgram cp = compile(*weighted_graph(), {input()});
  CompiledProgram other = compile(*weighted_graph(2.0f), {input()});
  const std::vector<Tensor> want = run(cp.engine), changed = run(other.engine);
  ASSERT_FALSE(tensor_equal(want[0], changed[0], 0));
  const std::string path = temp_path("replaced.inplace");
  save_engine(*cp.engine, path);
  std::shared_ptr<const Engine> loaded = load_engine(path);
  expect_outputs(run(loaded), want, "loaded");

  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  expect_weights(*loaded, *cp.engine, "truncated to 0 bytes");
  expect_outputs(run(loaded), want, "truncated to 0 bytes");

  cp_over(path, serialize_engine(*other.engine));
  expect_weights(*loaded, *cp.engine, "cp of another engine over the file");
  expect_outputs(run(loaded), want, "cp of another engine over the file");
  expect_outputs(run(load_engine(path)), changed, "a new load of the new file");

  std::shared_ptr<const Engine> second = load_engine(path);
  scribble_over(path);
  expect_weights(*second, *other.engine, "every byte rewritten in place");
  expect_outputs(run(second), changed, "every byte rewritten in place");
  expect_outputs(run(loaded), want, "every byte rewritten in place");
  ::unlink(path.c_str());
  expect_outputs(run(second), changed, "the file removed");
}

TEST(LoadedFile, ProgramSurvivesTruncationCpOverAndRewriteInPlace) {
  CompiledProgram cp = compile(*weighted_graph(), {input()});
  CompiledProgram other = compile(*weighted_graph(2.0f), {input()});
  auto program = Program::assemble("p", {cp.engine, cp.engine}, {"a", "b"},
                                   StateTable(std::vector<StateEntry>{}));
  auto program2 =
      Program::assemble("p", {other.engine}, {"a"}, StateTable(std::vector<StateEntry>{}));
  const std::vector<Tensor> want = run(cp.engine), changed = run(other.engine);
  const std::string path = temp_path("replaced_program.inplace");
  save_program(*program, path);
  std::shared_ptr<const Program> loaded = load_program(path);
  std::shared_ptr<const Program> either = load_program_or_engine(path);

  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  for (const char* m : {"a", "b"}) {
    expect_weights(*loaded->method(m).engine, *cp.engine, "truncated to 0 bytes");
    expect_outputs(run(loaded->method(m).engine), want, "truncated to 0 bytes");
  }
  cp_over(path, serialize_program(*program2));
  expect_outputs(run(loaded->method("b").engine), want, "cp of another program over the file");
  expect_outputs(run(either->method("a").engine), want, "cp of another program over the file");
  expect_outputs(run(load_program(path)->method("a").engine), changed, "a new load");

  // An engine file loaded as a one-method program, then truncated to half.
  save_engine(*cp.engine, path);
  std::shared_ptr<const Program> as_program = load_program_or_engine(path);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(read_file(path).size() / 2)), 0);
  expect_weights(*as_program->method("forward").engine, *cp.engine, "truncated to half");
  expect_outputs(run(as_program->method("forward").engine), want, "truncated to half");
  scribble_over(path);
  expect_outputs(run(as_program->method("forward").engine), want, "rewritten in place");
  ::unlink(path.c_str());
}

TEST(LoadedFile, WritersReplaceFilesAtomicallyLeavingNoTemporary) {
  // save_engine, save_program, write_safetensors and the graph JSON writer write a temporary in
  // the same folder and rename it: an open descriptor on the old file keeps the old bytes whole.
  CompiledProgram cp = compile(*weighted_graph(), {input()});
  const std::string dir = ::testing::TempDir() + "atomic_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/f";
  auto check_replaced = [&](const std::function<void()>& write, const char* what) {
    write_file(path, std::string(1 << 16, 'o'));
    int fd = ::open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    write();
    std::string old(1 << 16, '\0');
    EXPECT_EQ(::pread(fd, old.data(), old.size(), 0), static_cast<ssize_t>(old.size())) << what;
    EXPECT_EQ(old, std::string(1 << 16, 'o')) << what << ": the old file changed under a reader";
    ::close(fd);
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path() != path;
    EXPECT_EQ(n, 0u) << what << ": a temporary was left";
  };
  check_replaced([&] { save_engine(*cp.engine, path); }, "save_engine");
  EXPECT_NE(load_engine(path), nullptr);
  check_replaced(
      [&] {
        save_program(
            *Program::assemble("p", {cp.engine}, {"a"}, StateTable(std::vector<StateEntry>{})),
            path);
      },
      "save_program");
  check_replaced([&] { write_safetensors(path, {{"t", input()}}); }, "write_safetensors");
  EXPECT_TRUE(tensor_equal(read_safetensors(path).at("t"), input(), 0));
  check_replaced([&] { write_graph_json_file(*weighted_graph(), path, {}); }, "graph JSON");
  EXPECT_NE(read_graph_json(path), nullptr);
  std::filesystem::remove_all(dir);
}
