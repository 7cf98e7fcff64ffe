// The CUDA backend's Executable: what a context on a GPU holds beyond its memory and does
// beyond running kernels in order (docs/cuda.md): a private stream that graphs are captured on,
// the captured graph and what it was captured for, runtime scalars evaluated on the device, the
// steps that share a launch, the context's scratch, and the device error flag with its pinned
// host copy. Released with the context.
#pragma once
#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "kernels/cuda/call_data.h"
#include "kernels/cuda/device_runtime.h"
#include "kernels/cuda/device_scalars.h"
#include "kernels/cuda/launch_groups.h"

namespace inplace::cuda {

class CudaExecutable final : public Executable {
 public:
  explicit CudaExecutable(const PreparedSteps& steps);
  ~CudaExecutable() override;
  CudaExecutable(const CudaExecutable&) = delete;
  CudaExecutable& operator=(const CudaExecutable&) = delete;

  void begin_call(void* queue) override;
  void run(const RunCall& call, CallObserver& observer) override;
  void check_errors(bool wait) override;
  Tensor copy(const Tensor& t) override;
  bool evaluates_scalars() const override { return scalars_.on_device; }
  const std::map<int, int64_t>& fixed_scalars() const override { return fixed_scalars_; }
  bool host_reads_inputs() const override { return false; }
  size_t stable_input_bytes() const override;
  void set_option(const std::string& key, const std::string& value) override;
  std::map<std::string, int64_t> counters() const override;

 private:
  const Plan& plan() const { return *steps_.plan; }
  // The call's work on `stream`: scalars, every step, the error flag's copy to the host.
  void enqueue(void* stream, CallObserver& observer);
  void run_steps(void* stream, CallObserver& observer);
  void run_pair(size_t q, void* stream, CallObserver& observer);
  // Step q's batch (launch groups): q and its later members in one launch.
  void run_batch(size_t q, void* stream, CallObserver& observer);
  bool run_with_writes(size_t q, void* stream, CallObserver& observer);
  // Step q joined to the launch of the product q + 1 and its writes (launch_groups.h).
  bool run_with_prologue(size_t q, void* stream, CallObserver& observer);
  KernelContext step_context(size_t q, void* stream) const;
  // Step q's operands, results and context; the calls of step q's epilogue writes (launch groups).
  StepCall step_call(size_t q, void* stream) const;
  std::array<StepCall, kMaxEpilogueWrites> write_calls(size_t q, void* stream) const;
  std::vector<int64_t> graph_key(const RunCall& call) const;
  // Whether graph_key(call) would equal `key` (nothing allocated).
  bool same_key(const RunCall& call, const std::vector<int64_t>& key) const;
  void upload_scalar_inputs(const RunCall& call, void* stream);

  PreparedSteps steps_;
  const DeviceRuntime& runtime_;
  Workspace workspace_;
  std::shared_ptr<Storage> error_;   // int32[4] on the device
  int32_t* error_host_ = nullptr;    // pinned copy, written at the end of every call
  std::vector<CallData> call_data_;  // by step: KernelContext::backend
  DeviceScalarPlan scalars_;
  std::map<int, int64_t> fixed_scalars_;            // the host's value of each prefix end
  std::shared_ptr<Storage> code_, slots_, inputs_;  // device memory when scalars_.on_device
  LaunchGroups launches_;
  std::vector<char> done_in_group_;  // by step, this call: ran in an earlier step's launch
  bool cuda_graph_ = true;           // the backend option cuda_graph (on by default)
  void* capture_stream_ = nullptr;
  void* graph_ = nullptr;
  std::vector<int64_t> graph_key_;         // bound addresses (and host values) the graph replays
  std::vector<Tensor> graph_temporaries_;  // device temporaries the graph's kernels use
  void* done_ = nullptr;                   // recorded after each call's work on its stream
  bool recorded_ = false;
  void* last_stream_ = nullptr;    // the stream of the last call
  std::vector<int64_t> last_key_;  // the key of the last call that ran directly
  bool warm_ = false;  // a call ran directly (handles and scratch made) before any capture
  int64_t graph_captures_ = 0, graph_replays_ = 0, joined_steps_ = 0;
  int64_t host_steps_ = 0;  // steps that run on the host (Step::on_host): no graph then
};

}  // namespace inplace::cuda
