// What a context on a GPU holds beyond its memory: the runtime (backend/device_runtime.h), a
// private stream that graphs are captured on, the captured graph and what it was captured for,
// the device error flag and its pinned host copy, the event of the last call, and the slots of
// runtime scalars evaluated on the device. Released with the context.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/device_runtime.h"
#include "backend/kernel_table.h"
#include "core/error.h"
#include "core/storage.h"
#include "engine/device_scalars.h"
#include "engine/launch_groups.h"

namespace inplace {

// What a context counts (ExecutionContext::stats()).
struct ContextStats {
  int64_t calls = 0;
  int64_t graph_captures = 0;     // graphs captured (the first, and each after a binding moved)
  int64_t graph_replays = 0;      // calls that launched an already captured graph
  int64_t host_scalar_reads = 0;  // runtime scalars read on the host from device memory
  // Steps of the last enqueued call (run, or captured into a graph) that ran inside another
  // step's launch: a pair's second step, a product's epilogue writes.
  int64_t joined_steps = 0;
};

// A context's device scratch (backend/kernel_table.h, Workspace).
class DeviceWorkspace final : public Workspace {
 public:
  Device device;
  void* get(int slot, size_t bytes) override {
    IP_CHECK(slot >= 0 && slot < kSlots, kInternal, "[context] workspace slot ", slot,
             " out of range");
    std::shared_ptr<Storage>& m = memory_[slot];
    if (!m) m = Storage::allocate(bytes, device);
    IP_CHECK(bytes <= m->nbytes(), kInternal, "[context] a kernel asked for ", bytes,
             " bytes of workspace slot ", slot, " after ", m->nbytes(), " (its address is fixed)");
    return m->data();
  }

 private:
  std::array<std::shared_ptr<Storage>, kSlots> memory_;
};

struct DeviceState {
  const DeviceRuntime* runtime = nullptr;
  void* capture_stream = nullptr;
  void* graph = nullptr;
  std::vector<int64_t> graph_key;         // bound addresses (and host scalar values) it replays
  std::vector<Tensor> graph_temporaries;  // device temporaries the graph's kernels use
  void* done = nullptr;                   // recorded after each call's work on the caller's stream
  bool recorded = false;
  void* last_stream = nullptr;  // the stream of the last call
  bool warm = false;  // one call ran directly (handles and scratch made) before any capture
  std::shared_ptr<Storage> error;  // int32[4] on the device
  DeviceWorkspace workspace;       // KernelContext::workspace
  int32_t* error_host = nullptr;   // pinned copy, written at the end of every call
  DeviceScalarPlan scalars;
  std::shared_ptr<Storage> code, slots, inputs;  // device memory when scalars.on_device
  bool inputs_dirty = true;                      // bindings changed since the inputs upload
  bool refreshed = false;  // the refresh ran (once, when scalars are on the device)
  LaunchGroups launches;   // steps that share a launch (engine/launch_groups.h)

  DeviceState() = default;
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;
  ~DeviceState() {
    if (!runtime) return;
    runtime->destroy_graph(graph);
    graph_temporaries.clear();
    runtime->destroy_stream(capture_stream);
    runtime->destroy_event(done);
    runtime->release_host(error_host);
  }
};

}  // namespace inplace
