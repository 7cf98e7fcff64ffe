// inplace bench [--size S] [--s-max 256,1024,4096,8192] [--position P] [--steps N]
//               [--threads T] [--dtype f32|bf16] [--no-torch] [--python PATH] [--out bench.json]
// Per-step decode time of the built-in model at several cache sizes, in one run: the aliased
// engine, the copy-back engine, PyTorch eager on the same weights (when the python has torch),
// and the floor: the bytes a step must read (weights + the cache positions attention reads) over
// the read bandwidth this machine reaches with the run's thread count, measured in the same run.
// Writes JSON; bench/bench_table.py turns it into the markdown table of docs/performance.md and a
// PNG plot.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "arg_parser.h"
#include "commands.h"
#include "core/error.h"
#include "frontend/safetensors.h"
#include "measure.h"
#include "model_json.h"
#include "models/llama.h"
#include "models/llama_runner.h"

namespace inplace::cli {

namespace {

using models::LlamaConfig;
namespace fs = std::filesystem;

std::vector<int64_t> parse_list(const std::string& option, const std::string& value) {
  std::vector<int64_t> out;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_int_option(option, item, 2, 1 << 20));
  if (out.empty()) throw UsageError(option + " expects a comma-separated list of integers");
  return out;
}

// Per-step milliseconds of `steps` decode calls at positions position.. (after two warm-up
// calls), on caches filled with a constant so every page is really read.
// Per-step wall time, and the calling thread's CPU time (with one thread: the step's own work,
// which a busy machine does not inflate the way it inflates wall time).
struct StepTimes {
  std::vector<double> wall, cpu;
};

StepTimes time_decode(const LlamaConfig& c, const models::LlamaEngines& e, int64_t position,
                      int64_t steps, int threads) {
  std::vector<Tensor> caches = models::llama_new_caches(c);
  for (const Tensor& t : caches) t.fill(Scalar(0.01));
  models::LlamaEngineRunner runner(c, e, caches, threads);
  StepTimes t;
  int64_t token = 1;
  for (int64_t i = 0; i < steps + 2; ++i) {
    const int64_t t0 = now_ns(), c0 = thread_cpu_ns();
    Tensor logits = runner.decode(token, position + i);
    const double dt = ms_since(t0), dc = static_cast<double>(thread_cpu_ns() - c0) / 1e6;
    token = models::argmax_token(logits);
    if (i >= 2) {
      t.wall.push_back(dt);
      t.cpu.push_back(dc);
    }
  }
  return t;
}

fs::path default_torch_script() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return exe.parent_path().parent_path() / "bench" / "llama_torch.py";
}

// Runs the PyTorch twin; returns its JSON, or null (with the reason on stderr) when it cannot.
nlohmann::json run_torch(const std::string& python, const LlamaConfig& c,
                         const models::LlamaWeights& w, const std::vector<int64_t>& s_max,
                         int64_t position, int64_t steps, int threads, const fs::path& dir) {
  const fs::path script = default_torch_script();
  if (!fs::exists(python) || !fs::exists(script)) {
    std::fprintf(stderr, "bench: no PyTorch column (%s or %s missing)\n", python.c_str(),
                 script.c_str());
    return nullptr;
  }
  write_safetensors((dir / "weights.safetensors").string(),
                    std::map<std::string, Tensor>(w.begin(), w.end()));
  nlohmann::json config = {{"vocab", c.vocab},           {"d_model", c.d_model},
                           {"n_layers", c.n_layers},     {"n_heads", c.n_heads},
                           {"n_kv_heads", c.n_kv_heads}, {"eps", c.eps}};
  std::string cmd = python + " " + script.string() + " --weights " +
                    (dir / "weights.safetensors").string() + " --config '" + config.dump() +
                    "' --position " + std::to_string(position) + " --steps " +
                    std::to_string(steps) + " --threads " + std::to_string(threads) +
                    " --logits-out " + (dir / "torch_logits.safetensors").string() + " --s-max";
  for (int64_t s : s_max) cmd += " " + std::to_string(s);
  cmd += " > " + (dir / "torch.json").string();
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "bench: the PyTorch run failed (%s); no PyTorch column\n", cmd.c_str());
    return nullptr;
  }
  std::ifstream in(dir / "torch.json");
  return nlohmann::json::parse(in);
}

double median(const std::vector<double>& v) {
  return percentile(v, 0.5);
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i)  // the GPU benchmark: bench_gpu.cpp
    if ((args[i] == "--device" && i + 1 < args.size() && args[i + 1] != "cpu") ||
        (args[i].rfind("--device=", 0) == 0 && args[i] != "--device=cpu"))
      return run_bench_gpu(args);
  std::string size = "small", s_max_s = "256,1024,4096,8192", position_s = "200", steps_s = "16",
              threads_s = "1", dtype_s = "f32", python = "/usr/bin/python3",
              out_path = "bench.json";
  bool no_torch = false;
  ArgParser p("bench",
              "Times decode steps of the built-in Llama-style model at several cache sizes:\n"
              "aliased and copy-back engines, PyTorch eager on the same weights, and the floor\n"
              "(bytes read per step over the measured read bandwidth). Writes JSON.");
  p.option("--size", "tiny|small|medium", &size, "model size (default small)");
  p.option("--s-max", "L,L,...", &s_max_s, "cache sizes (default 256,1024,4096,8192)");
  p.option("--position", "P", &position_s, "decode position of the first timed step (default 200)");
  p.option("--steps", "N", &steps_s, "timed steps per engine and size (default 16)");
  p.option("--dtype", "f32|bf16", &dtype_s,
           "weight dtype (default f32; bf16 halves the bytes read, compute stays f32)");
  p.option("--threads", "T", &threads_s, "threads for the engines and PyTorch (default 1)");
  p.option("--python", "PATH", &python, "python with torch (default /usr/bin/python3)");
  p.flag("--no-torch", &no_torch, "skip the PyTorch column");
  p.option("--out", "bench.json", &out_path, "where the JSON goes (default bench.json)");
  if (!p.parse(args)) return 0;
  single_threaded_blas();
  const std::vector<int64_t> sizes = parse_list("--s-max", s_max_s);
  const int64_t position = parse_int_option("--position", position_s, 0, 1 << 20);
  const int64_t steps = parse_int_option("--steps", steps_s, 1, 100000);
  const int threads = static_cast<int>(parse_int_option("--threads", threads_s, 1, 256));
  int64_t largest = 0;
  for (int64_t s : sizes) {
    if (position + steps + 2 > s)
      throw UsageError("--position + --steps + 2 must fit every --s-max (" + std::to_string(s) +
                       ")");
    largest = std::max(largest, s);
  }

  LlamaConfig c = models::llama_config(size, largest, 0, parse_weight_dtype(dtype_s));
  const models::LlamaWeights w = models::llama_weights(c);  // rope tables cover every s_max
  const int64_t weight_bytes = c.weight_bytes();
  // The floor of a T-thread run is over the bandwidth T threads read at; one thread's and all
  // cores' are measured too (printed and in the JSON). Measured before and after the timed steps,
  // the better of the two counting: what other processes take from a shared machine at one
  // moment does not lower the floor.
  const int64_t bw_bytes = std::max<int64_t>(512 << 20, 4 * weight_bytes);
  const int all_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double bw_one = 0, bw_all = 0, bw = 0;
  auto measure_bandwidths = [&] {
    bw_one = std::max(bw_one, measure_read_bandwidth(bw_bytes, 1));
    bw_all =
        std::max(bw_all, all_cores == 1 ? bw_one : measure_read_bandwidth(bw_bytes, all_cores));
    bw = std::max(bw, threads == 1           ? bw_one
                      : threads == all_cores ? bw_all
                                             : measure_read_bandwidth(bw_bytes, threads));
  };
  measure_bandwidths();
  std::printf("model %s (%.1fM parameters, %.1f MB %s)\n", size.c_str(),
              static_cast<double>(c.parameters()) / 1e6, static_cast<double>(weight_bytes) / 1e6,
              dtype_name(c.weight_dtype));

  nlohmann::json torch = nullptr;
  double torch_diff = -1;
  const fs::path dir = fs::temp_directory_path() / ("inplace-bench-" + std::to_string(getpid()));
  if (!no_torch) {
    fs::create_directories(dir);
    std::printf("running PyTorch eager on the same weights ...\n");
    std::fflush(stdout);
    torch = run_torch(python, c, w, sizes, position, steps, threads, dir);
  }

  nlohmann::json rows = nlohmann::json::array();
  for (int64_t s : sizes) {
    c.s_max = s;
    const models::LlamaEngines aliased = models::compile_llama(c, w, 0, true);
    const models::LlamaEngines copy_back = models::compile_llama(c, w, 0, false);
    if (torch != nullptr && torch_diff < 0 && fs::exists(dir / "torch_logits.safetensors")) {
      // The same step in both: token 1 at position 0 on zero caches.
      models::LlamaEngineRunner r(c, aliased, models::llama_new_caches(c));
      Tensor ours = r.decode(1, 0);
      Tensor theirs = read_safetensors((dir / "torch_logits.safetensors").string()).at("logits");
      torch_diff = 0;
      for (int64_t i = 0; i < ours.numel(); ++i)
        torch_diff = std::max(torch_diff, std::fabs(ours.at(i) - theirs.at(i)) /
                                              std::max(1.0, std::fabs(theirs.at(i))));
    }
    const StepTimes at = time_decode(c, aliased, position, steps, threads);
    const StepTimes cbt = time_decode(c, copy_back, position, steps, threads);
    const std::vector<double>&a = at.wall, &cb = cbt.wall;
    // Attention reads positions 0..pos of every k and v cache (the middle timed step's pos).
    const int64_t read_positions = position + steps / 2 + 1;
    const int64_t bytes =
        weight_bytes + 2 * c.n_layers * c.n_kv_heads * c.head_dim() * 4 * read_positions;
    nlohmann::json row = {{"s_max", s},
                          {"aliased_ms", median(a)},
                          {"copy_back_ms", median(cb)},
                          {"bytes_read", bytes},
                          {"aliased_cpu_ms", median(at.cpu)},
                          {"copy_back_cpu_ms", median(cbt.cpu)},
                          {"aliased_steps_ms", a},
                          {"copy_back_steps_ms", cb}};
    double torch_ms = 0;
    if (torch != nullptr) {
      std::vector<double> t = torch["per_step_ms"][std::to_string(s)].get<std::vector<double>>();
      torch_ms = median(t);
      row["torch_ms"] = torch_ms;
      if (torch["per_step_cpu_ms"].contains(std::to_string(s)))
        row["torch_cpu_ms"] =
            median(torch["per_step_cpu_ms"][std::to_string(s)].get<std::vector<double>>());
      row["torch_steps_ms"] = t;
    }
    if (torch != nullptr) row["torch_ms_for_print"] = torch_ms;
    rows.push_back(row);
    std::printf("s_max %lld: aliased %.2f ms, copy-back %.2f ms\n", (long long)s, median(a),
                median(cb));
    std::fflush(stdout);
  }
  measure_bandwidths();
  std::printf(
      "read bandwidth %.1f GB/s with %d thread(s) (the floor's), %.1f GB/s with 1, %.1f GB/s "
      "with all %d cores (the better of before and after the steps)\n",
      bw / 1e9, threads, bw_one / 1e9, bw_all / 1e9, all_cores);
  std::printf("| s_max | PyTorch eager | copy-back engine | aliased engine | floor |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  for (nlohmann::json& row : rows) {
    const double floor_ms = row["bytes_read"].get<double>() / bw * 1e3;
    row["floor_ms"] = floor_ms;
    std::string t = "-";
    if (row.contains("torch_ms_for_print")) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.2f ms", row["torch_ms_for_print"].get<double>());
      t = buf;
      row.erase("torch_ms_for_print");
    }
    std::printf("| %lld | %s | %.2f ms | %.2f ms | %.2f ms |\n",
                static_cast<long long>(row["s_max"].get<int64_t>()), t.c_str(),
                row["copy_back_ms"].get<double>(), row["aliased_ms"].get<double>(), floor_ms);
  }
  nlohmann::json out = {{"model", llama_model_json(size, c, weight_bytes)},
                        {"dtype", dtype_name(c.weight_dtype)},
                        {"threads", threads},
                        {"position", position},
                        {"steps", steps},
                        {"read_bandwidth_gbs", bw / 1e9},
                        {"read_bandwidth_threads", threads},
                        {"read_bandwidth_1t_gbs", bw_one / 1e9},
                        {"read_bandwidth_all_cores_gbs", bw_all / 1e9},
                        {"all_cores", all_cores},
                        {"rows", rows}};
  if (torch != nullptr) {
    out["torch_version"] = torch["torch"];
    out["torch_logits_max_rel_diff"] = torch_diff;
    std::printf(
        "PyTorch's logits vs the engine's (token 1 at position 0): largest relative "
        "difference %.2g\n",
        torch_diff);
  }
  std::ofstream(out_path) << out.dump(1) << "\n";
  std::printf("wrote %s\n", out_path.c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}

}  // namespace inplace::cli
