#include "frontend/json_util.h"

#include <set>
#include <vector>

#include "core/error.h"

namespace inplace::json_util {

Json parse_strict(const std::string& text, const char* tag, const std::string& label) {
  // One key set per open object: nlohmann keeps the last of repeated keys silently, which
  // would hide a mistake (two tensors at one key, two "args" in a node).
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto callback = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get_ref<const std::string&>()).second &&
            duplicate.empty())
          duplicate = parsed.get_ref<const std::string&>();
        break;
      default:
        break;
    }
    return true;
  };
  Json j;
  try {
    j = Json::parse(text, callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const Json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> the tail.
    size_t close = what.find("] ");
    if (what.rfind("[json.exception.", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    IP_FAIL(kParse, "[", tag, "] ", label, ": invalid JSON: ", what);
  }
  IP_CHECK(duplicate.empty(), kParse, "[", tag, "] ", label, ": key '", duplicate,
           "' appears twice in one object");
  return j;
}

const char* type_name(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "boolean";
  if (j.is_number_integer()) return "integer";
  if (j.is_number_float()) return "float";
  if (j.is_string()) return "string";
  if (j.is_array()) return "array";
  if (j.is_object()) return "object";
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
