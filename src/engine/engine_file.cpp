// Engine file container: magic, ABI, the fixed list of length-prefixed fields, checksum.
// Layout and rules: docs/engine-format.md.
#include "engine/engine_file.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <sstream>

#include "core/checksum.h"
#include "core/file_io.h"
#include "core/file_sink.h"
#include "core/mapped_file.h"
#include "engine/engine_file_codec.h"

namespace inplace {

using engine_file::Reader;
using engine_file::Writer;

namespace {
constexpr size_t kWeightAlignment = 64;
constexpr char kRecordSep = '%', kPartSep = '@';

std::string join_names(const std::vector<Binding>& bs) {
  Writer w;
  w.u32(static_cast<uint32_t>(bs.size()));
  for (const Binding& b : bs) w.str(b.name);
  return w.bytes();
}

std::string metadata(const Engine& e) {
  std::ostringstream os;
  os << "producer=inplace " << INPLACE_VERSION << "\n"
     << "abi=" << kEngineFileAbi << "\n"
     << "inputs=" << e.inputs().size() << "\n"
     << "outputs=" << e.outputs().size() << "\n"
     << "original_outputs=" << e.original_output_count() << "\n"
     << "steps=" << e.plan().steps.size() << "\n"
     << "arena_bytes=" << e.plan().arena_bytes << "\n"
     << "weight_bytes=" << e.weight_bytes() << "\n";
  if (!e.host_steps().empty()) os << "host_steps=" << e.host_steps().size() << "\n";
  return os.str();
}

}  // namespace

namespace engine_file {
void write_weights(FileSink& out, const Plan& plan) {
  const size_t field_start = out.pos() + 8;
  size_t head_bytes = 4;
  for (size_t k = 0; k < plan.constants.size(); ++k)
    head_bytes += 8 + plan.constant_names[k].size() + 1 + 4 + 8 * plan.constants[k].dim() + 16;
  size_t pos = field_start + head_bytes;
  std::vector<size_t> offsets;
  for (const Tensor& t : plan.constants) {
    pos = (pos + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
    offsets.push_back(pos);
    pos += t.nbytes();
  }
  Writer head;
  head.u64(pos - field_start);  // the field's length prefix
  head.u32(static_cast<uint32_t>(plan.constants.size()));
  for (size_t k = 0; k < plan.constants.size(); ++k) {
    const Tensor& t = plan.constants[k];
    head.str(plan.constant_names[k]);
    head.u8(uint8_t(t.dtype()));
    head.shape(t.shape());
    head.u64(offsets[k]);
    head.u64(t.nbytes());
  }
  IP_ASSERT(head.bytes().size() == 8 + head_bytes, "weights header size is predicted exactly");
  out.write(head.bytes());
  // The data straight from each tensor: only a non-contiguous one is copied, one at a time.
  for (size_t k = 0; k < plan.constants.size(); ++k) {
    out.zeros(offsets[k] - out.pos());
    const Tensor& c = plan.constants[k];
    const Tensor t = c.is_contiguous() ? c : c.clone();
    if (t.nbytes()) out.write(t.data_ptr(), t.nbytes());
  }
  IP_ASSERT(out.pos() == pos, "weights field size is predicted exactly");
}

std::string write_weights(const Plan& plan, size_t field_start) {
  std::string out;
  FileSink sink(&out, field_start - 8);
  write_weights(sink, plan);
  return out.substr(8);
}

void read_weights(std::string_view field, size_t field_start, const std::string& label, Plan* plan,
                  const std::shared_ptr<const void>& keep_alive) {
  Reader r(field, label, "field WEIGHTS");
  uint64_t n = r.count("weights", 29);
  size_t data_end = 0;
  for (uint64_t k = 0; k < n; ++k) {
    std::string name = r.str("weight name");
    DType dt = r.dtype("weight dtype");
    Shape shape = r.shape("weight shape");
    uint64_t offset = r.u64("weight offset"), nbytes = r.u64("weight bytes");
    int64_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0 || (d && numel > static_cast<int64_t>(field.size()) / d))
        r.fail(
            str_cat("weight '", name, "' has shape ", shape_str(shape), " larger than the file"));
      numel *= d;
    }
    if (nbytes != static_cast<uint64_t>(numel) * dtype_size(dt))
      r.fail(str_cat("weight '", name, "' stores ", nbytes, " bytes for ", shape_str(shape), " ",
                     dtype_name(dt)));
    if (offset % kWeightAlignment)
      r.fail(str_cat("weight '", name, "' data offset ", offset, " is not 64-byte aligned"));
    if (offset < field_start || offset - field_start > field.size() ||
        nbytes > field.size() - (offset - field_start))
      r.fail(str_cat("weight '", name, "' data [", offset, ", +", nbytes,
                     ") lies outside the WEIGHTS field"));
    const char* data = field.data() + (offset - field_start);
    Tensor t;
    if (keep_alive && reinterpret_cast<uintptr_t>(data) % kWeightAlignment == 0) {
      // Read-only constants: never written (validate_plan refuses a result in a constant).
      t = Tensor(Storage::borrow(const_cast<char*>(data), nbytes, keep_alive), 0, shape,
                 contiguous_strides(shape), dt);
    } else {
      t = Tensor::empty(shape, dt);
      if (nbytes) std::memcpy(t.data_ptr(), data, nbytes);
    }
    data_end = std::max<size_t>(data_end, offset - field_start + nbytes);
    plan->constants.push_back(std::move(t));
    plan->constant_names.push_back(std::move(name));
  }
  if (r.pos() > data_end) data_end = r.pos();
  if (data_end != field.size())
    r.fail(str_cat(field.size() - data_end, " unexpected trailing bytes"));
}
}  // namespace engine_file

namespace {
using engine_file::read_weights;

std::vector<std::string> read_names(std::string_view field, const std::string& label,
                                    const char* what) {
  Reader r(field, label, what);
  uint64_t n = r.count("names", 8);
  std::vector<std::string> out;
  for (uint64_t k = 0; k < n; ++k) out.push_back(r.str("name"));
  r.expect_end();
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

// "<index>:<name>" -> index, checking the name against the binding list.
int parse_binding_ref(const std::string& text, const std::vector<Binding>& bs, const char* side,
                      const std::string& record, const std::string& label,
                      const char* field = "ALIASED_IO") {
  auto fail = [&](const std::string& why) {
    IP_FAIL(kCorrupt, "[engine_file] ", label, ": field ", field, ": record '", record, "': ", side,
            " ", why);
  };
  size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon > 9)
    fail("'" + text + "' is not INDEX:NAME");
  int64_t index = 0;
  for (size_t k = 0; k < colon; ++k) {
    if (text[k] < '0' || text[k] > '9') fail("'" + text + "' has a bad index");
    index = index * 10 + (text[k] - '0');
  }
  if (index >= static_cast<int64_t>(bs.size()))
    fail(str_cat("index ", index, " is out of range (", bs.size(), " ", side, "s)"));
  std::string name = text.substr(colon + 1);
  if (name != bs[index].name)
    fail(str_cat("name '", name, "' does not match binding ", index, " '", bs[index].name, "'"));
  return static_cast<int>(index);
}

std::vector<Mutation> parse_aliased_io(const std::string& text, const Plan& plan,
                                       const std::string& label) {
  std::vector<Mutation> out;
  if (text.empty()) return out;
  std::set<int> outputs, inputs;
  for (const std::string& record : split(text, kRecordSep)) {
    auto fail = [&](const std::string& why) {
      IP_FAIL(kCorrupt, "[engine_file] ", label, ": field ALIASED_IO: record '", record,
              "': ", why);
    };
    std::vector<std::string> parts = split(record, kPartSep);
    if (parts.size() != 3) fail("expected OUTPUT@INPUT@KIND");
    Mutation a;
    if (!parse_mutation_kind(parts[2], &a.kind))
      fail("unknown alias kind '" + parts[2] + "' (kv_cache_update or user)");
    a.output = parse_binding_ref(parts[0], plan.outputs, "output", record, label);
    a.input = parse_binding_ref(parts[1], plan.inputs, "input", record, label);
    if (!outputs.insert(a.output).second) fail(str_cat("output ", a.output, " is aliased twice"));
    if (!inputs.insert(a.input).second) fail(str_cat("input ", a.input, " is aliased twice"));
    const Binding &o = plan.outputs[a.output], &i = plan.inputs[a.input];
    if (o.shape != i.shape || o.dtype != i.dtype)
      fail(str_cat("output ", shape_str(o.shape), " ", dtype_name(o.dtype), " cannot alias input ",
                   shape_str(i.shape), " ", dtype_name(i.dtype)));
    // The engine returns the input binding itself for an aliased output: anything else would
    // hand the caller a tensor the engine never wrote.
    const TensorRef* ref = a.output < static_cast<int>(plan.output_refs.size())
                               ? &plan.output_refs[a.output]
                               : nullptr;
    if (!ref || !(ref->buffer == BufferId{BufferKind::kInput, a.input}) || ref->offset != 0 ||
        ref->shape != i.shape || ref->strides != contiguous_strides(i.shape) ||
        ref->dtype != i.dtype)
      fail(str_cat("the plan's output ", a.output, " is not input ", a.input, " itself"));
    out.push_back(a);
  }
  return out;
}

std::vector<int> parse_mutated_inputs(const std::string& text, const Plan& plan,
                                      const std::string& label) {
  std::vector<int> out;
  if (text.empty()) return out;
  for (const std::string& record : split(text, kRecordSep)) {
    int i = parse_binding_ref(record, plan.inputs, "input", record, label, "MUTATED_INPUTS");
    IP_CHECK(out.empty() || out.back() < i, kCorrupt, "[engine_file] ", label,
             ": field MUTATED_INPUTS: record '", record,
             "': inputs must be listed once each, in order");
    out.push_back(i);
  }
  return out;
}

void check_names(const std::vector<std::string>& names, const std::vector<Binding>& bs,
                 const char* what, const std::string& label) {
  IP_CHECK(names.size() == bs.size(), kCorrupt, "[engine_file] ", label, ": field ", what, ": ",
           names.size(), " names for ", bs.size(), " bindings in the plan");
  for (size_t k = 0; k < names.size(); ++k)
    IP_CHECK(names[k] == bs[k].name, kCorrupt, "[engine_file] ", label, ": field ", what, ": name ",
             k, " '", names[k], "' does not match the plan's '", bs[k].name, "'");
}

}  // namespace

const char* engine_file_field_name(uint32_t field) {
  static const char* kNames[] = {"NAME",
                                 "TARGET_DEVICE",
                                 "PLAN",
                                 "INPUT_BINDING_NAMES",
                                 "OUTPUT_BINDING_NAMES",
                                 "METADATA",
                                 "REQUIRES_OUTPUT_ALLOCATOR",
                                 "ALIASED_IO",
                                 "MUTATED_INPUTS",
                                 "WEIGHTS"};
  return field < kEngineFileFieldCount ? kNames[field] : "?";
}

uint64_t engine_file_checksum(std::string_view bytes) {
  return checksum64(bytes);
}

bool is_engine_file(std::string_view bytes) {
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kEngineFileMagic, 8) == 0;
}

std::string serialize_aliased_io(const Engine& e) {
  std::string out;
  for (const Mutation& a : e.aliased_io()) {
    const std::string &o = e.outputs()[a.output].name, &i = e.inputs()[a.input].name;
    for (const std::string* n : {&o, &i})
      IP_CHECK(n->find_first_of("%@") == std::string::npos, kInvalidArgument, "[engine_file] ",
               "binding name '", *n, "' contains '%' or '@', which ALIASED_IO cannot hold");
    if (!out.empty()) out += kRecordSep;
    out +=
        str_cat(a.output, ":", o, kPartSep, a.input, ":", i, kPartSep, mutation_kind_name(a.kind));
  }
  return out;
}

std::string serialize_mutated_inputs(const Engine& e) {
  std::string out;
  for (int i : e.mutated_inputs()) {
    const std::string& n = e.inputs()[i].name;
    IP_CHECK(n.find_first_of("%@") == std::string::npos, kInvalidArgument, "[engine_file] ",
             "binding name '", n, "' contains '%' or '@', which MUTATED_INPUTS cannot hold");
    if (!out.empty()) out += kRecordSep;
    out += str_cat(i, ":", n);
  }
  return out;
}

namespace {
// An engine the loader would refuse is never written: the PLAN field is read back with the
// loader's own reader (read_plan: every limit on ranks, sizes, strides, offsets, counts and the
// arena, in one place), so `compile -o` fails, naming what is out of range, instead of writing
// a file that `run` refuses (a placeholder of shape [2^31, 2^31] passes 2^50 elements).
void check_loadable(const std::string& plan_bytes, const Engine& e) {
  Plan back;
  try {
    Reader r(plan_bytes, str_cat("engine '", e.name(), "'"), "field PLAN");
    engine_file::read_plan(r, &back);
  } catch (const Error& err) {
    IP_FAIL(kUnsupported, "[engine_file] cannot save engine '", e.name(),
            "': loading would refuse it (", err.what(), ")");
  }
}

void write_engine(FileSink& out, const Engine& e, bool with_weights) {
  Writer w;
  w.raw(kEngineFileMagic, 8);
  w.u32(kEngineFileAbi);
  w.u32(kEngineFileFieldCount);
  Writer plan;
  engine_file::write_plan(plan, e.plan());
  check_loadable(plan.bytes(), e);
  const std::string fields[] = {e.name(),
                                e.device().str(),
                                plan.bytes(),
                                join_names(e.plan().inputs),
                                join_names(e.outputs()),
                                metadata(e),
                                "0",
                                serialize_aliased_io(e),
                                serialize_mutated_inputs(e)};
  for (const std::string& f : fields) w.str(f);
  out.write(w.bytes());
  // WEIGHTS last: its data offsets are absolute, so its start must be known.
  engine_file::write_weights(out, with_weights ? e.plan() : Plan{});
  out.finish();
}
}  // namespace

std::string serialize_engine(const Engine& e, bool with_weights) {
  std::string bytes;
  FileSink sink(&bytes);
  write_engine(sink, e, with_weights);
  return bytes;
}

void save_engine(const Engine& e, const std::string& path) {
  check_output_file(path, "engine_file");
  write_file_atomically(path, "engine_file",
                        [&](FileSink& out) { write_engine(out, e, /*with_weights=*/true); });
}

std::shared_ptr<const Engine> deserialize_engine(std::string_view bytes, const std::string& label,
                                                 const ExternalWeights* external,
                                                 std::shared_ptr<const void> keep_alive,
                                                 std::optional<Device> device) {
  Reader r(bytes, label, "header");
  IP_CHECK(bytes.size() >= 8 && std::memcmp(bytes.data(), kEngineFileMagic, 8) == 0, kCorrupt,
           "[engine_file] ", label, ": not an inplace engine file (bad magic)");
  r.view(8, "magic");
  uint32_t abi = r.u32("ABI version");
  IP_CHECK(abi == kEngineFileAbi, kAbiMismatch, "[engine_file] ", label, ": ABI version ", abi,
           " but this build reads ABI version ", kEngineFileAbi, "; recompile the engine");
  uint32_t count = r.u32("field count");
  IP_CHECK(count == kEngineFileFieldCount, kCorrupt, "[engine_file] ", label, ": ", count,
           " fields but ABI ", kEngineFileAbi, " has ", uint32_t(kEngineFileFieldCount));
  std::string_view fields[kEngineFileFieldCount];
  size_t starts[kEngineFileFieldCount];
  for (uint32_t k = 0; k < kEngineFileFieldCount; ++k) {
    Reader fr(bytes.substr(r.pos()), label, str_cat("field ", engine_file_field_name(k)));
    uint64_t n = fr.u64("length");
    fr.need(n, "contents");
    r.view(8, "length");
    starts[k] = r.pos();
    fields[k] = r.view(n, "contents");
  }
  IP_CHECK(r.remaining() == 8, kCorrupt, "[engine_file] ", label,
           ": expected an 8-byte checksum "
           "after the fields, found ",
           r.remaining(), " bytes");
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + r.pos(), 8);
  IP_CHECK(stored == engine_file_checksum(bytes.substr(0, r.pos())), kCorrupt, "[engine_file] ",
           label, ": checksum mismatch (the file is damaged)");

  IP_CHECK(fields[kFieldRequiresOutputAllocator] == "0", kCorrupt, "[engine_file] ", label,
           ": REQUIRES_OUTPUT_ALLOCATOR is '", std::string(fields[kFieldRequiresOutputAllocator]),
           "'; engines with aliased I/O have static shapes");
  Plan plan;
  try {
    plan.device = Device::parse(std::string(fields[kFieldTargetDevice]));
  } catch (const Error& e) {
    IP_FAIL(kCorrupt, "[engine_file] ", label, ": field TARGET_DEVICE: ", e.what());
  }
  if (device) {
    std::string why;
    IP_CHECK(device_available(*device, &why), kUnsupported, "[engine_file] ", label,
             ": loading for device '", device->str(), "' (compiled for '", plan.device.str(),
             "'), which this machine cannot run: ", why);
    plan.device = *device;
  } else {
    std::string why;
    IP_CHECK(device_available(plan.device, &why), kUnsupported, "[engine_file] ", label,
             ": engine targets device '", plan.device.str(),
             "', which this machine cannot run: ", why);
  }
  {
    Reader pr(fields[kFieldPlan], label, "field PLAN");
    engine_file::read_plan(pr, &plan);
  }
  read_weights(fields[kFieldWeights], starts[kFieldWeights], label, &plan, keep_alive);
  if (external) {
    IP_CHECK(plan.constants.empty(), kCorrupt, "[engine_file] ", label, ": field WEIGHTS holds ",
             plan.constants.size(), " weights but this engine takes its weights from its program");
    plan.constant_names = external->names;
    plan.constants = external->tensors;
  }
  check_names(read_names(fields[kFieldInputBindingNames], label, "field INPUT_BINDING_NAMES"),
              plan.inputs, "INPUT_BINDING_NAMES", label);
  check_names(read_names(fields[kFieldOutputBindingNames], label, "field OUTPUT_BINDING_NAMES"),
              plan.outputs, "OUTPUT_BINDING_NAMES", label);
  std::vector<Mutation> recorded =
      parse_aliased_io(std::string(fields[kFieldAliasedIO]), plan, label);
  plan.mutated_inputs = parse_mutated_inputs(std::string(fields[kFieldMutatedInputs]), plan, label);
  try {
    return Engine::from_plan(std::move(plan), std::string(fields[kFieldName]), recorded,
                             external ? external->device_weights : nullptr);
  } catch (const Error& e) {
    throw Error(e.code(), str_cat("[engine_file] ", label, ": ", e.what()));
  }
}

std::shared_ptr<const Engine> load_engine(const std::string& path) {
  // The file's bytes in private memory: whatever happens to the file later, the weights stay.
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, "engine_file");
  return deserialize_engine(file->bytes(), path, nullptr, file);
}

}  // namespace inplace
