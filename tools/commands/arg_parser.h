// A small command-line parser for the `inplace` subcommands: --flag, --option VALUE or
// --option=VALUE, repeatable options, positionals. Usage mistakes throw UsageError (exit 2).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace inplace::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ArgParser {
 public:
  ArgParser(std::string command, std::string summary);

  void flag(const std::string& name, bool* out, const std::string& help);
  void option(const std::string& name, const std::string& metavar, std::string* out,
              const std::string& help, bool required = false);
  void repeated(const std::string& name, const std::string& metavar, std::vector<std::string>* out,
                const std::string& help);
  void positional(const std::string& metavar, std::string* out, const std::string& help,
                  bool required = true);

  // Parses the arguments after the command name. Returns false when --help was asked for
  // (the help text is then printed to stdout).
  bool parse(const std::vector<std::string>& args);
  std::string help() const;

 private:
  struct Spec {
    enum class Kind { kFlag, kOption, kRepeated, kPositional } kind;
    std::string name, metavar, help;
    bool required = false;
    bool* flag_out = nullptr;
    std::string* out = nullptr;
    std::vector<std::string>* list_out = nullptr;
  };
  [[noreturn]] void usage_error(const std::string& message) const;
  const Spec* find(const std::string& name) const;

  std::string command_, summary_;
  std::vector<Spec> specs_;
};

}  // namespace inplace::cli
