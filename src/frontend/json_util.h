// Internal to the frontend: JSON parsing that refuses duplicate object keys, and helpers
// shared by the graph JSON and safetensors readers. Includes nlohmann, so it stays out of
// public headers (the library links nlohmann privately).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace inplace::json_util {

using Json = nlohmann::ordered_json;  // keeps object keys in written order (dicts, kwargs)

// Parses `text`; on malformed JSON or a key repeated within one object, throws kParse with
// "[<tag>] <label>: ..." (the parse position included). An integer literal outside 64 bits
// (2^64 and above, below -2^63) becomes a binary value holding its text: see integer_literal.
Json parse_strict(const std::string& text, const char* tag, const std::string& label);

// Appends `key: value` to the JSON object `object` without looking for `key`, which the caller
// guarantees is not there yet (keys of a std::map, or checked as parse_strict does). An
// ordered_json object finds a key by linear search, so filling one of n keys with operator[] or
// emplace is O(n^2): 10^6 tensors in a safetensors header took minutes.
void append_new_key(Json& object, std::string key, Json value);

// The text of an integer literal that fits no 64-bit integer (parse_strict keeps it as a binary
// value); empty for any other value.
std::string integer_literal(const Json& j);

// "object", "array", "string", ... for error messages.
const char* type_name(const Json& j);

// The value as int64 when it is a JSON integer that fits; false otherwise.
bool get_int64(const Json& j, int64_t* out);

// numel of a shape, false on a negative dim or when the product exceeds `limit`.
bool checked_numel(const std::vector<int64_t>& shape, int64_t limit, int64_t* out);

}  // namespace inplace::json_util
