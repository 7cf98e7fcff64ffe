// Runs the `inplace` program as a separate process for the CLI tests: a scratch folder per
// test, stdout/stderr captured, and the one-line error check.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/graph_json.h"
#include "test_util.h"

namespace inplace::testing {

namespace fs = std::filesystem;

inline const std::string kFixtures = std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures";

struct CliResult {
  int code = -1;  // -1: killed by a signal (a crash)
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("inplace_cli_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // `timeout_s` > 0 kills the program after that long (exit 124): for inputs that could hang.
  CliResult run(const std::string& args, int timeout_s = 0) const {
    std::string cmd = (timeout_s > 0 ? "timeout -k 5 " + std::to_string(timeout_s) + " " : "") +
                      std::string(INPLACE_CLI) + " " + args + " >" + path("stdout") + " 2>" +
                      path("stderr");
    int status = std::system(cmd.c_str());
    CliResult r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(path("stdout"));
    r.err = slurp(path("stderr"));
    return r;
  }

  static std::string slurp(const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

  std::string write_graph(const Graph& g, const std::string& name = "g.json") const {
    write_graph_json_file(g, path(name));
    return path(name);
  }

  fs::path dir_;
};

// One line "inplace: error: ..." on stderr, the exit code, and the parts it must name.
inline ::testing::AssertionResult one_line_error(const CliResult& r, int code,
                                                 const std::vector<std::string>& parts) {
  if (r.code != code)
    return ::testing::AssertionFailure()
           << "exit " << r.code << " != " << code << "; stderr: " << r.err;
  if (r.err.rfind("inplace: error: ", 0) != 0 || r.err.find('\n') != r.err.size() - 1)
    return ::testing::AssertionFailure() << "stderr is not one error line: [" << r.err << "]";
  for (const std::string& p : parts)
    if (r.err.find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "stderr lacks [" << p << "]: " << r.err;
  return ::testing::AssertionSuccess();
}

}  // namespace inplace::testing
