// The `inplace` command-line program: dispatches to tools/commands/<command>.cpp and turns
// every failure into one line on stderr (exit 1; 2 for usage mistakes), never a crash.
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "commands/arg_parser.h"
#include "commands/commands.h"
#include "core/error.h"

namespace {

std::string top_help() {
  std::string s =
      "usage: inplace <command> [options]\n"
      "       inplace --help | --version\n\n"
      "inplace compiles and runs tensor programs whose state is updated in place.\n\n"
      "commands:\n";
  for (const auto& c : inplace::cli::commands()) {
    std::string name = std::string("  ") + c.name;
    name.resize(12, ' ');
    s += name + c.summary + "\n";
  }
  s += "\nRun 'inplace <command> --help' for the command's options.\n";
  return s;
}

// One line, whatever the message holds.
void report(const std::string& message) {
  std::string line = message;
  for (size_t i = 0; (i = line.find('\n', i)) != std::string::npos;) line.replace(i, 1, "; ");
  std::fprintf(stderr, "inplace: error: %s\n", line.c_str());
}

int dispatch(const std::vector<std::string>& args) {
  using inplace::cli::UsageError;
  if (args.empty()) throw UsageError("no command given (see 'inplace --help')");
  const std::string& first = args[0];
  if (first == "--help" || first == "-h" || first == "help") {
    std::fputs(top_help().c_str(), stdout);
    return 0;
  }
  if (first == "--version" || first == "-V") {
    std::printf("inplace %s\n", INPLACE_VERSION);
    return 0;
  }
  for (const auto& c : inplace::cli::commands())
    if (first == c.name) return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
  throw UsageError("unknown command '" + first + "' (see 'inplace --help')");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const inplace::cli::UsageError& e) {
    report(e.what());
    return 2;
  } catch (const inplace::Error& e) {
    report(e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    report("out of memory");
    return 1;
  } catch (const std::exception& e) {
    report(e.what());
    return 1;
  } catch (...) {
    report("unexpected failure");
    return 1;
  }
}
