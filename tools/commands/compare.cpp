// inplace compare A.safetensors B.safetensors [--tol T] [--ignore PREFIX]...: same keys, shapes,
// dtypes and values (within T, relative to max(1, |b|)). Exit 0 when equal, 1 with the first
// difference. Keys starting with an --ignore prefix are left out on both sides (an engine file
// run has no buffer.<target> entries, say: --ignore buffer.).
#include <cmath>
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "frontend/safetensors.h"

namespace inplace::cli {

int run_compare(const std::vector<std::string>& args) {
  std::string a_path, b_path, tol_text = "0";
  std::vector<std::string> ignore;
  ArgParser p("compare", "Compares two safetensors files tensor by tensor.");
  p.positional("A.safetensors", &a_path, "first file");
  p.positional("B.safetensors", &b_path, "second file");
  p.option("--tol", "T", &tol_text, "allowed difference relative to max(1, |b|) (default 0)");
  p.repeated("--ignore", "PREFIX", &ignore, "leave out keys starting with PREFIX (repeatable)");
  if (!p.parse(args)) return 0;
  double tol = std::stod(tol_text);
  auto a = read_safetensors(a_path), b = read_safetensors(b_path);
  size_t ignored = 0;
  for (auto* m : {&a, &b})
    std::erase_if(*m, [&](const auto& kv) {
      for (const std::string& prefix : ignore)
        if (kv.first.rfind(prefix, 0) == 0) return ++ignored, true;
      return false;
    });
  for (const auto& [k, t] : a)
    IP_CHECK(b.count(k), kNotFound, "[compare] '", k, "' is in ", a_path, " but not in ", b_path);
  for (const auto& [k, t] : b) {
    IP_CHECK(a.count(k), kNotFound, "[compare] '", k, "' is in ", b_path, " but not in ", a_path);
    const Tensor& x = a.at(k);
    IP_CHECK(x.shape() == t.shape() && x.dtype() == t.dtype(), kShapeMismatch, "[compare] '", k,
             "': ", dtype_name(x.dtype()), shape_str(x.shape()), " vs ", dtype_name(t.dtype()),
             shape_str(t.shape()));
    for (int64_t i = 0; i < t.numel(); ++i) {
      double u = x.at(i), v = t.at(i);
      bool same = u == v || (std::isnan(u) && std::isnan(v)) ||
                  std::fabs(u - v) <= tol * std::fmax(1.0, std::fabs(v));
      IP_CHECK(same, kInvalidArgument, "[compare] '", k, "' element ", i, ": ", u, " vs ", v);
    }
  }
  if (ignored)
    std::printf("equal: %zu tensors (%zu ignored)\n", b.size(), ignored);
  else
    std::printf("equal: %zu tensors\n", b.size());
  return 0;
}

}  // namespace inplace::cli
