// Engine files: every example round-trips (same outputs, same aliased I/O, writes the caller's
// tensors in place); the format's fields are what docs/engine-format.md says.
#include <cstdio>
#include <cstring>

#include "engine/engine_file_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

TEST(EngineFile, ExamplesRoundTripThroughAFile) {
  auto dirs = engine_file_examples();
  ASSERT_GE(dirs.size(), 3u);
  for (const std::string& dir : dirs) {
    for (bool alias : {true, false}) {
      SCOPED_TRACE(dir + (alias ? " (aliased)" : " (copy-back)"));
      Example ex = compile_example(dir, alias);
      const auto& original = ex.compiled.engine;
      std::string path = ::testing::TempDir() + "engine_file_roundtrip.inplace";
      save_engine(*original, path);
      std::shared_ptr<const Engine> loaded = load_engine(path);
      std::remove(path.c_str());

      EXPECT_EQ(loaded->name(), original->name());
      EXPECT_EQ(loaded->aliased_io(), original->aliased_io());
      if (alias)
        EXPECT_FALSE(loaded->aliased_io().empty()) << loaded->describe();
      else
        EXPECT_TRUE(loaded->aliased_io().empty()) << loaded->describe();
      EXPECT_EQ(loaded->outputs().size(), original->outputs().size());
      EXPECT_EQ(loaded->original_output_count(), original->original_output_count());
      EXPECT_EQ(loaded->weight_bytes(), original->weight_bytes());
      EXPECT_EQ(loaded->describe(), original->describe());

      std::vector<Tensor> bound = binding_tensors(ex);
      std::vector<Tensor> copy;
      for (const Tensor& t : bound) copy.push_back(t.clone());
      EngineRun a = run_engine(original, bound);
      EngineRun b = run_engine(loaded, copy);
      ASSERT_EQ(a.outputs.size(), b.outputs.size());
      for (size_t j = 0; j < a.outputs.size(); ++j)
        EXPECT_TRUE(tensor_equal(a.outputs[j], b.outputs[j], 0)) << "output " << j;
      for (size_t i = 0; i < a.bound.size(); ++i)
        EXPECT_TRUE(tensor_equal(a.bound[i], b.bound[i], 0)) << "input " << i;
      // The loaded engine writes the caller's tensor: same storage, same address.
      for (const Mutation& al : loaded->aliased_io()) {
        EXPECT_EQ(b.outputs[al.output].data_ptr(), b.bound[al.input].data_ptr());
        EXPECT_EQ(b.outputs[al.output].storage(), b.bound[al.input].storage());
      }
    }
  }
}

TEST(EngineFile, SerializationIsDeterministicAndReloadable) {
  Example ex = compile_example(engine_file_examples()[0]);
  std::string bytes = serialize_engine(*ex.compiled.engine);
  EXPECT_EQ(bytes, serialize_engine(*ex.compiled.engine));
  auto loaded = deserialize_engine(bytes, "<memory>");
  EXPECT_EQ(serialize_engine(*loaded), bytes);  // save(load(x)) == x
  EXPECT_TRUE(is_engine_file(bytes));
  EXPECT_EQ(std::memcmp(bytes.data(), "INPLACE\0", 8), 0);
  uint32_t abi = 0;
  std::memcpy(&abi, bytes.data() + 8, 4);
  EXPECT_EQ(abi, kEngineFileAbi);
}

TEST(EngineFile, AliasedIORecordsNameBothBindingsAndTheKind) {
  for (const std::string& dir : engine_file_examples()) {
    Example ex = compile_example(dir);
    const Engine& e = *ex.compiled.engine;
    std::string text = serialize_aliased_io(e);
    ASSERT_FALSE(text.empty()) << dir;
    const Mutation& a = e.aliased_io()[0];
    std::string first = str_cat(a.output, ":", e.outputs()[a.output].name, "@", a.input, ":",
                                e.inputs()[a.input].name, "@", mutation_kind_name(a.kind));
    EXPECT_EQ(text.substr(0, first.size()), first) << dir;
  }
  // The KV cache example's alias is a kv_cache_update one.
  Example kv = compile_example(INPLACE_SOURCE_DIR "/examples/kv_cache_write");
  EXPECT_NE(serialize_aliased_io(*kv.compiled.engine).find("@kv_cache_update"), std::string::npos)
      << kv.compiled.engine->describe();
}

TEST(EngineFile, CopyBackEngineSavesAnEmptyAliasMap) {
  Example ex = compile_example(engine_file_examples()[0], /*alias=*/false);
  EXPECT_EQ(serialize_aliased_io(*ex.compiled.engine), "");
  auto loaded = deserialize_engine(serialize_engine(*ex.compiled.engine), "<memory>");
  EXPECT_TRUE(loaded->aliased_io().empty());
}

TEST(EngineFile, MissingFileIsAnIOError) {
  try {
    load_engine("/nonexistent/dir/model.inplace");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIO);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.inplace"), std::string::npos);
  }
}

}  // namespace
