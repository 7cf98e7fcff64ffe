// inplace bench [--size S] [--s-max 256,1024,4096,8192] [--position P] [--steps N] [--reps R]
//               [--threads T] [--dtype f32|bf16] [--no-torch] [--python PATH] [--out bench.json]
// Per-step decode time of the built-in model at several cache sizes, in one run: the aliased
// engine, the copy-back engine, PyTorch eager on the same weights (when the python has torch),
// and the floor: the bytes a step must read (weights + the cache positions attention reads) over
// the read bandwidth this machine reaches with the run's thread count, measured in the same run.
// Each size is timed in R repetitions, each of them PyTorch's N steps next to each engine's N
// steps (PyTorch runs as a worker process that loads the weights once and times steps on
// request), so that a busy moment of a shared machine falls on both sides alike; a column is the
// median of the repetitions' medians.
// Writes JSON; bench/bench_table.py turns it into the markdown table of docs/performance.md and a
// PNG plot.
#include <sched.h>
#include <sys/wait.h>
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

std::vector<int64_t> parse_list(const std::string& option, const std::string& value,
                                int64_t lo = 2) {
  std::vector<int64_t> out;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_int_option(option, item, lo, 1 << 20));
  if (out.empty()) throw UsageError(option + " expects a comma-separated list of integers");
  return out;
}

// Per-step wall time, and CPU time (ours: the calling thread's, with one thread the step's own
// work, which a busy machine does not inflate the way it inflates wall time; PyTorch's: its
// process's).
struct StepTimes {
  std::vector<double> wall, cpu;
};

// One engine's decode steps on its own caches (filled with a constant so every page is really
// read), made once per size and timed in each repetition.
class DecodeTimer {
 public:
  DecodeTimer(const LlamaConfig& c, const models::LlamaEngines& e, int threads)
      : caches_(fill(models::llama_new_caches(c))), runner_(c, e, caches_, threads) {}

  // Per-step milliseconds of `steps` calls at positions position.. after `warmup` untimed ones.
  StepTimes time(int64_t position, int64_t steps, int64_t warmup) {
    StepTimes t;
    int64_t token = 1;
    for (int64_t i = 0; i < warmup + steps; ++i) {
      const int64_t t0 = now_ns(), c0 = thread_cpu_ns();
      Tensor logits = runner_.decode(token, position + i);
      const double dt = ms_since(t0), dc = static_cast<double>(thread_cpu_ns() - c0) / 1e6;
      token = models::argmax_token(logits);
      if (i >= warmup) {
        t.wall.push_back(dt);
        t.cpu.push_back(dc);
      }
    }
    return t;
  }

 private:
  static std::vector<Tensor> fill(std::vector<Tensor> caches) {
    for (const Tensor& t : caches) t.fill(Scalar(0.01));
    return caches;
  }
  std::vector<Tensor> caches_;
  models::LlamaEngineRunner runner_;
};

// The PyTorch twin as a worker process (bench/llama_torch.py --serve): started once, it loads the
// weights and then times steps on request, one JSON line per request.
class TorchWorker {
 public:
  // Null (with the reason on stderr) when the python, the script or torch is missing.
  static std::unique_ptr<TorchWorker> start(const std::string& python, const LlamaConfig& c,
                                            const models::LlamaWeights& w,
                                            const std::vector<int64_t>& s_max, int64_t position,
                                            int threads, const fs::path& dir) {
    const fs::path script = bench_script("llama_torch.py");
    if (!fs::exists(python) || !fs::exists(script)) {
      std::fprintf(stderr, "bench: no PyTorch column (%s or %s missing)\n", python.c_str(),
                   script.c_str());
      return nullptr;
    }
    std::string cmd = "exec " + python + " " + script.string() + " --serve " +
                      torch_model_args(c, w, dir) + " --position " + std::to_string(position) +
                      " --threads " + std::to_string(threads) + " --logits-out " +
                      (dir / "torch_logits.safetensors").string() + " --s-max";
    for (int64_t s : s_max) cmd += " " + std::to_string(s);
    int to_child[2], from_child[2];
    IP_CHECK(pipe(to_child) == 0 && pipe(from_child) == 0, kInternal, "[bench] pipe failed");
    std::fflush(stdout);
    const pid_t pid = fork();
    IP_CHECK(pid >= 0, kInternal, "[bench] fork failed");
    if (pid == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) close(fd);
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    std::unique_ptr<TorchWorker> t(
        new TorchWorker(pid, fdopen(to_child[1], "w"), fdopen(from_child[0], "r")));
    const nlohmann::json ready = t->read_line();
    if (ready.is_null() || !ready.value("ready", false)) {
      std::fprintf(stderr, "bench: the PyTorch worker did not start (%s); no PyTorch column\n",
                   cmd.c_str());
      return nullptr;
    }
    t->version_ = ready.value("torch", "");
    t->process_threads_ = ready.value("process_threads", -1);
    return t;
  }

  ~TorchWorker() {
    std::fclose(to_);  // end of input: the worker returns
    std::fclose(from_);
    int status = 0;
    waitpid(pid_, &status, 0);
  }

  // Per-step wall and CPU milliseconds of `steps` steps at s_max after `warmup` untimed ones.
  StepTimes time(int64_t s_max, int64_t steps, int64_t warmup) {
    std::fprintf(to_, "%lld %lld %lld\n", (long long)s_max, (long long)steps, (long long)warmup);
    std::fflush(to_);
    const nlohmann::json r = read_line();
    IP_CHECK(!r.is_null() && r.value("s_max", int64_t{-1}) == s_max, kInternal,
             "[bench] the PyTorch worker gave no answer for s_max ", s_max);
    return {r["per_step_ms"].get<std::vector<double>>(),
            r["per_step_cpu_ms"].get<std::vector<double>>()};
  }

  const std::string& version() const { return version_; }
  // The threads of the worker process once it has run a step (-1 where /proc cannot tell).
  int process_threads() const { return process_threads_; }

 private:
  TorchWorker(pid_t pid, FILE* to, FILE* from) : pid_(pid), to_(to), from_(from) {}

  nlohmann::json read_line() {
    char* line = nullptr;
    size_t cap = 0;
    const ssize_t n = getline(&line, &cap, from_);
    nlohmann::json j = nullptr;
    if (n > 0) j = nlohmann::json::parse(std::string(line, static_cast<size_t>(n)), nullptr, false);
    std::free(line);
    return j.is_discarded() ? nlohmann::json(nullptr) : j;
  }

  pid_t pid_;
  FILE* to_;
  FILE* from_;
  std::string version_;
  int process_threads_ = -1;
};

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
              reps_s = "5", cpus_s, threads_s = "1", dtype_s = "f32", python = "/usr/bin/python3",
              out_path = "bench.json";
  bool no_torch = false;
  ArgParser p("bench",
              "Times decode steps of the built-in Llama-style model at several cache sizes:\n"
              "aliased and copy-back engines, PyTorch eager on the same weights, and the floor\n"
              "(bytes read per step over the measured read bandwidth). Writes JSON.");
  p.option("--size", "tiny|small|medium|large", &size, "model size (default small)");
  p.option("--s-max", "L,L,...", &s_max_s, "cache sizes (default 256,1024,4096,8192)");
  p.option("--position", "P", &position_s, "decode position of the first timed step (default 200)");
  p.option("--steps", "N", &steps_s, "timed steps per engine, size and repetition (default 16)");
  p.option("--reps", "R", &reps_s,
           "repetitions per size, PyTorch's and the engines' interleaved (default 5)");
  p.option("--dtype", "f32|bf16", &dtype_s,
           "weight dtype (default f32; bf16 halves the bytes read, compute stays f32)");
  p.option("--threads", "T", &threads_s, "threads for the engines and PyTorch (default 1)");
  p.option("--cpus", "C,C,...|all", &cpus_s,
           "CPUs the timed steps run on, the engines' and PyTorch's alike (default: the first "
           "T the process may use)");
  p.option("--python", "PATH", &python, "python with torch (default /usr/bin/python3)");
  p.flag("--no-torch", &no_torch, "skip the PyTorch column");
  p.option("--out", "bench.json", &out_path, "where the JSON goes (default bench.json)");
  if (!p.parse(args)) return 0;
  single_threaded_blas();
  const std::vector<int64_t> sizes = parse_list("--s-max", s_max_s);
  const int64_t position = parse_int_option("--position", position_s, 0, 1 << 20);
  const int64_t steps = parse_int_option("--steps", steps_s, 1, 100000);
  const int64_t reps = parse_int_option("--reps", reps_s, 1, 1000);
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
  // The CPUs the timed steps run on, the engines' and PyTorch's alike (its worker inherits them):
  // on the development VM one vCPU at times runs every decode step 1.3-1.5x slower than the
  // other (the engines' and PyTorch's alike, for minutes, then the other way round or neither),
  // and left to the scheduler the two sides landed on different ones. The one-thread bandwidth
  // of the floor is measured on them too.
  cpu_set_t every_cpu, timed_cpus;
  CPU_ZERO(&every_cpu);
  CPU_ZERO(&timed_cpus);
  IP_CHECK(sched_getaffinity(0, sizeof(every_cpu), &every_cpu) == 0, kInternal,
           "[bench] sched_getaffinity failed");
  std::string cpu_list;
  if (cpus_s == "all") {
    timed_cpus = every_cpu;
    cpu_list = "all";
  } else if (cpus_s.empty()) {  // the first T CPUs this process may use
    for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < threads; ++cpu)
      if (CPU_ISSET(cpu, &every_cpu)) {
        CPU_SET(cpu, &timed_cpus);
        cpu_list += (taken++ ? "," : "") + std::to_string(cpu);
      }
  } else {
    for (int64_t cpu : parse_list("--cpus", cpus_s, 0)) {
      IP_CHECK(cpu < CPU_SETSIZE && CPU_ISSET(cpu, &every_cpu), kInvalidArgument,
               "[bench] --cpus names CPU ", cpu, ", which this process may not use");
      CPU_SET(static_cast<int>(cpu), &timed_cpus);
      cpu_list += (cpu_list.empty() ? "" : ",") + std::to_string(cpu);
    }
  }
  auto run_on = [](const cpu_set_t& set) {
    IP_CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, kInternal,
             "[bench] sched_setaffinity failed");
  };
  double bw_one = 0, bw_all = 0, bw = 0;
  auto measure_bandwidths = [&] {
    run_on(timed_cpus);
    bw_one = std::max(bw_one, measure_read_bandwidth(bw_bytes, 1));
    if (threads > 1 && threads < all_cores)
      bw = std::max(bw, measure_read_bandwidth(bw_bytes, threads));
    run_on(every_cpu);
    bw_all =
        std::max(bw_all, all_cores == 1 ? bw_one : measure_read_bandwidth(bw_bytes, all_cores));
    if (threads == 1) bw = std::max(bw, bw_one);
    if (threads >= all_cores) bw = std::max(bw, bw_all);
    run_on(timed_cpus);  // the steps that follow
  };
  measure_bandwidths();
  std::printf("model %s (%.1fM parameters, %.1f MB %s)\n", size.c_str(),
              static_cast<double>(c.parameters()) / 1e6, static_cast<double>(weight_bytes) / 1e6,
              dtype_name(c.weight_dtype));

  std::unique_ptr<TorchWorker> torch;
  double torch_diff = -1;
  const fs::path dir = fs::temp_directory_path() / ("inplace-bench-" + std::to_string(getpid()));
  if (!no_torch) {
    fs::create_directories(dir);
    std::printf("starting PyTorch eager on the same weights ...\n");
    std::fflush(stdout);
    torch = TorchWorker::start(python, c, w, sizes, position, threads, dir);
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
    // Repetitions: PyTorch's steps next to each engine's, the order turned every repetition so
    // that neither side always follows the other.
    StepTimes at, cbt, tt;  // every timed step, all repetitions
    std::vector<double> a_rep, cb_rep, t_rep, a_cpu_rep, cb_cpu_rep, t_cpu_rep, ratio_rep;
    auto keep = [](StepTimes& all, const StepTimes& one, std::vector<double>& wall_rep,
                   std::vector<double>& cpu_rep) {
      all.wall.insert(all.wall.end(), one.wall.begin(), one.wall.end());
      all.cpu.insert(all.cpu.end(), one.cpu.begin(), one.cpu.end());
      wall_rep.push_back(median(one.wall));
      cpu_rep.push_back(median(one.cpu));
    };
    DecodeTimer aliased_timer(c, aliased, threads), copy_back_timer(c, copy_back, threads);
    for (int64_t rep = 0; rep < reps; ++rep) {
      // Two warm-up steps per side and repetition: the other side has just run.
      auto run_torch = [&] {
        if (torch != nullptr) keep(tt, torch->time(s, steps, 2), t_rep, t_cpu_rep);
      };
      if (rep % 2 == 0) run_torch();
      keep(at, aliased_timer.time(position, steps, 2), a_rep, a_cpu_rep);
      keep(cbt, copy_back_timer.time(position, steps, 2), cb_rep, cb_cpu_rep);
      if (rep % 2 == 1) run_torch();
      if (torch != nullptr) ratio_rep.push_back(t_rep.back() / a_rep.back());
      std::printf("s_max %lld, repetition %lld/%lld: aliased %.2f ms, copy-back %.2f ms",
                  (long long)s, (long long)rep + 1, (long long)reps, a_rep.back(), cb_rep.back());
      if (torch != nullptr)
        std::printf(", PyTorch %.2f ms (%.2fx aliased)", t_rep.back(), ratio_rep.back());
      std::printf("\n");
      std::fflush(stdout);
    }
    // Attention reads positions 0..pos of every k and v cache (the middle timed step's pos).
    const int64_t read_positions = position + steps / 2 + 1;
    const int64_t bytes =
        weight_bytes + 2 * c.n_layers * c.n_kv_heads * c.head_dim() * 4 * read_positions;
    nlohmann::json row = {{"s_max", s},
                          {"aliased_ms", median(a_rep)},
                          {"copy_back_ms", median(cb_rep)},
                          {"bytes_read", bytes},
                          {"aliased_cpu_ms", median(a_cpu_rep)},
                          {"copy_back_cpu_ms", median(cb_cpu_rep)},
                          {"aliased_rep_ms", a_rep},
                          {"copy_back_rep_ms", cb_rep},
                          {"aliased_steps_ms", at.wall},
                          {"copy_back_steps_ms", cbt.wall}};
    if (torch != nullptr) {
      row["torch_ms"] = median(t_rep);
      row["torch_cpu_ms"] = median(t_cpu_rep);
      row["torch_rep_ms"] = t_rep;
      row["torch_steps_ms"] = tt.wall;
      // PyTorch over aliased within each repetition (the two measured minutes apart at most).
      row["torch_over_aliased_rep"] = ratio_rep;
      row["torch_over_aliased_median"] = median(ratio_rep);
      row["torch_over_aliased_min"] = *std::min_element(ratio_rep.begin(), ratio_rep.end());
    }
    rows.push_back(row);
    std::printf("s_max %lld: aliased %.2f ms, copy-back %.2f ms (medians of %lld repetitions)\n",
                (long long)s, median(a_rep), median(cb_rep), (long long)reps);
    std::fflush(stdout);
  }
  measure_bandwidths();
  std::printf(
      "read bandwidth %.1f GB/s with %d thread(s) (the floor's), %.1f GB/s with 1, %.1f GB/s "
      "with all %d cores (the better of before and after the steps); steps timed on CPU(s) %s\n",
      bw / 1e9, threads, bw_one / 1e9, bw_all / 1e9, all_cores, cpu_list.c_str());
  std::printf(
      "| s_max | PyTorch eager | copy-back engine | aliased engine | floor | aliased / floor | "
      "PyTorch / aliased (median, lowest of the repetitions) |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  for (nlohmann::json& row : rows) {
    const double floor_ms = row["bytes_read"].get<double>() / bw * 1e3;
    row["floor_ms"] = floor_ms;
    std::string t = "-", ratio = "-";
    if (row.contains("torch_ms")) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.2f ms", row["torch_ms"].get<double>());
      t = buf;
      std::snprintf(buf, sizeof(buf), "%.2fx, %.2fx",
                    row["torch_over_aliased_median"].get<double>(),
                    row["torch_over_aliased_min"].get<double>());
      ratio = buf;
    }
    std::printf("| %lld | %s | %.2f ms | %.2f ms | %.2f ms | %.2fx | %s |\n",
                static_cast<long long>(row["s_max"].get<int64_t>()), t.c_str(),
                row["copy_back_ms"].get<double>(), row["aliased_ms"].get<double>(), floor_ms,
                row["aliased_ms"].get<double>() / floor_ms, ratio.c_str());
  }
  nlohmann::json out = {{"model", llama_model_json(size, c, weight_bytes)},
                        {"dtype", dtype_name(c.weight_dtype)},
                        {"threads", threads},
                        {"position", position},
                        {"steps", steps},
                        {"reps", reps},
                        {"read_bandwidth_gbs", bw / 1e9},
                        {"read_bandwidth_threads", threads},
                        {"read_bandwidth_1t_gbs", bw_one / 1e9},
                        {"read_bandwidth_all_cores_gbs", bw_all / 1e9},
                        {"all_cores", all_cores},
                        {"cpus", cpu_list},
                        {"rows", rows}};
  if (torch != nullptr) {
    out["torch_version"] = torch->version();
    out["torch_process_threads"] = torch->process_threads();
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
