// inplace inspect FILE: what an engine file holds — bindings, aliased I/O with kinds, arena
// and weight bytes, op counts, then the steps (Engine::describe).
#include <cstdio>
#include <map>

#include "arg_parser.h"
#include "commands.h"
#include "engine/engine_file.h"

namespace inplace::cli {

int run_inspect(const std::vector<std::string>& args) {
  std::string path;
  ArgParser p("inspect",
              "Loads an engine file (checking it) and prints its bindings, aliased\n"
              "I/O with kinds, arena bytes, weight bytes, op counts and steps.");
  p.positional("FILE", &path, "the engine file (inplace compile -o FILE)");
  if (!p.parse(args)) return 0;
  std::shared_ptr<const Engine> e = load_engine(path);
  std::map<std::string, int> ops;
  for (const Step& s : e->plan().steps)
    ++ops[s.kind == StepKind::kCopy || !s.op ? std::string("copy") : s.op->schema.full_name()];
  std::printf("file: %s (ABI %u)\n", path.c_str(), kEngineFileAbi);
  std::fputs(e->describe().c_str(), stdout);
  std::printf("op_counts:\n");
  for (const auto& [name, n] : ops) std::printf("  %s: %d\n", name.c_str(), n);
  return 0;
}

}  // namespace inplace::cli
