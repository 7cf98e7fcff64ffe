// inplace inspect FILE: what a program file holds — its methods (bindings with their roles,
// aliased I/O), its state table (Program::describe) and each method's op counts; for an engine
// file of an older build, its bindings, aliased I/O with kinds, arena and weight bytes, op
// counts, then the steps (Engine::describe).
#include <cstdio>
#include <map>

#include "arg_parser.h"
#include "commands.h"
#include "core/mapped_file.h"
#include "engine/engine_file.h"
#include "program/program_file.h"

namespace inplace::cli {

namespace {

void print_op_counts(const Engine& e, const char* indent) {
  std::map<std::string, int> ops;
  for (const Step& s : e.plan().steps)
    ++ops[s.kind == StepKind::kCopy || !s.op ? std::string("copy") : s.op->schema.full_name()];
  for (const auto& [name, n] : ops) std::printf("%s%s: %d\n", indent, name.c_str(), n);
}

}  // namespace

int run_inspect(const std::vector<std::string>& args) {
  std::string path;
  ArgParser p("inspect",
              "Loads a program file (checking it) and prints its methods (bindings,\n"
              "aliased I/O with kinds), its state table and each method's op counts;\n"
              "or an engine file of an older build: its bindings, aliased I/O, arena\n"
              "bytes, weight bytes, op counts and steps.");
  p.positional("FILE", &path, "the program file (inplace compile -o FILE)");
  if (!p.parse(args)) return 0;
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, "inspect");
  if (is_program_file(file->bytes())) {
    std::shared_ptr<const Program> program = deserialize_program(file->bytes(), path, file);
    std::printf("file: %s (program ABI %u, engine ABI %u)\n", path.c_str(), kProgramFileAbi,
                kEngineFileAbi);
    std::fputs(program->describe().c_str(), stdout);
    for (const Method& m : program->methods()) {
      std::printf("op_counts %s:\n", m.name.c_str());
      print_op_counts(*m.engine, "  ");
    }
    return 0;
  }
  std::shared_ptr<const Engine> e = deserialize_engine(file->bytes(), path, nullptr, file);
  std::printf("file: %s (ABI %u)\n", path.c_str(), kEngineFileAbi);
  std::fputs(e->describe().c_str(), stdout);
  std::printf("op_counts:\n");
  print_op_counts(*e, "  ");
  return 0;
}

}  // namespace inplace::cli
