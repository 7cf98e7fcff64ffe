// Engine files cannot widen what an engine writes. A crafted file — a step edited to write a
// read-only input, to run an op that writes its arguments, or to write a copy-back input
// before the call ends, each with its checksum recomputed — is refused at load.
#include "engine/contract_util.h"
#include "engine/engine_file_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

const char* kLabel = "crafted.inplace";

struct Crafted {
  CompiledProgram cp;
  std::string bytes;
  Plan plan;  // decoded from the file, to edit
};

Crafted crafted(bool alias) {
  auto g = state_update_graph();
  Crafted c{compile_both(*g, {iota({4, 4}), iota({4, 4})}, alias), {}, {}};
  c.bytes = serialize_engine(*c.cp.engine);
  const std::string plan_field = fields_of(c.bytes)[kFieldPlan];
  engine_file::Reader r(plan_field, kLabel, "field PLAN");
  engine_file::read_plan(r, &c.plan);
  return c;
}

// The file with `plan` as its PLAN field (and `mutated` as MUTATED_INPUTS when given), its
// checksum valid.
std::string with_plan(const Crafted& c, const Plan& plan, const std::string* mutated = nullptr) {
  std::vector<std::string> fields = fields_of(c.bytes);
  engine_file::Writer w;
  engine_file::write_plan(w, plan);
  fields[kFieldPlan] = w.bytes();
  if (mutated) fields[kFieldMutatedInputs] = *mutated;
  return assemble(fields, c.cp.engine->plan());
}

std::string load_error(const std::string& bytes) {
  return error_of([&] { deserialize_engine(bytes, kLabel); });
}

// A step that writes none of the caller's memory and makes a [4,4] float32 result.
Step* scratch_step(Plan& plan) {
  for (Step& s : plan.steps)
    if (s.kind == StepKind::kOut && s.outs.size() == 1 &&
        s.outs[0].buffer.kind != BufferKind::kInput && s.outs[0].shape == Shape{4, 4})
      return &s;
  return nullptr;
}

TEST(EngineFileWriteSet, UnchangedFileLoadsWithItsMutatedInputs) {
  for (bool alias : {true, false}) {
    Crafted c = crafted(alias);
    ASSERT_EQ(c.cp.engine->mutated_inputs(), std::vector<int>{0});
    ASSERT_EQ(with_plan(c, c.plan), c.bytes);  // the edit path reproduces the file exactly
    auto loaded = deserialize_engine(c.bytes, kLabel);
    EXPECT_EQ(loaded->mutated_inputs(), std::vector<int>{0});
    EXPECT_EQ(serialize_mutated_inputs(*loaded), "0:state");
  }
}

TEST(EngineFileWriteSet, StepWritingAReadOnlyInputIsRefused) {
  for (bool alias : {true, false}) {
    SCOPED_TRACE(alias ? "aliased" : "copy-back");
    Crafted c = crafted(alias);
    Plan plan = c.plan;
    Step* s = scratch_step(plan);
    ASSERT_NE(s, nullptr) << c.cp.engine->describe();
    s->outs[0] = TensorRef{{BufferKind::kInput, 1}, 0, {4, 4}, {4, 1}, DType::kFloat32};  // x
    std::string msg = load_error(with_plan(c, plan));
    EXPECT_TRUE(mentions(msg, {kLabel, "step '" + s->node + "'", "writes input binding 'x'",
                               "does not declare as mutated"}))
        << msg;
    // Declaring x mutated in the file does not help an aliased engine either: x is not
    // aliased, so only trailing copy steps could write it back.
    std::string both = "0:state%1:x";
    msg = load_error(with_plan(c, plan, &both));
    EXPECT_TRUE(mentions(msg, {"writes input binding 'x'", "only the copy steps"})) << msg;
  }
}

TEST(EngineFileWriteSet, StepRunningAMutatingOpIsRefused) {
  Crafted c = crafted(true);
  Plan plan = c.plan;
  Step* s = nullptr;
  for (Step& t : plan.steps)
    if (t.op && t.op->schema.full_name() == "add.Tensor") s = &t;
  ASSERT_NE(s, nullptr) << c.cp.engine->describe();
  s->op = Registry::get().find("add_.Tensor");  // writes its first argument
  s->kind = StepKind::kEager;
  std::string msg = load_error(with_plan(c, plan));
  EXPECT_TRUE(mentions(msg, {kLabel, "add_.Tensor", "writes its arguments"})) << msg;
}

TEST(EngineFileWriteSet, CopyBackWritesOnlyAtTheEndAndOnlyDeclaredInputs) {
  Crafted c = crafted(false);
  ASSERT_EQ(c.plan.steps.back().kind, StepKind::kCopy) << c.cp.engine->describe();
  // The write-back no longer declared.
  std::string none;
  std::string msg = load_error(with_plan(c, c.plan, &none));
  EXPECT_TRUE(mentions(msg, {"writes input binding 'state'", "does not declare as mutated"}))
      << msg;
  // The write-back moved before the computing steps: a failed call would be half applied.
  Plan plan = c.plan;
  std::rotate(plan.steps.begin(), plan.steps.end() - 1, plan.steps.end());
  msg = load_error(with_plan(c, plan));
  EXPECT_TRUE(mentions(msg, {"writes input binding 'state'", "before the call ends"})) << msg;
}

TEST(EngineFileWriteSet, BadMutatedInputRecordsAreRefused) {
  Crafted c = crafted(true);
  for (auto [text, part] :
       std::vector<std::pair<std::string, std::string>>{{"9:state", "out of range"},
                                                        {"0:nope", "does not match"},
                                                        {"1:x%0:state", "once each, in order"},
                                                        {"0:state%0:state", "once each, in order"},
                                                        {"state", "INDEX:NAME"}}) {
    std::string msg = load_error(with_plan(c, c.plan, &text));
    EXPECT_TRUE(mentions(msg, {kLabel, "MUTATED_INPUTS", part})) << text << ": " << msg;
  }
  // An aliased input must be declared mutated.
  std::string none;
  EXPECT_TRUE(mentions(load_error(with_plan(c, c.plan, &none)), {"'state'"}));
}

TEST(EngineFileWriteSet, WriteOutsideItsBufferIsRefused) {
  Crafted c = crafted(true);
  Plan plan = c.plan;
  Step* s = nullptr;
  for (Step& t : plan.steps)
    if (!t.outs.empty() && t.outs[0].buffer.kind == BufferKind::kInput) s = &t;
  ASSERT_NE(s, nullptr) << c.cp.engine->describe();
  s->outs[0].offset = 1;  // the last element lands one past the input's memory
  EXPECT_TRUE(mentions(load_error(with_plan(c, plan)), {kLabel, "reaches past its input buffer"}));
}

// The check is per binding, not per region (docs/engine-format.md, "A mutated input is wholly
// at the file's mercy"): a step redirected anywhere inside a declared-mutated, aliased input
// loads, while the same redirect into a read-only input or past the binding is refused above.
TEST(EngineFileWriteSet, AMutatedInputIsWritableAnywhereWithinIt) {
  Crafted c = crafted(true);
  Plan plan = c.plan;
  Step* s = scratch_step(plan);
  ASSERT_NE(s, nullptr) << c.cp.engine->describe();
  s->outs[0] = TensorRef{{BufferKind::kInput, 0}, 0, {4, 4}, {4, 1}, DType::kFloat32};  // state
  EXPECT_NO_THROW(deserialize_engine(with_plan(c, plan), kLabel));
}

TEST(EngineFileWriteSet, MisalignedArenaSlotIsRefused) {
  // Fuzzer finding (regress-arena-slot-misaligned.inplace): a slot at an odd byte offset put a
  // float tensor at a misaligned address.
  Crafted c = crafted(true);
  Plan plan = c.plan;
  ASSERT_FALSE(plan.arena.empty()) << c.cp.engine->describe();
  plan.arena_bytes += 64;
  plan.arena[0].offset_bytes += 1;
  EXPECT_TRUE(mentions(load_error(with_plan(c, plan)),
                       {kLabel, "arena slot 0 at byte", "64-byte aligned"}));
}

}  // namespace
