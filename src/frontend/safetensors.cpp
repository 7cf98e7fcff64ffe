#include "frontend/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <vector>

#include "core/file_io.h"
#include "core/file_sink.h"
#include "frontend/json_util.h"

namespace inplace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swapping");

namespace {

using json_util::Json;

// The official reader's cap; a larger header is a corrupt length field, not a real file.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct DTypeCode {
  const char* code;
  DType dtype;
};
constexpr DTypeCode kCodes[] = {
    {"F32", DType::kFloat32},   {"F64", DType::kFloat64}, {"F16", DType::kFloat16},
    {"BF16", DType::kBFloat16}, {"I64", DType::kInt64},   {"I32", DType::kInt32},
    {"I16", DType::kInt16},     {"I8", DType::kInt8},     {"U8", DType::kUInt8},
    {"BOOL", DType::kBool},
};

// Where the bytes come from: a file read piecewise (so a large file is not held twice) or
// a buffer already in memory.
struct Source {
  uint64_t size = 0;
  std::function<void(uint64_t offset, uint64_t n, void* dst)> read;
};

struct Entry {
  std::string key;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

std::map<std::string, Tensor> read_from(const Source& src, const std::string& label,
                                        std::map<std::string, std::string>* metadata) {
  IP_CHECK(src.size >= 8, kParse, "[safetensors] ", label, ": file of ", src.size,
           " bytes is too short to hold the 8-byte header length");
  unsigned char len_bytes[8];
  src.read(0, 8, len_bytes);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  IP_CHECK(header_len <= kMaxHeaderBytes, kParse, "[safetensors] ", label, ": header length ",
           header_len, " exceeds the ", kMaxHeaderBytes, "-byte limit (corrupt file?)");
  IP_CHECK(header_len <= src.size - 8, kParse, "[safetensors] ", label, ": header length ",
           header_len, " runs past the end of the ", src.size, "-byte file");
  std::string header(header_len, '\0');
  src.read(8, header_len, header.data());
  Json j = json_util::parse_strict(header, "safetensors", label);
  IP_CHECK(j.is_object(), kParse, "[safetensors] ", label, ": header must be a JSON object, got ",
           json_util::type_name(j));
  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = src.size - data_start;

  std::vector<Entry> entries;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    if (key == "__metadata__") {
      IP_CHECK(v.is_object(), kParse, "[safetensors] ", label,
               ": __metadata__ must be an object of strings, got ", json_util::type_name(v));
      for (auto m = v.begin(); m != v.end(); ++m) {
        IP_CHECK(m.value().is_string(), kParse, "[safetensors] ", label, ": __metadata__ key '",
                 m.key(), "' must be a string, got ", json_util::type_name(m.value()));
        if (metadata) (*metadata)[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto fail_prefix = [&] { return str_cat("[safetensors] ", label, ": tensor '", key, "': "); };
    IP_CHECK(v.is_object(), kParse, fail_prefix(), "entry must be an object, got ",
             json_util::type_name(v));
    Entry e;
    e.key = key;
    auto dt = v.find("dtype");
    IP_CHECK(dt != v.end() && dt->is_string(), kParse, fail_prefix(),
             "missing string field 'dtype'");
    IP_CHECK(parse_safetensors_dtype(dt->get<std::string>(), &e.dtype), kParse, fail_prefix(),
             "unsupported dtype '", dt->get<std::string>(),
             "' (supported: F32 F64 F16 BF16 I64 I32 I16 I8 U8 BOOL)");
    auto sh = v.find("shape");
    IP_CHECK(sh != v.end() && sh->is_array(), kParse, fail_prefix(), "missing array field 'shape'");
    for (const Json& d : *sh) {
      int64_t n = -1;
      IP_CHECK(json_util::get_int64(d, &n) && n >= 0, kParse, fail_prefix(),
               "shape entries must be non-negative integers, got ", d.dump());
      e.shape.push_back(n);
    }
    auto off = v.find("data_offsets");
    IP_CHECK(off != v.end() && off->is_array() && off->size() == 2, kParse, fail_prefix(),
             "missing field 'data_offsets' = [begin, end]");
    int64_t b = -1, en = -1;
    IP_CHECK(json_util::get_int64((*off)[0], &b) && json_util::get_int64((*off)[1], &en) &&
                 b >= 0 && en >= 0,
             kParse, fail_prefix(), "data_offsets must be non-negative integers, got ",
             off->dump());
    e.begin = static_cast<uint64_t>(b);
    e.end = static_cast<uint64_t>(en);
    IP_CHECK(e.begin <= e.end, kParse, fail_prefix(), "data_offsets ", off->dump(),
             " end before they begin");
    IP_CHECK(e.end <= data_size, kParse, fail_prefix(), "data_offsets ", off->dump(),
             " run past the ", data_size, " bytes of data in the file");
    const int64_t itemsize = static_cast<int64_t>(dtype_size(e.dtype));
    int64_t numel = 0;
    IP_CHECK(json_util::checked_numel(e.shape, INT64_MAX / itemsize, &numel) &&
                 static_cast<uint64_t>(numel * itemsize) == e.end - e.begin,
             kParse, fail_prefix(), "data_offsets ", off->dump(), " hold ", e.end - e.begin,
             " bytes but shape ", shape_str(e.shape), " of ", dt->get<std::string>(), " needs ",
             numel * itemsize);
    entries.push_back(std::move(e));
  }

  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries)
    if (e.end > e.begin) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    IP_CHECK(by_offset[i]->begin >= by_offset[i - 1]->end, kParse, "[safetensors] ", label,
             ": tensor '", by_offset[i]->key, "' (bytes ", by_offset[i]->begin, "..",
             by_offset[i]->end, ") overlaps tensor '", by_offset[i - 1]->key, "' (bytes ",
             by_offset[i - 1]->begin, "..", by_offset[i - 1]->end, ")");

  std::map<std::string, Tensor> out;
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) src.read(data_start + e.begin, e.end - e.begin, t.data_ptr());
    if (e.dtype == DType::kBool) {
      // A bool byte other than 0/1 is not a valid C++ bool; normalise as torch would read it.
      auto* p = static_cast<unsigned char*>(t.data_ptr());
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0;
    }
    out.emplace(e.key, std::move(t));
  }
  return out;
}

}  // namespace

const char* safetensors_dtype_code(DType t) {
  for (const DTypeCode& c : kCodes)
    if (c.dtype == t) return c.code;
  return "?";
}

bool parse_safetensors_dtype(const std::string& code, DType* out) {
  for (const DTypeCode& c : kCodes)
    if (code == c.code) {
      *out = c.dtype;
      return true;
    }
  return false;
}

std::map<std::string, Tensor> read_safetensors(const std::string& path,
                                               std::map<std::string, std::string>* metadata) {
  check_regular_file(path, "safetensors");  // a FIFO or a directory would block or fail oddly
  std::ifstream f(path, std::ios::binary);
  IP_CHECK(f.good(), kIO, "[safetensors] cannot open '", path, "': ", std::strerror(errno));
  f.seekg(0, std::ios::end);
  std::streamoff size = f.tellg();
  IP_CHECK(size >= 0, kIO, "[safetensors] cannot read '", path, "'");
  Source src;
  src.size = static_cast<uint64_t>(size);
  src.read = [&](uint64_t offset, uint64_t n, void* dst) {
    f.seekg(static_cast<std::streamoff>(offset));
    f.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    IP_CHECK(f.good(), kIO, "[safetensors] ", path, ": read of ", n, " bytes at offset ", offset,
             " failed");
  };
  return read_from(src, path, metadata);
}

std::map<std::string, Tensor> read_safetensors_bytes(const std::string& bytes,
                                                     const std::string& label,
                                                     std::map<std::string, std::string>* metadata) {
  Source src;
  src.size = bytes.size();
  src.read = [&](uint64_t offset, uint64_t n, void* dst) {
    IP_ASSERT(offset <= bytes.size() && n <= bytes.size() - offset,
              "safetensors reads stay inside the buffer");
    std::memcpy(dst, bytes.data() + offset, n);
  };
  return read_from(src, label, metadata);
}

namespace {

// The header text (padded so the data starts 8-byte aligned, as the reference writer does) and
// the tensors' contiguous forms, in key order.
std::string header_text(const std::map<std::string, Tensor>& tensors,
                        const std::map<std::string, std::string>& metadata,
                        std::vector<Tensor>* contiguous) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata) json_util::append_new_key(m, k, v);
    json_util::append_new_key(header, "__metadata__", std::move(m));
  }
  uint64_t offset = 0;
  for (const auto& [key, t] : tensors) {
    IP_CHECK(key != "__metadata__", kInvalidArgument,
             "[safetensors] '__metadata__' is reserved and cannot name a tensor");
    IP_CHECK(t.defined() && !t.is_meta(), kInvalidArgument, "[safetensors] tensor '", key,
             "' has no data (undefined or meta tensor) and cannot be written");
    contiguous->push_back(t.contiguous());
    Json e = Json::object();
    e["dtype"] = safetensors_dtype_code(t.dtype());
    e["shape"] = t.shape();
    e["data_offsets"] = {offset, offset + t.nbytes()};
    offset += t.nbytes();
    json_util::append_new_key(header, key, std::move(e));  // std::map keys: each new
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& e) {
    IP_FAIL(kInvalidArgument, "[safetensors] cannot encode the header: ", e.what());
  }
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  std::string out;
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + text;
}

}  // namespace

std::string write_safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                                    const std::map<std::string, std::string>& metadata) {
  std::vector<Tensor> contiguous;
  std::string out = header_text(tensors, metadata, &contiguous);
  for (const Tensor& t : contiguous)
    if (t.nbytes() > 0) out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  return out;
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  check_output_file(path, "safetensors");
  std::vector<Tensor> contiguous;
  const std::string head = header_text(tensors, metadata, &contiguous);
  // Through a temporary file renamed over `path`: a reader of the old file never sees it change.
  write_file_atomically(path, "safetensors", [&](FileSink& out) {
    out.write(head);
    for (const Tensor& t : contiguous)
      if (t.nbytes() > 0) out.write(t.data_ptr(), t.nbytes());
  });
}

}  // namespace inplace
