// inplace bench --device cuda [--size S] [--kv-heads H] [--s-max 4096,16384] [--position P]
//                             [--steps N] [--reps R] [--dtype f32|bf16] [--cuda-graph on|off]
//                             [--no-torch] [--python PATH] [--out bench.json]
// The decode step of the built-in model on a GPU, per s_max: the aliased and copy-back engines
// (each with a CUDA graph; the aliased one also without a graph), PyTorch eager and
// torch.compile(mode="reduce-overhead") on the same weights (bench/llama_torch_cuda.py), and
// the HBM floor: weight bytes plus the cache positions attention reads, over the bandwidth of a
// device-to-device copy measured in the same run. Times are means over N back-to-back steps
// with one synchronisation at the end (the best of R repetitions). Writes JSON and prints the
// markdown table of docs/performance.md.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "arg_parser.h"
#include "commands.h"
#include "core/device_allocator.h"
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

const Device kCuda = Device::cuda();

// Bytes per second of a device-to-device copy (read + write), the best of five passes over 1 GiB.
double device_copy_bandwidth() {
  const size_t n = size_t{1} << 30;
  Tensor a = Tensor::empty({static_cast<int64_t>(n)}, DType::kUInt8, kCuda);
  Tensor b = Tensor::empty({static_cast<int64_t>(n)}, DType::kUInt8, kCuda);
  const DeviceAllocator& d = device_allocator(kCuda);
  char sink = 0;
  double best = 1e30;
  for (int i = 0; i < 6; ++i) {
    d.copy_to_host(&sink, b.data_ptr(), 1);
    const int64_t t0 = now_ns();
    d.copy_on_device(b.data_ptr(), a.data_ptr(), n);
    d.copy_to_host(&sink, b.data_ptr(), 1);  // waits for the copy
    if (i > 0) best = std::min(best, ms_since(t0));
  }
  return 2.0 * static_cast<double>(n) / (best / 1e3);
}

Tensor int64_on_device(const std::vector<int64_t>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::kInt64, kCuda);
  device_allocator(kCuda).copy_from_host(t.data_ptr(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

struct GpuTimes {
  double best_ms = 0;
  std::vector<double> rep_ms;
  ContextStats stats;
};

// Mean per-step time of `steps` back-to-back decode steps at positions position.. (tokens and
// positions copied on the device, nothing read back), the best of `reps`, after 3 warm-up steps.
GpuTimes time_decode_gpu(const LlamaConfig& c, const models::LlamaEngines& e, int64_t position,
                         int64_t steps, int reps, bool graph) {
  std::vector<Tensor> caches = models::llama_new_caches(c, kCuda);
  const Tensor fill = Tensor::full(c.cache_shape(), Scalar(0.01), DType::kFloat32);
  for (const Tensor& t : caches)
    device_allocator(kCuda).copy_from_host(t.data_ptr(), fill.data_ptr(), fill.nbytes());
  models::LlamaEngineRunner runner(c, e, caches);
  runner.set_cuda_graph(graph);
  std::vector<int64_t> pos(static_cast<size_t>(steps + 3));
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = position + static_cast<int64_t>(i);
  const Tensor positions = int64_on_device(pos, {static_cast<int64_t>(pos.size())});
  const Tensor token = int64_on_device({1}, {1, 1});
  auto step = [&](int64_t i) { runner.decode_from(token, positions.slice(0, i, i + 1)); };
  for (int64_t i = 0; i < 3; ++i) step(i);
  runner.session().synchronize();
  GpuTimes t;
  t.best_ms = 1e30;
  for (int r = 0; r < reps; ++r) {
    const int64_t t0 = now_ns();
    for (int64_t i = 0; i < steps; ++i) step(i);
    runner.session().synchronize();
    t.rep_ms.push_back(ms_since(t0) / static_cast<double>(steps));
    t.best_ms = std::min(t.best_ms, t.rep_ms.back());
  }
  t.stats = runner.session().stats("decode");
  return t;
}

nlohmann::json run_torch_cuda(const std::string& python, const LlamaConfig& c,
                              const models::LlamaWeights& w, const std::vector<int64_t>& sizes,
                              int64_t position, int64_t steps, const fs::path& dir) {
  const fs::path script = bench_script("llama_torch_cuda.py");
  if (!fs::exists(script)) {
    std::fprintf(stderr, "bench: no PyTorch columns (%s missing)\n", script.c_str());
    return nullptr;
  }
  std::string cmd = python + " " + script.string() + " " + torch_model_args(c, w, dir) +
                    " --position " + std::to_string(position) + " --steps " +
                    std::to_string(steps) + " --s-max";
  for (int64_t s : sizes) cmd += " " + std::to_string(s);
  cmd += " > " + (dir / "torch.json").string();
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "bench: the PyTorch run failed (%s); no PyTorch columns\n", cmd.c_str());
    return nullptr;
  }
  std::ifstream in(dir / "torch.json");
  return nlohmann::json::parse(in);
}

double best_of(const nlohmann::json& j, const char* key, int64_t s) {
  if (j == nullptr || !j.contains(key) || !j[key].contains(std::to_string(s))) return 0;
  double best = 1e30;
  for (double v : j[key][std::to_string(s)].get<std::vector<double>>()) best = std::min(best, v);
  return best;
}

std::string ms(double v) {
  if (v <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f ms", v);
  return buf;
}

}  // namespace

int run_bench_gpu(const std::vector<std::string>& args) {
  std::string device = "cuda", size = "medium", kv_s = "4", s_max_s = "4096,16384",
              position_s = "200", steps_s = "64", reps_s = "5", dtype_s = "bf16", graph_s = "on",
              python = "python3", out_path = "bench-gpu.json";
  bool no_torch = false;
  ArgParser p("bench --device cuda",
              "Times decode steps of the built-in model on a GPU: aliased and copy-back engines\n"
              "with CUDA graphs, PyTorch eager and torch.compile(reduce-overhead), and the HBM\n"
              "floor. Writes JSON and prints the markdown table.");
  p.option("--device", "cuda", &device, "the GPU (cuda or cuda:N)");
  p.option("--size", "tiny|small|medium|large", &size, "model size (default medium)");
  p.option("--kv-heads", "H", &kv_s, "key/value heads (default 4: issue 11's benchmark model)");
  p.option("--s-max", "L,L,...", &s_max_s, "cache sizes (default 4096,16384)");
  p.option("--position", "P", &position_s, "decode position of the first timed step (default 200)");
  p.option("--steps", "N", &steps_s, "back-to-back steps per repetition (default 64)");
  p.option("--reps", "R", &reps_s, "repetitions, the best is reported (default 5)");
  p.option("--dtype", "f32|bf16", &dtype_s, "weight dtype (default bf16)");
  p.option("--cuda-graph", "on|off", &graph_s, "capture and replay the step (default on)");
  p.option("--python", "PATH", &python, "python with torch and a GPU (default python3)");
  p.flag("--no-torch", &no_torch, "skip the PyTorch columns");
  p.option("--out", "bench-gpu.json", &out_path, "where the JSON goes (default bench-gpu.json)");
  if (!p.parse(args)) return 0;
  if (graph_s != "on" && graph_s != "off") throw UsageError("--cuda-graph expects on or off");
  const bool graph = graph_s == "on";
  std::vector<int64_t> sizes;
  {
    std::stringstream ss(s_max_s);
    std::string item;
    while (std::getline(ss, item, ','))
      sizes.push_back(parse_int_option("--s-max", item, 2, 1 << 20));
  }
  const int64_t position = parse_int_option("--position", position_s, 0, 1 << 20);
  const int64_t steps = parse_int_option("--steps", steps_s, 1, 100000);
  const int reps = static_cast<int>(parse_int_option("--reps", reps_s, 1, 1000));
  int64_t largest = 0;
  for (int64_t s : sizes) {
    if (position + steps + 3 > s)
      throw UsageError("--position + --steps + 3 must fit every --s-max");
    largest = std::max(largest, s);
  }
  std::string why;
  IP_CHECK(device_available(Device::parse(device), &why), kUnsupported, "[bench] ", why);
  LlamaConfig c = models::llama_config(size, largest, 0, parse_weight_dtype(dtype_s));
  c.n_kv_heads = parse_int_option("--kv-heads", kv_s, 1, c.n_heads);
  IP_CHECK(c.n_heads % c.n_kv_heads == 0, kInvalidArgument, "[bench] --kv-heads must divide ",
           c.n_heads);
  const models::LlamaWeights w = models::llama_weights(c);
  const int64_t weight_bytes = c.weight_bytes();
  const double bw = device_copy_bandwidth();
  std::printf(
      "model %s: %lld layers, d_model %lld, %lld heads (%lld kv), ffn %lld, vocab %lld: %.1fM "
      "parameters, %.1f MB of %s weights; activations and caches float32\n"
      "device copy bandwidth (read + write) %.0f GB/s\n",
      size.c_str(), (long long)c.n_layers, (long long)c.d_model, (long long)c.n_heads,
      (long long)c.n_kv_heads, (long long)c.ffn, (long long)c.vocab,
      static_cast<double>(c.parameters()) / 1e6, static_cast<double>(weight_bytes) / 1e6,
      dtype_name(c.weight_dtype), bw / 1e9);
  std::fflush(stdout);

  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json out = {{"model", llama_model_json(size, c, weight_bytes)},
                        {"weight_dtype", dtype_name(c.weight_dtype)},
                        {"activation_dtype", "float32"},
                        {"cuda_graph", graph},
                        {"position", position},
                        {"steps", steps},
                        {"reps", reps},
                        {"copy_bandwidth_gbs", bw / 1e9}};
  for (int64_t s : sizes) {
    c.s_max = s;
    const models::LlamaEngines aliased = models::compile_llama(c, w, 0, true, kCuda);
    const models::LlamaEngines copy_back = models::compile_llama(c, w, 0, false, kCuda);
    const GpuTimes a = time_decode_gpu(c, aliased, position, steps, reps, graph);
    const GpuTimes a_direct = time_decode_gpu(c, aliased, position, steps, reps, false);
    const GpuTimes cb = time_decode_gpu(c, copy_back, position, steps, reps, graph);
    const int64_t read_positions = position + steps / 2 + 1;
    const int64_t bytes =
        weight_bytes + 2 * c.n_layers * c.n_kv_heads * c.head_dim() * 4 * read_positions;
    rows.push_back({{"s_max", s},
                    {"aliased_ms", a.best_ms},
                    {"aliased_no_graph_ms", a_direct.best_ms},
                    {"copy_back_ms", cb.best_ms},
                    {"floor_ms", static_cast<double>(bytes) / bw * 1e3},
                    {"bytes_read", bytes},
                    {"aliased_reps_ms", a.rep_ms},
                    {"copy_back_reps_ms", cb.rep_ms},
                    {"aliased_graph_captures", a.stats.counter("graph_captures")},
                    {"aliased_graph_replays", a.stats.counter("graph_replays")},
                    {"aliased_host_scalar_reads", a.stats.host_scalar_reads},
                    {"copy_back_graph_captures", cb.stats.counter("graph_captures")}});
    std::printf(
        "s_max %lld: aliased %.3f ms (no graph %.3f), "
        "copy-back %.3f ms, floor %.3f ms; aliased graph: %lld capture(s), %lld replays, %lld "
        "host scalar reads\n",
        (long long)s, a.best_ms, a_direct.best_ms, cb.best_ms,
        static_cast<double>(bytes) / bw * 1e3, (long long)a.stats.counter("graph_captures"),
        (long long)a.stats.counter("graph_replays"), (long long)a.stats.host_scalar_reads);
    std::fflush(stdout);
    out["rows"] = rows;
    std::ofstream(out_path) << out.dump(1) << "\n";  // kept as it grows
  }
  nlohmann::json torch = nullptr;
  if (!no_torch) {
    const fs::path dir = fs::temp_directory_path() / ("inplace-bench-" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::printf("running PyTorch (eager, torch.compile reduce-overhead) on the same weights ...\n");
    std::fflush(stdout);
    torch = run_torch_cuda(python, c, w, sizes, position, steps, dir);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::printf(
      "\n| s_max | PyTorch eager | torch.compile (reduce-overhead) | copy-back + graph | "
      "aliased + graph | aliased, no graph | HBM floor |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  for (auto& row : rows) {
    const int64_t s = row["s_max"].get<int64_t>();
    const double te = best_of(torch, "eager_ms", s), tc = best_of(torch, "compiled_ms", s);
    if (te > 0) row["torch_eager_ms"] = te;
    if (tc > 0) row["torch_compile_ms"] = tc;
    std::printf("| %lld | %s | %s | %s | %s | %s | %s |\n", (long long)s, ms(te).c_str(),
                ms(tc).c_str(), ms(row["copy_back_ms"].get<double>()).c_str(),
                ms(row["aliased_ms"].get<double>()).c_str(),
                ms(row["aliased_no_graph_ms"].get<double>()).c_str(),
                ms(row["floor_ms"].get<double>()).c_str());
  }
  out["rows"] = rows;
  if (torch != nullptr) {
    out["torch"] = torch;
  }
  std::ofstream(out_path) << out.dump(1) << "\n";
  std::printf("wrote %s\n", out_path.c_str());
  return 0;
}

}  // namespace inplace::cli
