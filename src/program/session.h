// Session: one conversation over a program. It owns the runtime-owned state (allocated on the
// program's device and initialized from the stored initial values when it is created; the
// addresses never move, across calls and reset()) and one execution context per method, with
// that state bound once (so a GPU backend's recorded work, a CUDA graph, stays valid). Sessions
// never see each other's state and may run calls on different threads, and on different queues
// (streams), at the same time; one session serves one call at a time (a concurrent call,
// reset() included, is refused). After a failed call that partly wrote runtime-owned state,
// the session refuses every call until reset().
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/context_options.h"
#include "engine/execution_context.h"
#include "program/program.h"

namespace inplace {

struct GenerateOptions;
struct GenerateResult;

class Session {
 public:
  explicit Session(std::shared_ptr<const Program> program);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Program& program() const { return *program_; }

  // Runs `method`. `inputs` holds, by name, every plain input of the method and every
  // caller-owned state it uses (updated in place: same storage, same address), except those
  // bound once (bind_state, bind_input); unknown or missing names are errors listing the
  // method's inputs. Returns the method's outputs.
  // `queue` is the backend's ordered queue of device work for this call (a cudaStream_t; null:
  // the default; the cpu ignores it): the call is enqueued there without waiting for the device,
  // after the session's previous call whatever queue that was on. On a device, a plain input may
  // be a host tensor: it is copied into session memory on the queue (the same address at every
  // call, so the method's recorded work replays); state is always on the program's device. An
  // output is the context's own memory until the method's next call in this session (or a view
  // of the session's state, or the caller's tensor when it aliases one).
  std::vector<Tensor> run(const std::string& method, const std::map<std::string, Tensor>& inputs,
                          void* queue = nullptr);
  // The prompt through `prefill`, then `decode` per new token, sampled on the host, with no
  // caller code in the loop (generate.h; the methods' convention: docs/programs.md).
  GenerateResult generate(const std::vector<int64_t>& prompt, const GenerateOptions& options);
  // Binds caller-owned state `name` to `t` (the caller's tensor, updated in place, never
  // copied) for every method that uses it, once: later calls need not pass it, and no call
  // rebinds it, so a failed call that partly wrote it refuses the next calls until it is bound
  // again or reset(). Shape, dtype and device are checked here (ExecutionContext::bind_input).
  void bind_state(const std::string& name, const Tensor& t);
  // The caller wrote into the tensor bound as caller-owned state `name` in place: what the
  // methods prepare from it (a weight's transposed copy, ExecutionContext::input_written) is
  // made again before their next calls.
  void state_written(const std::string& name);
  // Binds plain input `input` of `method` to `t` once, as given (on the program's device: no
  // staging): a caller that writes the value into `t` between calls (a decode loop's token and
  // position) passes nothing per call. Passing a bound name to run() binds that tensor instead
  // from then on.
  void bind_input(const std::string& method, const std::string& input, const Tensor& t);
  // Kernels of every method share one pool of `threads` threads (ExecutionContext::set_threads;
  // the caller's thread included); 1 runs them on the calling thread. Also the `threads`
  // option of set_backend_options.
  void set_threads(int threads);
  int threads() const;
  // Restores every runtime-owned state to its initial value (in place: addresses are kept, so
  // recorded work stays valid) and makes a session refused after a failed call usable again.
  // On a device it waits for the session's calls, copies the initial values on `queue` (after
  // the work already there) and waits for the copies: the next call, on any queue, sees them.
  // An error the device flagged for an earlier call is dropped (that call's writes are undone).
  void reset(void* queue = nullptr);
  // The session's runtime-owned state `name`: the live tensor on the program's device, never a
  // copy (reads see every later call; the address never changes).
  Tensor state(const std::string& name) const;
  // Waits until the work of every call is done on the device, then reports an error its
  // kernels flagged (ExecutionContext::synchronize). Returns at once on the cpu.
  void synchronize();
  // An option of the program's backend (ExecutionContext::set_backend_option) for every
  // method's context: `cuda_graph=off`.
  void set_backend_option(const std::string& key, const std::string& value);
  // The execution context of `method`: its stats() (calls, graph_captures, graph_replays).
  const ExecutionContext& context(const std::string& method) const;
  // Backend options for every method's context (engine/context_options.h); returns the keys
  // no method's backend takes.
  std::vector<std::string> set_backend_options(const BackendOptions& options);
  // What method `method`'s context counts (ExecutionContext::stats).
  ContextStats stats(const std::string& method) const;
  // Non-empty while a failed call's partial write keeps the session refused: what to reset.
  const std::string& refused_reason() const { return refused_; }

 private:
  // `t` for plain input `input` of method `mi`: as given, or a host tensor copied into the
  // session's device memory for it on `queue`.
  Tensor staged(int mi, int input, const Tensor& t, void* queue);
  // set_threads without the in-flight guard (set_backend_options holds it).
  void share_threads(int threads);

  std::shared_ptr<const Program> program_;
  const Backend& backend_;
  std::vector<Tensor> state_;  // by state entry; undefined for caller-owned entries
  std::vector<std::unique_ptr<ExecutionContext>> contexts_;  // by method
  std::vector<std::map<int, Tensor>> input_memory_;  // by method, input: host inputs' device copy
  std::vector<std::vector<char>> bound_;  // by method, input: bound once (bind_state, bind_input)
  void* last_queue_ = nullptr;            // the queue of the last call
  bool ran_ = false;                      // a call was enqueued since creation
  std::atomic<bool> in_flight_{false};
  std::string refused_;
};

}  // namespace inplace
