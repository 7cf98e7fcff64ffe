// An engine compiled from a graph for one device (some passes skipped) and a context bound to
// inputs that every draw is copied into (their addresses stay, as a decoder's do): the GPU tests'
// way of running a fixture on fresh draws against the cpu engine or the engine without a rewrite.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "core/device_allocator.h"
#include "engine/execution_context.h"

namespace inplace::testing {

// An engine for `device` and a context bound to inputs that every draw is copied into.
class FixtureEngine {
 public:
  FixtureEngine(const Graph& g, const std::vector<Tensor>& example, Device device,
                std::vector<std::string> skipped = {}) {
    CompileOptions o;
    o.device = device;
    o.skip_passes = std::move(skipped);
    program_ = compile(g, example, o);
    ctx_ = std::make_unique<ExecutionContext>(program_.engine);
    for (size_t i = 0; i < example.size(); ++i) {
      inputs_.push_back(device.type == DeviceType::kCpu ? example[i].clone()
                                                        : example[i].to_device(device));
      ctx_->bind_input(static_cast<int>(i), inputs_.back());
    }
  }
  // The outputs, then every input after the call (the caches), on the host.
  std::vector<Tensor> call(const std::vector<Tensor>& draw) {
    for (size_t i = 0; i < draw.size(); ++i) {
      if (inputs_[i].device().type == DeviceType::kCpu) {
        inputs_[i].copy_from(draw[i]);
        continue;
      }
      const Tensor h = draw[i].contiguous();  // into the bound memory: its address stays
      device_allocator(inputs_[i].device())
          .copy_from_host(inputs_[i].data_ptr(), h.data_ptr(), h.nbytes());
    }
    std::vector<Tensor> out;
    for (const Tensor& t : ctx_->execute()) out.push_back(t.to_device(Device::cpu()));
    for (const Tensor& t : inputs_) out.push_back(t.to_device(Device::cpu()));
    return out;
  }
  std::string plan() const { return program_.engine->describe(); }
  ExecutionContext& context() { return *ctx_; }

 private:
  CompiledProgram program_;
  std::unique_ptr<ExecutionContext> ctx_;
  std::vector<Tensor> inputs_;
};

}  // namespace inplace::testing
