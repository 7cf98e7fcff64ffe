// Program file container. Layout and rules: docs/programs.md, "Program files".
#include "program/program_file.h"

#include <cstring>
#include <sstream>

#include "core/file_io.h"
#include "core/file_sink.h"
#include "core/mapped_file.h"
#include "engine/engine_file.h"
#include "engine/engine_file_codec.h"

namespace inplace {

using engine_file::Reader;
using engine_file::Writer;

namespace {

constexpr uint32_t kNoInitial = 0xffffffffu;
const char* kFieldNames[] = {"NAME", "METHODS", "STATE", "METADATA", "WEIGHTS"};
constexpr std::string_view kMetaPrefix = "meta.";

std::string metadata(const Program& p) {
  std::ostringstream os;
  os << "producer=inplace " << INPLACE_VERSION << "\nprogram_abi=" << kProgramFileAbi
     << "\nengine_abi=" << kEngineFileAbi << "\nmethods=" << p.methods().size()
     << "\nstate=" << p.state().size() << "\nweight_bytes=" << p.weight_bytes()
     << "\ndevice=" << p.device().str() << "\n";
  for (const auto& [key, value] : p.metadata()) os << kMetaPrefix << key << "=" << value << "\n";
  return os.str();
}

// The frontend's entries of the METADATA field: its `meta.KEY=VALUE` lines.
std::map<std::string, std::string> frontend_metadata(std::string_view field) {
  std::map<std::string, std::string> out;
  while (!field.empty()) {
    size_t end = field.find('\n');
    std::string_view line = field.substr(0, end);
    field = end == std::string_view::npos ? std::string_view() : field.substr(end + 1);
    size_t eq = line.find('=');
    if (line.substr(0, kMetaPrefix.size()) != kMetaPrefix || eq == std::string_view::npos) continue;
    out[std::string(line.substr(kMetaPrefix.size(), eq - kMetaPrefix.size()))] =
        std::string(line.substr(eq + 1));
  }
  return out;
}

int weight_index(const std::vector<Program::Weight>& weights, const Tensor& t) {
  for (size_t k = 0; k < weights.size(); ++k)
    if (weights[k].tensor.same_view(t)) return static_cast<int>(k);
  IP_ASSERT(false, "every method constant is one of the program's weights");
  return -1;
}

}  // namespace

bool is_program_file(std::string_view bytes) {
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kProgramFileMagic, 8) == 0;
}

namespace {
void write_program(FileSink& out, const Program& p) {
  // WEIGHTS: the shared weights, then the initial value of every state entry that has one.
  Plan table;
  for (const Program::Weight& w : p.weights()) {
    table.constants.push_back(w.tensor);
    table.constant_names.push_back(w.name);
  }
  Writer methods;
  methods.u32(static_cast<uint32_t>(p.methods().size()));
  for (const Method& m : p.methods()) {
    methods.str(m.name);
    const Plan& plan = m.engine->plan();
    methods.u32(static_cast<uint32_t>(plan.constants.size()));
    for (const Tensor& t : plan.constants) methods.u32(weight_index(p.weights(), t));
    methods.str(serialize_engine(*m.engine, /*with_weights=*/false));
  }
  Writer state;
  state.u32(static_cast<uint32_t>(p.state().size()));
  for (const StateEntry& s : p.state().entries()) {
    state.str(s.name);
    state.u8(static_cast<uint8_t>(s.ownership));
    state.u8(static_cast<uint8_t>(s.dtype));
    state.shape(s.shape);
    if (s.initial.defined()) {
      state.u32(static_cast<uint32_t>(table.constants.size()));
      table.constants.push_back(s.initial);
      table.constant_names.push_back(s.name);
    } else {
      state.u32(kNoInitial);
    }
  }
  Writer w;
  w.raw(kProgramFileMagic, 8);
  w.u32(kProgramFileAbi);
  w.u32(kProgramFileFieldCount);
  for (const std::string& f : {p.name(), methods.bytes(), state.bytes(), metadata(p)}) w.str(f);
  out.write(w.bytes());
  engine_file::write_weights(out, table);
  out.finish();
}
}  // namespace

std::string serialize_program(const Program& p) {
  std::string bytes;
  FileSink sink(&bytes);
  write_program(sink, p);
  return bytes;
}

void save_program(const Program& p, const std::string& path) {
  check_output_file(path, "program_file");
  write_file_atomically(path, "program_file", [&](FileSink& out) { write_program(out, p); });
}

std::shared_ptr<const Program> deserialize_program(std::string_view bytes, const std::string& label,
                                                   std::shared_ptr<const void> keep_alive,
                                                   std::optional<Device> device) {
  IP_CHECK(is_program_file(bytes), kCorrupt, "[program_file] ", label,
           ": not an inplace program file (bad magic)");
  Reader r(bytes, label, "header");
  r.view(8, "magic");
  uint32_t abi = r.u32("ABI version");
  IP_CHECK(abi == kProgramFileAbi, kAbiMismatch, "[program_file] ", label, ": ABI version ", abi,
           " but this build reads ABI version ", kProgramFileAbi, "; recompile the program");
  uint32_t count = r.u32("field count");
  IP_CHECK(count == kProgramFileFieldCount, kCorrupt, "[program_file] ", label, ": ", count,
           " fields but ABI ", kProgramFileAbi, " has ", uint32_t(kProgramFileFieldCount));
  std::string_view fields[kProgramFileFieldCount];
  size_t weights_start = 0;
  for (uint32_t k = 0; k < kProgramFileFieldCount; ++k) {
    Reader fr(bytes.substr(r.pos()), label, str_cat("field ", kFieldNames[k]));
    fr.need(fr.u64("length"), "contents");
    uint64_t n = r.u64("length");
    if (k == kProgramFieldWeights) weights_start = r.pos();
    fields[k] = r.view(n, "contents");
  }
  IP_CHECK(r.remaining() == 8, kCorrupt, "[program_file] ", label,
           ": expected an 8-byte checksum after the fields, found ", r.remaining(), " bytes");
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + r.pos(), 8);
  IP_CHECK(stored == engine_file_checksum(bytes.substr(0, r.pos())), kCorrupt, "[program_file] ",
           label, ": checksum mismatch (the file is damaged)");

  Plan table;
  engine_file::read_weights(fields[kProgramFieldWeights], weights_start, label, &table, keep_alive);
  auto weight = [&](Reader& rd, uint32_t index, const std::string& what) -> size_t {
    if (index >= table.constants.size())
      rd.fail(str_cat(what, " names weight ", index, " of ", table.constants.size()));
    return index;
  };

  std::vector<StateEntry> entries;
  {
    Reader sr(fields[kProgramFieldState], label, "field STATE");
    uint64_t n = sr.count("state entries", 18);
    for (uint64_t k = 0; k < n; ++k) {
      StateEntry e;
      e.name = sr.str("state name");
      uint8_t own = sr.u8("ownership");
      if (own > static_cast<uint8_t>(Ownership::kRuntime))
        sr.fail(str_cat("state '", e.name, "' has unknown ownership ", int(own)));
      e.ownership = static_cast<Ownership>(own);
      e.dtype = sr.dtype("state dtype");
      e.shape = sr.shape("state shape");
      uint32_t init = sr.u32("initial value");
      if (init != kNoInitial)
        e.initial = table.constants[weight(sr, init, "state '" + e.name + "'")];
      entries.push_back(std::move(e));
    }
    sr.expect_end();
  }
  std::vector<std::shared_ptr<const Engine>> engines;
  std::vector<std::string> names;
  {
    Reader mr(fields[kProgramFieldMethods], label, "field METHODS");
    uint64_t n = mr.count("methods", 20);
    DeviceWeights uploads;  // every method's weights on its device once
    for (uint64_t k = 0; k < n; ++k) {
      std::string name = mr.str("method name");
      ExternalWeights ext;
      ext.device_weights = &uploads;
      uint64_t nw = mr.count("method weights", 4);
      for (uint64_t j = 0; j < nw; ++j) {
        size_t w = weight(mr, mr.u32("weight index"), "method '" + name + "'");
        ext.names.push_back(table.constant_names[w]);
        ext.tensors.push_back(table.constants[w]);
      }
      std::string_view engine_bytes = mr.view(mr.u64("engine length"), "engine");
      engines.push_back(deserialize_engine(engine_bytes, str_cat(label, ": method '", name, "'"),
                                           &ext, nullptr, device));
      names.push_back(std::move(name));
    }
    mr.expect_end();
  }
  try {
    return Program::assemble(std::string(fields[kProgramFieldName]), std::move(engines),
                             std::move(names), StateTable(std::move(entries)),
                             frontend_metadata(fields[kProgramFieldMetadata]));
  } catch (const Error& e) {
    throw Error(e.code() == ErrorCode::kInternal ? e.code() : ErrorCode::kCorrupt,
                str_cat("[program_file] ", label, ": ", e.what()));
  }
}

std::shared_ptr<const Program> load_program(const std::string& path, std::optional<Device> device) {
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, "program_file");
  return deserialize_program(file->bytes(), path, file, device);
}

std::shared_ptr<const Program> load_program_or_engine(const std::string& path,
                                                      std::optional<Device> device) {
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, "program_file");
  if (is_engine_file(file->bytes()))
    return program_from_engine(deserialize_engine(file->bytes(), path, nullptr, file, device));
  return deserialize_program(file->bytes(), path, file, device);
}

}  // namespace inplace
