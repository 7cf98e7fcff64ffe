// libFuzzer target, the engine-file fuzzer's checksum-keeping mode: a custom mutator splits an
// engine file into its fields, mutates one of them (mostly PLAN, ALIASED_IO and
// MUTATED_INPUTS), lays WEIGHTS out again for its new position and recomputes the checksum, so
// every input reaches the loader's semantic checks (write sets, aliases, extents) instead of
// stopping at the framing or the checksum. Property: deserialize_engine returns an engine or
// throws inplace::Error; and an engine that loads, run on small zero-filled inputs, leaves
// every input it does not declare mutated untouched. Build and run:
// scripts/fuzz.sh engine_file_fields.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/engine_file.h"
#include "engine/engine_file_codec.h"
#include "engine/execution_context.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using namespace inplace;

constexpr size_t kHeader = 16;  // magic, ABI, field count

// The fields of a well-framed engine file; false when the framing is broken.
bool split_fields(std::string_view bytes, std::vector<std::string>* fields) {
  if (bytes.size() < kHeader + 8 || !is_engine_file(bytes)) return false;
  uint32_t count = 0;
  std::memcpy(&count, bytes.data() + 12, 4);
  if (count != kEngineFileFieldCount) return false;
  size_t pos = kHeader;
  for (uint32_t k = 0; k < count; ++k) {
    uint64_t n = 0;
    if (bytes.size() - pos < 8) return false;
    std::memcpy(&n, bytes.data() + pos, 8);
    pos += 8;
    if (n > bytes.size() - pos) return false;
    fields->emplace_back(bytes.substr(pos, n));
    pos += n;
  }
  return bytes.size() - pos == 8;
}

// WEIGHTS again at file offset `start`: every weight's data kept, its offset moved (64-byte
// aligned from the file start). Unchanged when the field does not parse.
std::string relayout_weights(const std::string& field, size_t old_start, size_t start) {
  struct W {
    std::string name;
    uint8_t dtype;
    Shape shape;
    std::string data;
  };
  std::vector<W> ws;
  try {
    engine_file::Reader r(field, "<fuzz>", "WEIGHTS");
    uint64_t n = r.count("weights", 29);
    for (uint64_t k = 0; k < n; ++k) {
      W w;
      w.name = r.str("name");
      w.dtype = r.u8("dtype");
      w.shape = r.shape("shape");
      uint64_t offset = r.u64("offset"), nbytes = r.u64("bytes");
      if (offset < old_start || offset - old_start > field.size() ||
          nbytes > field.size() - (offset - old_start))
        return field;
      w.data = field.substr(offset - old_start, nbytes);
      ws.push_back(std::move(w));
    }
  } catch (const Error&) {
    return field;
  }
  size_t head = 4;
  for (const W& w : ws) head += 8 + w.name.size() + 1 + 4 + 8 * w.shape.size() + 16;
  std::vector<size_t> offsets;
  size_t pos = start + head;
  for (const W& w : ws) {
    pos = (pos + 63) / 64 * 64;
    offsets.push_back(pos);
    pos += w.data.size();
  }
  engine_file::Writer out;
  out.u32(static_cast<uint32_t>(ws.size()));
  for (size_t k = 0; k < ws.size(); ++k) {
    out.str(ws[k].name);
    out.u8(ws[k].dtype);
    out.shape(ws[k].shape);
    out.u64(offsets[k]);
    out.u64(ws[k].data.size());
  }
  for (size_t k = 0; k < ws.size(); ++k) {
    out.bytes().resize(offsets[k] - start, '\0');
    out.bytes() += ws[k].data;
  }
  return std::move(out.bytes());
}

std::string assemble(const std::vector<std::string>& fields, size_t old_weights_start) {
  engine_file::Writer w;
  w.raw(kEngineFileMagic, 8);
  w.u32(kEngineFileAbi);
  w.u32(kEngineFileFieldCount);
  for (uint32_t k = 0; k < kFieldWeights; ++k) w.str(fields[k]);
  size_t start = w.bytes().size() + 8;
  w.str(relayout_weights(fields[kFieldWeights], old_weights_start, start));
  w.u64(engine_file_checksum(w.bytes()));
  return std::move(w.bytes());
}

size_t weights_start(const std::vector<std::string>& fields) {
  size_t pos = kHeader;
  for (uint32_t k = 0; k < kFieldWeights; ++k) pos += 8 + fields[k].size();
  return pos + 8;
}

// An engine that loads runs on zero-filled inputs (when small, and only out and copy steps:
// eager steps allocate what their arguments say); inputs it does not declare mutated must stay
// zero, whatever the call does or throws.
void check_writes(const std::shared_ptr<const Engine>& engine) {
  const Plan& plan = engine->plan();
  int64_t bytes = plan.arena_bytes;
  for (const Binding& b : plan.inputs) bytes += numel_of(b.shape) * dtype_size(b.dtype);
  for (int64_t n : plan.output_buffer_bytes) bytes += n;
  if (bytes > (1 << 20)) return;
  for (const Step& s : plan.steps)
    if (s.kind == StepKind::kEager) return;
  std::vector<Tensor> inputs;
  ExecutionContext ctx(engine);
  for (size_t i = 0; i < engine->inputs().size(); ++i) {  // the context makes prepared ones
    inputs.push_back(Tensor::zeros(plan.inputs[i].shape, plan.inputs[i].dtype));
    ctx.bind_input(static_cast<int>(i), inputs.back());
  }
  try {
    ctx.execute();
  } catch (const Error&) {
  }
  const std::vector<int>& m = engine->mutated_inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (std::find(m.begin(), m.end(), static_cast<int>(i)) != m.end()) continue;
    const auto* p = static_cast<const unsigned char*>(inputs[i].data_ptr());
    for (size_t k = 0; k < inputs[i].nbytes(); ++k)
      if (p[k]) std::abort();  // an undeclared write into the caller's input
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::vector<std::string> fields;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!split_fields(bytes, &fields)) {
    size = LLVMFuzzerMutate(data, size, max_size);
    if (size >= 8) {
      uint64_t h = engine_file_checksum(std::string_view(reinterpret_cast<char*>(data), size - 8));
      std::memcpy(data + size - 8, &h, 8);
    }
    return size;
  }
  const size_t old_weights = weights_start(fields);
  std::minstd_rand rng(seed);
  static const uint32_t kPick[] = {
      kFieldPlan,    kFieldPlan,      kFieldPlan,          kFieldPlan,
      kFieldPlan,    kFieldAliasedIO, kFieldMutatedInputs, kFieldInputBindingNames,
      kFieldWeights, kFieldName};
  std::string& f = fields[kPick[rng() % (sizeof kPick / sizeof kPick[0])]];
  const size_t used = size - f.size();
  if (used >= max_size) return size;
  const size_t room = std::min(max_size - used, f.size() * 2 + 64);
  const size_t old = f.size();
  f.resize(std::max(room, old));
  f.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(f.data()), old, room));
  std::string out = assemble(fields, old_weights);
  if (out.size() > max_size) return size;
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<const Engine> engine;
  try {
    engine = deserialize_engine(bytes, "<fuzz>");
    (void)engine->describe();
  } catch (const Error&) {
    return 0;
  }
  check_writes(engine);
  return 0;
}
