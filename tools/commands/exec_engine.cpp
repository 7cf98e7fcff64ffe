// `inplace exec model.inplace --inputs IN --out OUT`: runs a saved engine. An engine has no
// graph, so every input binding (lifted buffers included) is fed from IN by binding name, and
// OUT gets output.<i> for each engine output and input.<name> for each binding after the call
// (so in-place writes show).
#include <cstdio>
#include <fstream>

#include "commands.h"
#include "core/file_io.h"
#include "engine/engine_file.h"
#include "engine/execution_context.h"
#include "exec_engine.h"
#include "frontend/safetensors.h"
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

int run_exec_engine(const std::string& path, const std::string& inputs_path,
                    const std::string& out_path, bool print, const BackendOptions& options,
                    bool stats) {
  std::shared_ptr<const Engine> engine = load_engine(path);
  std::map<std::string, Tensor> given;
  if (!inputs_path.empty()) given = read_safetensors(inputs_path);
  const std::string in_label = inputs_path.empty() ? "(no --inputs)" : inputs_path;
  std::string names;
  for (const Binding& b : engine->inputs()) names += (names.empty() ? "'" : ", '") + b.name + "'";
  for (const auto& [key, t] : given) {
    bool known = false;
    for (const Binding& b : engine->inputs()) known |= b.name == key;
    IP_CHECK(known, kNotFound, "[exec] ", in_label, ": tensor '", key,
             "' matches no input binding of engine ", path, "; its inputs are ", names);
  }
  ExecutionContext ctx(engine);
  apply_backend_options(ctx, options);
  std::vector<Tensor> bound;
  for (const Binding& b : engine->inputs()) {
    auto it = given.find(b.name);
    IP_CHECK(it != given.end(), kNotFound, "[exec] missing input binding '", b.name, "' of ", path,
             ": ", in_label, " has no tensor '", b.name, "' (its inputs are ", names, ")");
    bound.push_back(it->second);
    ctx.bind_input(b.name, bound.back());
  }
  std::vector<Tensor> outputs = ctx.execute();
  std::map<std::string, Tensor> results;
  for (int i = 0; i < engine->original_output_count(); ++i)
    results[str_cat("output.", i)] = outputs[i];
  for (size_t i = 0; i < bound.size(); ++i) results["input." + engine->inputs()[i].name] = bound[i];
  write_exec_results(out_path, results, print);
  if (stats) std::printf("stats: %s\n", stats_line(ctx.stats()).c_str());
  return 0;
}

}  // namespace inplace::cli
