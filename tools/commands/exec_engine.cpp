// `inplace exec model.inplace --inputs IN --out OUT`: runs a saved engine file (the format
// before program files) as a one-method program. An engine has no graph or stored state, so
// every input binding (lifted buffers included) is fed from IN by binding name, and OUT gets
// output.<i> for each engine output and input.<name> for each binding after the call (so
// in-place writes show).
#include <cstdio>
#include <fstream>

#include "commands.h"
#include "core/file_io.h"
#include "engine/engine_file.h"
#include "exec_engine.h"
#include "frontend/safetensors.h"
#include "program/engine_program.h"
#include "program/program_file.h"

namespace inplace::cli {

namespace {

// The first 8 bytes of `path` (empty when it is no regular file or is shorter).
std::string file_magic(const std::string& path) {
  try {
    check_regular_file(path, "exec");  // never open a FIFO here: the reader reports it
  } catch (const Error&) {
    return std::string();
  }
  std::ifstream f(path, std::ios::binary);
  char head[8] = {};
  f.read(head, 8);
  return f.gcount() == 8 ? std::string(head, 8) : std::string();
}

}  // namespace

bool looks_like_engine_file(const std::string& path) {
  return is_engine_file(file_magic(path));
}

bool looks_like_program_file(const std::string& path) {
  return is_program_file(file_magic(path));
}

void write_exec_results(const std::string& out_path, const std::map<std::string, Tensor>& results,
                        bool print) {
  write_safetensors(out_path, results);
  if (print)
    for (const auto& [key, t] : results)
      std::printf("  %-24s %s\n", key.c_str(), t.to_string(16).c_str());
}

// An engine file runs as what it is now: a one-method program (`forward`) whose bindings the
// engine writes are caller-owned state and the rest plain inputs, on a Session (the one
// bound-state implementation), so IN must hold every binding.
int run_exec_engine(const std::string& path, const std::string& inputs_path,
                    const std::string& out_path, bool print, const BackendOptions& options,
                    bool stats) {
  return run_exec_on_program(program_from_engine(load_engine(path)), path, "", inputs_path,
                             out_path, print, options, stats);
}

}  // namespace inplace::cli
