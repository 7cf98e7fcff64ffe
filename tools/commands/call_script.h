// The call script of `inplace run`: a JSON list of calls on named sessions,
//   [{"session": S, "method": M, "inputs": "FILE.safetensors"}, {"session": S, "reset": true}]
// S a string or an integer; "inputs" relative to the script's folder (optional for a method
// without inputs). Errors name the file and the entry.
#pragma once
#include <string>
#include <vector>

namespace inplace::cli {

struct ScriptEntry {
  std::string session;
  std::string method;       // empty for a reset
  std::string inputs_path;  // resolved; empty when the call has none
  bool reset = false;
};

std::vector<ScriptEntry> read_call_script(const std::string& path);

}  // namespace inplace::cli
