// inplace inspect FILE: what an engine file holds — bindings, aliased I/O with kinds, arena
// and weight bytes, op counts, then the steps (Engine::describe); for a program file, its
// methods (bindings with their roles, aliased I/O) and its state table (Program::describe).
#include <cstdio>
#include <map>

#include "arg_parser.h"
#include "commands.h"
#include "core/mapped_file.h"
#include "engine/engine_file.h"
#include "program/program_file.h"

namespace inplace::cli {

int run_inspect(const std::vector<std::string>& args) {
  std::string path;
  ArgParser p("inspect",
              "Loads an engine file (checking it) and prints its bindings, aliased\n"
              "I/O with kinds, arena bytes, weight bytes, op counts and steps; or a\n"
              "program file: its methods (bindings, aliased I/O) and state table.");
  p.positional("FILE", &path, "the engine file (inplace compile -o FILE)");
  if (!p.parse(args)) return 0;
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, "inspect");
  if (is_program_file(file->bytes())) {
    std::shared_ptr<const Program> program = deserialize_program(file->bytes(), path, file);
    std::printf("file: %s (program ABI %u, engine ABI %u)\n", path.c_str(), kProgramFileAbi,
                kEngineFileAbi);
    std::fputs(program->describe().c_str(), stdout);
    return 0;
  }
  std::shared_ptr<const Engine> e = deserialize_engine(file->bytes(), path, nullptr, file);
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
