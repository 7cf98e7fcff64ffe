// Engine files that are broken are refused with an inplace::Error naming the file, never a
// crash: bad magic, other ABI, field count, truncation at every field boundary, checksum, every
// single flipped byte, bad alias records, unknown ops, plans referring to missing buffers.
#include <cstring>

#include "engine/engine_file_codec.h"
#include "engine/engine_file_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

const char* kLabel = "model.inplace";

// Expects deserialization to fail with `code`, naming the file and containing `part`.
void expect_refused(const std::string& bytes, ErrorCode code, const std::string& part) {
  try {
    deserialize_engine(bytes, kLabel);
    ADD_FAILURE() << "loaded; expected an error containing '" << part << "'";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(e.code(), code) << msg;
    EXPECT_NE(msg.find(kLabel), std::string::npos) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

struct Fixture {
  Example ex;
  std::string bytes;
};

Fixture kv_engine() {
  Fixture f{compile_example(INPLACE_SOURCE_DIR "/examples/kv_cache_write"), {}};
  f.bytes = serialize_engine(*f.ex.compiled.engine);
  return f;
}

TEST(EngineFileCorrupt, BadMagicAbiFieldCountAndChecksum) {
  Fixture f = kv_engine();
  std::string b = f.bytes;
  b[0] = 'X';
  expect_refused(b, ErrorCode::kCorrupt, "bad magic");
  expect_refused("", ErrorCode::kCorrupt, "bad magic");

  b = f.bytes;
  uint32_t abi = 99;
  std::memcpy(b.data() + 8, &abi, 4);
  expect_refused(fix_checksum(b), ErrorCode::kAbiMismatch, "ABI version 99");
  expect_refused(fix_checksum(b), ErrorCode::kAbiMismatch,
                 str_cat("reads ABI version ", kEngineFileAbi));

  b = f.bytes;
  uint32_t count = kEngineFileFieldCount - 1;
  std::memcpy(b.data() + 12, &count, 4);
  expect_refused(fix_checksum(b), ErrorCode::kCorrupt,
                 str_cat(kEngineFileFieldCount - 1, " fields but ABI"));

  b = f.bytes;
  b[20] ^= 1;  // inside NAME's length prefix region or contents: either way refused
  EXPECT_THROW(deserialize_engine(b, kLabel), Error);
  b = f.bytes;
  b[field_boundaries(b)[1] - 1] ^= 0x20;  // the last byte of NAME
  expect_refused(b, ErrorCode::kCorrupt, "checksum mismatch");
  b = f.bytes;
  b.back() ^= 1;
  expect_refused(b, ErrorCode::kCorrupt, "checksum mismatch");
}

TEST(EngineFileCorrupt, TruncatedAtEveryFieldBoundary) {
  Fixture f = kv_engine();
  std::vector<size_t> cuts = {0, 4, 8, 11, 12, 15, 16};
  for (size_t b : field_boundaries(f.bytes)) {
    cuts.push_back(b);
    cuts.push_back(b + 3);
    cuts.push_back(b + 8);
    cuts.push_back(b + 9);
    cuts.push_back(b - 1);
  }
  cuts.push_back(f.bytes.size() - 1);
  for (size_t cut : cuts) {
    if (cut >= f.bytes.size()) continue;
    SCOPED_TRACE(cut);
    try {
      deserialize_engine(f.bytes.substr(0, cut), kLabel);
      ADD_FAILURE() << "a truncated file loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCorrupt) << e.what();
      EXPECT_NE(std::string(e.what()).find(kLabel), std::string::npos) << e.what();
    }
  }
  // A cut inside a field says which field and how many bytes it needed.
  size_t plan_start = field_boundaries(f.bytes)[kFieldPlan];
  expect_refused(f.bytes.substr(0, plan_start + 20), ErrorCode::kCorrupt, "field PLAN");
  expect_refused(f.bytes.substr(0, plan_start + 20), ErrorCode::kCorrupt, "remain");
}

// Every single flipped byte: refused with an Error or loaded, never a crash. With the checksum
// repaired the flip reaches the field decoders too.
TEST(EngineFileCorrupt, EveryFlippedByteIsRefusedOrLoads) {
  Fixture f = kv_engine();
  ASSERT_LT(f.bytes.size(), 20000u);
  int refused = 0, loaded = 0;
  for (size_t k = 0; k < f.bytes.size(); ++k) {
    for (bool repair : {false, true}) {
      std::string b = f.bytes;
      b[k] = static_cast<char>(b[k] ^ (repair ? 0x5a : 0x01));
      if (repair && k + 8 < b.size()) b = fix_checksum(b);
      try {
        auto e = deserialize_engine(b, kLabel);
        e->describe();
        ++loaded;
      } catch (const Error& e) {
        ++refused;
        EXPECT_NE(std::string(e.what()).find(kLabel), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_EQ(refused + loaded, static_cast<int>(2 * f.bytes.size()));
}

std::string with_aliases(const Fixture& f, const std::string& text) {
  std::vector<std::string> fields = fields_of(f.bytes);
  fields[kFieldAliasedIO] = text;
  return assemble(fields, f.ex.compiled.engine->plan());
}

TEST(EngineFileCorrupt, BadAliasRecords) {
  Fixture f = kv_engine();
  const std::string good = serialize_aliased_io(*f.ex.compiled.engine);
  ASSERT_FALSE(good.empty());
  // assemble() itself reproduces the file exactly.
  ASSERT_EQ(with_aliases(f, good), f.bytes);
  const Engine& e = *f.ex.compiled.engine;
  const Mutation& a = e.aliased_io()[0];
  const std::string out = str_cat(a.output, ":", e.outputs()[a.output].name);
  const std::string in = str_cat(a.input, ":", e.inputs()[a.input].name);

  expect_refused(with_aliases(f, good + "%" + good), ErrorCode::kCorrupt, "aliased twice");
  expect_refused(with_aliases(f, out + "@" + in + "@bogus"), ErrorCode::kCorrupt,
                 "unknown alias kind 'bogus'");
  expect_refused(with_aliases(f, "99:x@" + in + "@user"), ErrorCode::kCorrupt, "out of range");
  expect_refused(with_aliases(f, out + "@77:y@user"), ErrorCode::kCorrupt, "out of range");
  expect_refused(with_aliases(f, str_cat(a.output, ":nope@", in, "@user")), ErrorCode::kCorrupt,
                 "does not match");
  expect_refused(with_aliases(f, out + "@" + in), ErrorCode::kCorrupt, "OUTPUT@INPUT@KIND");
  expect_refused(with_aliases(f, "%"), ErrorCode::kCorrupt, "OUTPUT@INPUT@KIND");
  expect_refused(with_aliases(f, "x@" + in + "@user"), ErrorCode::kCorrupt, "INDEX:NAME");
  expect_refused(with_aliases(f, "-1:a@" + in + "@user"), ErrorCode::kCorrupt, "bad index");
}

TEST(EngineFileCorrupt, PlanWinsForKvCacheUpdateAndEmptyMapLoads) {
  Fixture f = kv_engine();
  const Engine& e = *f.ex.compiled.engine;
  ASSERT_EQ(e.aliased_io()[0].kind, MutationKind::kKvCacheUpdate) << e.describe();
  // An empty stored map: reconciliation rediscovers what the plan writes in place.
  auto loaded = deserialize_engine(with_aliases(f, ""), kLabel);
  EXPECT_EQ(loaded->aliased_io(), e.aliased_io());
  // A stored "user" kind for what the plan's kv_cache_update writes: the plan wins.
  std::string text = serialize_aliased_io(e);
  size_t at = text.find("@kv_cache_update");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 16, "@user");
  loaded = deserialize_engine(with_aliases(f, text), kLabel);
  EXPECT_EQ(loaded->aliased_io(), e.aliased_io());
}

TEST(EngineFileCorrupt, CopyBackEngineLoadsWithNoAliases) {
  Example ex = compile_example(INPLACE_SOURCE_DIR "/examples/kv_cache_write", /*alias=*/false);
  auto loaded = deserialize_engine(serialize_engine(*ex.compiled.engine), kLabel);
  EXPECT_TRUE(loaded->aliased_io().empty()) << loaded->describe();
  EXPECT_EQ(serialize_aliased_io(*loaded), "");
}

TEST(EngineFileCorrupt, UnknownOpIsNamed) {
  Fixture f = kv_engine();
  std::vector<std::string> fields = fields_of(f.bytes);
  size_t at = fields[kFieldPlan].find("kv_cache_update");
  ASSERT_NE(at, std::string::npos);
  fields[kFieldPlan][at + 14] = 'X';
  expect_refused(assemble(fields, f.ex.compiled.engine->plan()), ErrorCode::kCorrupt,
                 "unknown op 'kv_cache_updatX");
}

std::string with_plan(const Fixture& f, const Plan& plan) {
  std::vector<std::string> fields = fields_of(f.bytes);
  engine_file::Writer w;
  engine_file::write_plan(w, plan);
  fields[kFieldPlan] = w.bytes();
  return assemble(fields, plan);
}

TEST(EngineFileCorrupt, PlanReferringToMissingBuffersIsRefused) {
  Fixture f = kv_engine();
  const Plan& good = f.ex.compiled.engine->plan();
  ASSERT_EQ(with_plan(f, good), f.bytes);
  ASSERT_FALSE(good.steps.empty());
  {
    Plan p = good;
    p.steps[0].outs[0].buffer = {BufferKind::kArena, 1000};
    expect_refused(with_plan(f, p), ErrorCode::kCorrupt, "missing arena buffer 1000");
  }
  {
    Plan p = good;
    p.steps[0].tensors[0].ref.buffer = {BufferKind::kInput, 55};
    expect_refused(with_plan(f, p), ErrorCode::kCorrupt, "missing input binding 55");
  }
  {
    Plan p = good;
    p.output_refs.push_back(p.output_refs[0]);
    expect_refused(with_plan(f, p), ErrorCode::kCorrupt, "output refs for");
  }
  {
    Plan p = good;
    p.steps[0].tensors[0].path = {0, 7, 9};
    expect_refused(with_plan(f, p), ErrorCode::kCorrupt, "operand path");
  }
  {
    Plan p = good;
    p.arena_bytes = 0;
    if (!p.arena.empty()) expect_refused(with_plan(f, p), ErrorCode::kCorrupt, "outside the arena");
  }
  {
    // A result larger than the op makes: the out kernel would write past it, so it is refused.
    Plan p = good;
    for (Step& s : p.steps)
      if (s.kind == StepKind::kOut && !s.outs.empty() &&
          s.outs[0].buffer.kind == BufferKind::kOutput) {
        s.outs[0].shape.back() -= 1;
        s.outs[0].strides = contiguous_strides(s.outs[0].shape);
        expect_refused(with_plan(f, p), ErrorCode::kCorrupt, "but op");
        break;
      }
  }
  {
    Plan p = good;
    p.steps[0].tensors[0].ref.dtype = DType::kFloat16;
    expect_refused(with_plan(f, p), ErrorCode::kCorrupt, "differs from its reference");
  }
  {  // more arguments than the op takes, or fewer without defaults (ops/renamed_ops.h)
    Plan p = good;
    p.steps[0].args.push_back(Value::none());
    expect_refused(with_plan(f, p), ErrorCode::kCorrupt, "arguments for op");
    p.steps[0].args.clear();
    expect_refused(with_plan(f, p), ErrorCode::kCorrupt, "arguments for op");
  }
}

TEST(EngineFileCorrupt, CountsLargerThanTheFileAreRefusedBeforeAllocating) {
  Fixture f = kv_engine();
  std::vector<std::string> fields = fields_of(f.bytes);
  // The PLAN field starts with the input binding count.
  uint32_t huge = 0xffffffffu;
  std::memcpy(fields[kFieldPlan].data(), &huge, 4);
  expect_refused(assemble(fields, f.ex.compiled.engine->plan()), ErrorCode::kCorrupt,
                 "larger than the");
  // A field length past the end of the file.
  std::string b = f.bytes;
  uint64_t big = uint64_t{1} << 60;
  std::memcpy(b.data() + field_boundaries(b)[kFieldMetadata], &big, 8);
  expect_refused(b, ErrorCode::kCorrupt, "field METADATA");
}

TEST(EngineFileCorrupt, BindingNamesMustMatchThePlan) {
  Fixture f = kv_engine();
  std::vector<std::string> fields = fields_of(f.bytes);
  engine_file::Writer w;
  w.u32(1);
  w.str("someone_else");
  fields[kFieldInputBindingNames] = w.bytes();
  expect_refused(assemble(fields, f.ex.compiled.engine->plan()), ErrorCode::kCorrupt,
                 "INPUT_BINDING_NAMES");
  fields = fields_of(f.bytes);
  fields[kFieldTargetDevice] = "cuda:99";  // no machine here has 100 GPUs
  expect_refused(assemble(fields, f.ex.compiled.engine->plan()), ErrorCode::kUnsupported,
                 "cuda:99");
  fields[kFieldTargetDevice] = "tpu";
  expect_refused(assemble(fields, f.ex.compiled.engine->plan()), ErrorCode::kCorrupt,
                 "TARGET_DEVICE");
}

}  // namespace
