#include "frontend/json_util.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace inplace::json_util {

namespace {

// Builds the document like nlohmann's own DOM parser, and also: refuses a key repeated within
// one object (nlohmann keeps the last silently, which would hide two tensors at one key or two
// "args" in a node), and keeps an integer literal beyond 64 bits (which nlohmann reads as a
// float) as a binary value holding its text, a type JSON text cannot otherwise produce, so a
// reader refuses it where it is used, naming the node (see integer_literal).
class StrictSax {
 public:
  explicit StrictSax(Json& root) : root_(root) {}

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const Json::string_t& text) {
    if (text.find_first_of(".eE") == std::string::npos)
      return put(Json::binary(std::vector<uint8_t>(text.begin(), text.end())));
    return put(Json(v));
  }
  bool string(Json::string_t& v) { return put(Json(std::move(v))); }
  bool binary(Json::binary_t& v) { return put(Json::binary(std::move(v))); }
  bool start_object(std::size_t) {
    open_.push_back({put_ref(Json::object()), false});
    return true;
  }
  bool key(Json::string_t& k) {
    if (repeated(open_.back(), k) && duplicate_.empty()) duplicate_ = k;
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    check_large(open_.back());
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    open_.push_back({put_ref(Json::array()), {}});
    return true;
  }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const Json::exception& e) {
    error_ = e.what();
    return false;
  }

  const std::string& error() const { return error_; }
  const std::string& duplicate() const { return duplicate_; }

 private:
  struct Open {
    Json* value;
    bool large;  // an object of more than kSearchUpTo keys: checked for repeats when it closes
  };
  static constexpr size_t kSearchUpTo = 16;

  // Is `k` already a key of the open object? Searched while the object is small; a larger one
  // is checked once, when it closes, by sorting its keys: O(n log n), where a search per key
  // (and ordered_json's own lookup) is O(n^2).
  static bool repeated(Open& o, const std::string& k) {
    const Json::object_t& m = o.value->get_ref<const Json::object_t&>();
    if (o.large || m.size() >= kSearchUpTo) {
      o.large = true;
      return false;
    }
    for (const auto& [key, value] : m)
      if (key == k) return true;
    return false;
  }
  // The first key that a closing large object holds twice, if any.
  void check_large(const Open& o) {
    if (!o.large || !duplicate_.empty()) return;
    const Json::object_t& m = o.value->get_ref<const Json::object_t&>();
    std::vector<const std::string*> keys;
    keys.reserve(m.size());
    for (const auto& [key, value] : m) keys.push_back(&key);
    std::sort(keys.begin(), keys.end(),
              [](const std::string* a, const std::string* b) { return *a < *b; });
    for (size_t i = 1; i < keys.size(); ++i)
      if (*keys[i] == *keys[i - 1]) {
        duplicate_ = *keys[i];
        return;
      }
  }
  bool put(Json v) {
    put_ref(std::move(v));
    return true;
  }
  // Pointers to open containers stay valid: only the innermost one grows.
  Json* put_ref(Json v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& top = *open_.back().value;
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    // Keys are checked for repeats in key(): append, rather than top[key_], which searches the
    // ordered object's keys one by one (quadratic over a large safetensors header).
    append_new_key(top, std::move(key_), std::move(v));
    return &top.get_ref<Json::object_t&>().back().second;
  }

  Json& root_;
  std::vector<Open> open_;
  std::string key_, error_, duplicate_;
};

}  // namespace

Json parse_strict(const std::string& text, const char* tag, const std::string& label) {
  Json j;
  StrictSax sax(j);
  bool ok = false;
  try {
    ok = Json::sax_parse(text, &sax, Json::input_format_t::json, /*strict=*/true,
                         /*ignore_comments=*/false);
  } catch (const Json::exception& e) {
    IP_FAIL(kParse, "[", tag, "] ", label, ": invalid JSON: ", e.what());
  }
  if (!ok) {
    std::string what = sax.error();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> the tail.
    size_t close = what.find("] ");
    if (what.rfind("[json.exception.", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    IP_FAIL(kParse, "[", tag, "] ", label, ": invalid JSON: ", what);
  }
  IP_CHECK(sax.duplicate().empty(), kParse, "[", tag, "] ", label, ": key '", sax.duplicate(),
           "' appears twice in one object");
  return j;
}

void append_new_key(Json& object, std::string key, Json value) {
  Json::object_t& m = object.get_ref<Json::object_t&>();
  static_cast<Json::object_t::Container&>(m).emplace_back(std::move(key), std::move(value));
}

std::string integer_literal(const Json& j) {
  if (!j.is_binary()) return "";
  const auto& b = j.get_binary();
  return std::string(b.begin(), b.end());
}

const char* type_name(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "boolean";
  if (j.is_number_integer()) return "integer";
  if (j.is_number_float()) return "float";
  if (j.is_string()) return "string";
  if (j.is_array()) return "array";
  if (j.is_object()) return "object";
  if (j.is_binary()) return "integer outside int64";
  return "value";
}

bool get_int64(const Json& j, int64_t* out) {
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (j.is_number_integer()) {
    *out = j.get<int64_t>();
    return true;
  }
  return false;
}

bool checked_numel(const std::vector<int64_t>& shape, int64_t limit, int64_t* out) {
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (d == 0) zero = true;
  }
  if (zero) {
    *out = 0;
    return true;
  }
  for (int64_t d : shape) {
    if (d != 0 && n > limit / d) return false;
    n *= d;
  }
  if (n > limit) return false;
  *out = n;
  return true;
}

}  // namespace inplace::json_util
