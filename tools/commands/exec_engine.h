// exec on a saved engine file (tools/commands/exec_engine.cpp) or program file
// (tools/commands/exec_program.cpp).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "program/program.h"
#include "run_flags.h"

namespace inplace::cli {

// True when `path` starts with the engine file magic.
bool looks_like_engine_file(const std::string& path);
// True when `path` starts with the program file magic.
bool looks_like_program_file(const std::string& path);
// Writes exec's OUT file (output.<i>, input.<name>, buffer.<target>) and, with `print`, lists it.
void write_exec_results(const std::string& out_path, const std::map<std::string, Tensor>& results,
                        bool print);
int run_exec_engine(const std::string& path, const std::string& inputs_path,
                    const std::string& out_path, bool print, const BackendOptions& options,
                    bool stats);

// One call of `method` (empty: the program's only method) on a fresh session.
int run_exec_on_program(std::shared_ptr<const Program> program, const std::string& path,
                        const std::string& method, const std::string& inputs_path,
                        const std::string& out_path, bool print, const BackendOptions& options,
                        bool stats);
int run_exec_program(const std::string& path, const std::string& method,
                     const std::string& inputs_path, const std::string& out_path, bool print,
                     const BackendOptions& options, bool stats);

}  // namespace inplace::cli
