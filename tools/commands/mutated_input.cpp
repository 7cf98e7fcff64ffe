// --mutated-input INPUT=OUTPUT, parsed here for every command that takes it (exec, plan, compile).
#include <cctype>

#include "arg_parser.h"
#include "compile_common.h"

namespace inplace::cli {

DeclaredMutation parse_mutated_input(const std::string& command, const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError(command + ": --mutated-input takes INPUT=OUTPUT, got '" + text + "'");
  std::string output = text.substr(eq + 1);
  std::string digits = output.rfind("output.", 0) == 0 ? output.substr(7) : output;
  bool ok = !digits.empty() && digits.size() < 10;
  for (char c : digits) ok &= std::isdigit(static_cast<unsigned char>(c)) != 0;
  if (!ok)
    throw UsageError(command +
                     ": --mutated-input OUTPUT must be an output index such as 0 or output.0, "
                     "got '" +
                     output + "'");
  return {text.substr(0, eq), std::stoi(digits)};
}

std::vector<DeclaredMutation> parse_mutated_inputs(const std::string& command,
                                                   const std::vector<std::string>& texts) {
  std::vector<DeclaredMutation> out;
  for (const std::string& t : texts) out.push_back(parse_mutated_input(command, t));
  return out;
}

}  // namespace inplace::cli
