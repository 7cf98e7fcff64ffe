// Little-endian binary writer and bounds-checked reader for engine files. Every read checks the
// remaining bytes first; a count read from the file is checked against what remains before
// anything is allocated for it.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/plan.h"
#include "core/error.h"
#include "core/file_sink.h"

namespace inplace::engine_file {

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i64(int64_t v) { raw(&v, 8); }
  void f64(double v) { raw(&v, 8); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s.data(), s.size());
  }
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  void shape(const Shape& s) {
    u32(static_cast<uint32_t>(s.size()));
    for (int64_t d : s) i64(d);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;  // host order is little-endian on every supported target
};

class Reader {
 public:
  // `what` names the field being read (errors: "<label>: field PLAN: ...").
  Reader(std::string_view bytes, std::string label, std::string what)
      : bytes_(bytes), label_(std::move(label)), what_(std::move(what)) {}

  size_t remaining() const { return bytes_.size() - pos_; }
  size_t pos() const { return pos_; }
  const std::string& label() const { return label_; }
  const std::string& what() const { return what_; }

  [[noreturn]] void fail(const std::string& message) const {
    IP_FAIL(kCorrupt, "[engine_file] ", label_, ": ", what_, ": ", message);
  }
  void need(uint64_t n, const char* item) const {
    if (n > remaining())
      fail(str_cat(item, " needs ", n, " bytes but only ", remaining(), " remain"));
  }
  uint8_t u8(const char* item) {
    need(1, item);
    return static_cast<uint8_t>(bytes_[pos_++]);
  }
  uint32_t u32(const char* item) { return get<uint32_t>(item); }
  uint64_t u64(const char* item) { return get<uint64_t>(item); }
  int64_t i64(const char* item) { return get<int64_t>(item); }
  double f64(const char* item) { return get<double>(item); }
  std::string_view view(uint64_t n, const char* item) {
    need(n, item);
    std::string_view v = bytes_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  std::string str(const char* item) {
    uint64_t n = u64(item);
    return std::string(view(n, item));
  }
  // A count of things that take at least `min_item_bytes` each: checked against what remains.
  uint64_t count(const char* item, uint64_t min_item_bytes) {
    uint64_t n = u32(item);
    if (min_item_bytes && n > remaining() / min_item_bytes)
      fail(str_cat(item, " count ", n, " is larger than the ", remaining(),
                   " remaining bytes allow"));
    return n;
  }
  Shape shape(const char* item) {
    uint64_t n = count(item, 8);
    Shape s(n);
    for (uint64_t k = 0; k < n; ++k) s[k] = i64(item);
    return s;
  }
  DType dtype(const char* item) {
    uint8_t d = u8(item);
    if (d >= kNumDTypes) fail(str_cat(item, " has unknown dtype code ", int(d)));
    return static_cast<DType>(d);
  }
  void expect_end() const {
    if (remaining()) fail(str_cat(remaining(), " unexpected trailing bytes"));
  }

 private:
  template <typename T>
  T get(const char* item) {
    need(sizeof(T), item);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view bytes_;
  size_t pos_ = 0;
  std::string label_, what_;
};

// PLAN field (engine_file_plan.cpp). Constants are not part of it: they travel in WEIGHTS.
void write_plan(Writer& w, const Plan& plan);
void read_plan(Reader& r, Plan* plan);

// WEIGHTS field: count, then per weight name, dtype, shape, absolute data offset, byte count;
// then the data, each 64-byte aligned from the file start. `field_start` is the file offset of
// the field's first byte (after its length prefix).
// Writes the field, its length prefix first, at out.pos(); the data straight from the tensors.
void write_weights(FileSink& out, const Plan& plan);
// The field's contents alone (no length prefix) for a field starting at `field_start`.
std::string write_weights(const Plan& plan, size_t field_start);
// Reads a WEIGHTS field into plan->constants / constant_names, checking every size and offset.
// Each weight is a copy, or with `keep_alive` (the owner of the bytes) a view into the field
// when its data is 64-byte aligned in memory.
void read_weights(std::string_view field, size_t field_start, const std::string& label, Plan* plan,
                  const std::shared_ptr<const void>& keep_alive = nullptr);

}  // namespace inplace::engine_file
