// exec on a saved engine file (tools/commands/exec_engine.cpp).
#pragma once
#include <string>

namespace inplace::cli {

// True when `path` starts with the engine file magic.
bool looks_like_engine_file(const std::string& path);
int run_exec_engine(const std::string& path, const std::string& inputs_path,
                    const std::string& out_path, bool print);

}  // namespace inplace::cli
