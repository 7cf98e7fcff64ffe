#include "output_path.h"

#include <filesystem>

#include "core/error.h"

namespace inplace::cli {

namespace {
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
  fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return false;
  fs::path cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}
}  // namespace

void refuse_output_over_inputs(const char* command, const char* option, const std::string& out,
                               const std::vector<std::pair<std::string, std::string>>& inputs) {
  for (const auto& [what, path] : inputs)
    IP_CHECK(path.empty() || !same_file(out, path), kInvalidArgument, "[", command, "] ", option,
             " '", out, "' is the same file as ", what, " '", path,
             "'; refusing to overwrite an input (write the output elsewhere)");
}

}  // namespace inplace::cli
