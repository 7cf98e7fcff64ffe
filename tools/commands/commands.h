// The `inplace` subcommands. Each takes the arguments after its name and returns the exit
// status; errors are thrown (inplace::Error: exit 1, cli::UsageError: exit 2) and reported by
// main as one line.
#pragma once
#include <string>
#include <vector>

namespace inplace::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
};

int run_print(const std::vector<std::string>& args);
int run_exec(const std::vector<std::string>& args);
int run_passes(const std::vector<std::string>& args);
int run_plan(const std::vector<std::string>& args);
int run_compare(const std::vector<std::string>& args);
int run_compile(const std::vector<std::string>& args);
int run_inspect(const std::vector<std::string>& args);
int run_ops(const std::vector<std::string>& args);
int run_run(const std::vector<std::string>& args);
int run_generate(const std::vector<std::string>& args);
// `compile --method NAME=GRAPH.json ...` (compile_program.cpp).
int run_compile_program(const std::vector<std::string>& methods,
                        const std::vector<std::string>& dynamic,
                        const std::vector<std::string>& ranges,
                        const std::vector<std::string>& caller_owned,
                        const std::vector<std::string>& runtime_owned, bool no_alias,
                        const std::string& device, const std::string& out_path);
int run_demo(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
// `bench --device cuda` (bench_gpu.cpp).
int run_bench_gpu(const std::vector<std::string>& args);

// Every command, in the order `inplace --help` lists them.
const std::vector<Command>& commands();

}  // namespace inplace::cli
