#include "call_script.h"

#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/file_io.h"
#include "frontend/json_util.h"

namespace inplace::cli {

std::vector<ScriptEntry> read_call_script(const std::string& path) {
  using json_util::Json;
  Json doc = json_util::parse_strict(read_regular_file(path, "run"), "run", path);
  IP_CHECK(doc.is_array(), kParse, "[run] ", path, ": expected a JSON list of calls, got ",
           json_util::type_name(doc));
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<ScriptEntry> out;
  // How each session was first named: 1 and "1" would name one session, so a script that
  // mixes them is refused rather than merging two sessions its author meant apart.
  std::map<std::string, std::pair<bool, size_t>> spelled;  // session -> (an integer, entry)
  for (size_t i = 0; i < doc.size(); ++i) {
    const Json& e = doc[i];
    auto fail = [&](const std::string& why) {
      IP_FAIL(kParse, "[run] ", path, ": entry ", i, ": ", why);
    };
    if (!e.is_object()) fail(str_cat("expected an object, got ", json_util::type_name(e)));
    for (const auto& [key, value] : e.items())
      if (key != "session" && key != "method" && key != "inputs" && key != "reset")
        fail("unknown key '" + key + "' (keys: session, method, inputs, reset)");
    ScriptEntry s;
    if (!e.contains("session")) fail("has no \"session\"");
    int64_t n = 0;
    if (e["session"].is_string())
      s.session = e["session"].get<std::string>();
    else if (json_util::get_int64(e["session"], &n))
      s.session = std::to_string(n);
    else
      fail("\"session\" must be a string or an integer");
    if (s.session.empty() || s.session.find_first_of(". \t\n") != std::string::npos)
      fail("session name '" + s.session + "' must be non-empty without '.' or spaces");
    const bool integer = !e["session"].is_string();
    auto [first, fresh] = spelled.try_emplace(s.session, integer, i);
    if (!fresh && first->second.first != integer)
      fail(str_cat("session ", integer ? s.session : "\"" + s.session + "\"", " is ",
                   integer ? "an integer" : "a string", " here but ",
                   integer ? "the string \"" + s.session + "\"" : "the integer " + s.session,
                   " in entry ", first->second.second,
                   "; 1 and \"1\" would be one session: spell each session one way"));
    if (e.contains("reset")) {
      if (!e["reset"].is_boolean() || !e["reset"].get<bool>()) fail("\"reset\" must be true");
      if (e.contains("method") || e.contains("inputs"))
        fail("a reset entry takes no \"method\" or \"inputs\"");
      s.reset = true;
    } else {
      if (!e.contains("method") || !e["method"].is_string())
        fail("needs a \"method\" string (or \"reset\": true)");
      s.method = e["method"].get<std::string>();
      if (e.contains("inputs")) {
        if (!e["inputs"].is_string()) fail("\"inputs\" must be a path string");
        std::filesystem::path p = e["inputs"].get<std::string>();
        s.inputs_path = (p.is_absolute() ? p : dir / p).string();
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace inplace::cli
