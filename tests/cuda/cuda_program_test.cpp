// Programs on the GPU (GPU suite): a program with prefill and decode sharing a key cache,
// compiled for cuda, equals the same program on the cpu on random inputs (positions across
// the cache, inputs from the host and from the device) with one copy of the weights on the
// device; and 8 sessions interleaved over 4 queues give exactly what 8 separate runs give,
// graphs on and off, each session's state at the same device address across calls and
// reset(queue); generate greedy and sampled (the device's top-k selection) gives the tokens of
// the host's paths, and NaN logits the same error. Skipped without a GPU.
#include <cmath>

#include "backend/backend.h"
#include "cuda_test_util.h"
#include "program/generate_test_util.h"
#include "program/program_test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

const char* kStateNames[] = {"layers.0.k_cache", "layers.0.count"};

std::shared_ptr<const Program> cuda_decoder(const DecoderGraphs& g) {
  ProgramOptions o;
  o.device = Device::cuda();
  return decoder_program(g, false, o);
}

std::vector<Tensor> on_host(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.to_device(Device::cpu()));
  return out;
}

std::map<std::string, void*> state_addresses(const Session& s) {
  std::map<std::string, void*> out;
  for (const char* n : kStateNames) out[n] = s.state(n).data_ptr();
  return out;
}

TEST(CudaProgram, PrefillAndDecodeSharingACacheEqualTheCpuProgram) {
  IP_REQUIRE_CUDA();
  DecoderGraphs g = decoder_graphs(false);
  auto cpu = decoder_program(g, false);
  auto gpu = cuda_decoder(g);
  ASSERT_EQ(gpu->device(), Device::cuda());
  // One copy of each weight on the device, read by every method.
  const Engine& prefill = *gpu->method("prefill").engine;
  const Engine& decode = *gpu->method("decode").engine;
  int shared = 0;
  for (size_t k = 0; k < prefill.plan().constants.size(); ++k)
    for (size_t j = 0; j < decode.plan().constants.size(); ++j)
      if (prefill.plan().constant_names[k] == decode.plan().constant_names[j]) {
        EXPECT_TRUE(prefill.device_constants()[k].same_storage(decode.device_constants()[j]))
            << prefill.plan().constant_names[k];
        EXPECT_EQ(prefill.device_constants()[k].device(), Device::cuda());
        ++shared;
      }
  EXPECT_GT(shared, 0);
  for (int64_t prompt : {int64_t{1}, int64_t{5}, kSlots - 3}) {
    // Decode steps up to the last position of the cache.
    const std::vector<Call> calls = conversation(prompt, kSlots - prompt, 300 + prompt);
    auto want = cpu->new_session();
    auto got = gpu->new_session();
    EXPECT_EQ(got->state("layers.0.k_cache").device(), Device::cuda());
    for (size_t k = 0; k < calls.size(); ++k) {
      // Inputs from the host (copied into session memory) and from the device, alternately.
      std::map<std::string, Tensor> in = calls[k].inputs;
      if (k % 2)
        for (auto& [name, t] : in) t = t.to_device(Device::cuda());
      const std::vector<Tensor> g_out = on_host(got->run(calls[k].method, in));
      const std::vector<Tensor> c_out = want->run(calls[k].method, calls[k].inputs);
      ASSERT_EQ(g_out.size(), c_out.size());
      for (size_t j = 0; j < c_out.size(); ++j)
        EXPECT_TRUE(close(g_out[j], c_out[j], 1e-5))
            << "prompt " << prompt << ", call " << k << " (" << calls[k].method << "), output "
            << j;
    }
    got->synchronize();
    for (const char* n : kStateNames)
      EXPECT_TRUE(close(got->state(n).to_device(Device::cpu()), want->state(n), 1e-5))
          << "prompt " << prompt << ", state " << n;
  }
}

struct SeparateRun {
  std::vector<std::vector<Tensor>> outputs;  // on the host
  std::map<std::string, Tensor> state;       // at the end, on the host
};

TEST(CudaProgram, EightSessionsInterleavedOverFourQueuesEqualEightSeparateRuns) {
  IP_REQUIRE_CUDA();
  DecoderGraphs g = decoder_graphs(false);
  auto program = cuda_decoder(g);
  const Backend& backend = backend_for(Device::cuda());
  constexpr int kSessions = 8, kQueues = 4;
  std::vector<std::vector<Call>> conversations;
  for (int s = 0; s < kSessions; ++s)  // prompts of 1 to 4 rows, then 4 decode steps
    conversations.push_back(conversation(1 + s % 4, 4, 400 + 10 * static_cast<uint32_t>(s)));
  const size_t calls = conversations[0].size();
  for (const char* graphs : {"on", "off"}) {
    // Each session alone, one after the other, on the default queue.
    std::vector<SeparateRun> want(kSessions);
    for (int s = 0; s < kSessions; ++s) {
      auto alone = program->new_session();
      alone->set_backend_option("cuda_graph", graphs);
      for (const Call& c : conversations[s])
        want[s].outputs.push_back(on_host(alone->run(c.method, c.inputs)));
      for (const char* n : kStateNames) want[s].state[n] = alone->state(n).to_device(Device::cpu());
    }
    std::vector<void*> queues;
    for (int q = 0; q < kQueues; ++q) queues.push_back(backend.create_queue());
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<std::map<std::string, void*>> addresses;
    for (int s = 0; s < kSessions; ++s) {
      sessions.push_back(program->new_session());
      sessions.back()->set_backend_option("cuda_graph", graphs);
      addresses.push_back(state_addresses(*sessions.back()));
    }
    // Twice: the second pass after reset(queue), which keeps every address (and so the graphs).
    for (int pass = 0; pass < 2; ++pass) {
      // Call k of every session before call k + 1 of any, session s on queue s % 4, no wait in
      // between; each output kept by a device copy on its call's queue.
      std::vector<std::vector<std::vector<Tensor>>> kept(kSessions);
      for (size_t k = 0; k < calls; ++k)
        for (int s = 0; s < kSessions; ++s) {
          const Call& c = conversations[s][k];
          std::vector<Tensor> outs = sessions[s]->run(c.method, c.inputs, queues[s % kQueues]);
          kept[s].emplace_back();
          for (const Tensor& t : outs)
            kept[s].back().push_back(sessions[s]->context(c.method).clone_on_device(t));
        }
      for (void* q : queues) backend.synchronize(q);  // the calls and the copies after them
      for (int s = 0; s < kSessions; ++s) {
        sessions[s]->synchronize();
        const std::string what = str_cat("graphs ", graphs, ", pass ", pass, ", session ", s);
        for (size_t k = 0; k < calls; ++k) {
          const std::vector<Tensor> got = on_host(kept[s][k]);
          ASSERT_EQ(got.size(), want[s].outputs[k].size()) << what;
          for (size_t j = 0; j < got.size(); ++j)
            EXPECT_TRUE(close(got[j], want[s].outputs[k][j], 0))
                << what << ", call " << k << ", output " << j;
        }
        for (const char* n : kStateNames)
          EXPECT_TRUE(close(sessions[s]->state(n).to_device(Device::cpu()), want[s].state[n], 0))
              << what << ", state " << n;
        EXPECT_EQ(state_addresses(*sessions[s]), addresses[s]) << what << ", after the calls";
        sessions[s]->reset(queues[(s + 1) % kQueues]);
        EXPECT_EQ(state_addresses(*sessions[s]), addresses[s]) << what << ", after reset()";
        EXPECT_EQ(sessions[s]->state("layers.0.count").to_device(Device::cpu()).to_double_vector(),
                  std::vector<double>{0})
            << what;
      }
    }
    // Graphs: captured for the decode steps (same addresses every call) and replayed when the
    // positions are read on the device; never with graphs off.
    for (int s = 0; s < kSessions; ++s) {
      const ContextStats st = sessions[s]->context("decode").stats();
      if (std::string(graphs) == "off") {
        EXPECT_EQ(st.counter("graph_captures") + st.counter("graph_replays"), 0) << s;
      } else if (st.counter("scalars_on_device")) {
        EXPECT_GE(st.counter("graph_captures"), 1) << s;
        EXPECT_GT(st.counter("graph_replays"), 0) << s;
      }
    }
    sessions.clear();
    for (void* q : queues) backend.destroy_queue(q);
  }
}

}  // namespace

// generate() on the GPU: the prompt through prefill, then decode per token, greedy taken by the
// device's argmax (8 bytes to the host per token), equal to the eager loop token for token.
TEST(CudaProgram, GreedyGenerateOnTheDeviceEqualsTheEagerLoop) {
  IP_REQUIRE_CUDA();
  TinyLlama model;
  const std::vector<int64_t> prompt = {1, 17, 42, 9, 200};
  std::shared_ptr<const Program> gpu = tiny_llama_program(model, true, Device::cuda());
  GenerateOptions o;
  o.max_new_tokens = 12;
  GenerateResult r = gpu->new_session()->generate(prompt, o);
  EXPECT_EQ(r.tokens, eager_greedy(model, prompt, 12));
  EXPECT_GT(r.tokens_per_second, 0.0);
  std::printf("[gpu suite] generate on cuda: %zu tokens, %.0f tokens/s\n", r.tokens.size(),
              r.tokens_per_second);
}

// Sampling on the GPU: the device selects the top k of each token's logits (the host draws from
// them), draws over every token itself (sample_row) or gives the row's total with its largest
// logits (a nucleus); a seed gives the same tokens as the same program on the cpu (the row's whole
// copy and the host's selection), with and without a prefill method.
TEST(CudaProgram, SampledGenerateOnTheDeviceEqualsTheCpu) {
  IP_REQUIRE_CUDA();
  TinyLlama model;
  const std::vector<int64_t> prompt = {1, 17, 42, 9, 200};
  GenerateOptions o;
  o.max_new_tokens = 16;
  for (const SamplingOptions& sampling :
       {SamplingOptions{/*temperature=*/0.8, /*top_k=*/40, /*top_p=*/0.9, /*seed=*/7},
        SamplingOptions{1.1, 0, 1.0, 8}, SamplingOptions{0.9, 0, 0.9, 9}})
    for (bool with_prefill : {true, false}) {
      SCOPED_TRACE("top_k " + std::to_string(sampling.top_k) + " top_p " +
                   std::to_string(sampling.top_p));
      o.sampling = sampling;
      std::shared_ptr<const Program> cpu = tiny_llama_program(model, with_prefill);
      std::shared_ptr<const Program> gpu = tiny_llama_program(model, with_prefill, Device::cuda());
      const GenerateResult want = cpu->new_session()->generate(prompt, o);
      EXPECT_EQ(gpu->new_session()->generate(prompt, o).tokens, want.tokens);
      EXPECT_NE(want.tokens, eager_greedy(model, prompt, 16));  // it does sample
    }
}

// The contract on one device, free of the cpu's rounding: at top_k 300 over the tiny model's 256
// tokens the device selects every token and the host draws; at top_k 2000 (past the kernel's
// 1024) the host reads the row and selects them itself; at top_k 0 the device gives the row's
// total and its largest logits (the nucleus of 0.95). The same logits, the same tokens.
TEST(CudaProgram, DeviceSelectionDrawsAsTheWholeRowOnTheSameDevice) {
  IP_REQUIRE_CUDA();
  TinyLlama model;
  ASSERT_EQ(model.config.vocab, 256);
  std::shared_ptr<const Program> gpu = tiny_llama_program(model, true, Device::cuda());
  const std::vector<int64_t> prompt = {1, 17, 42, 9, 200};
  GenerateOptions o;
  o.max_new_tokens = 24;
  o.sampling = {/*temperature=*/1.3, /*top_k=*/300, /*top_p=*/0.95, /*seed=*/11};
  const std::vector<int64_t> selected = gpu->new_session()->generate(prompt, o).tokens;
  for (int64_t top_k : {2000, 0}) {
    o.sampling.top_k = top_k;
    EXPECT_EQ(gpu->new_session()->generate(prompt, o).tokens, selected) << "top_k " << top_k;
  }
  EXPECT_NE(selected, eager_greedy(model, prompt, 24));
}

// NaN logits (tokens 33 and 77 of a model whose tied embedding rows are NaN) stop sampling with
// the same error on the device's selection and on the cpu's whole row: the first such token.
TEST(CudaProgram, SamplingRefusesNaNLogitsAlikeOnTheDeviceAndTheCpu) {
  IP_REQUIRE_CUDA();
  TinyLlama model;
  Tensor& embed = model.weights.at("embed_tokens.weight");
  embed = embed.clone();
  for (int64_t token : {77, 33}) embed.select(0, token).fill(std::nan(""));
  const std::vector<int64_t> prompt = {1, 17, 42, 9, 200};
  GenerateOptions o;
  o.max_new_tokens = 4;
  auto error = [&](Device device) -> std::string {
    try {
      tiny_llama_program(model, true, device)->new_session()->generate(prompt, o);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  for (int64_t top_k : {40, 0})
    for (double top_p : {0.9, 1.0}) {
      o.sampling = {/*temperature=*/0.8, top_k, top_p, /*seed=*/7};
      const std::string cpu = error(Device::cpu());
      EXPECT_NE(cpu.find("[generate] the logit of token 33 is NaN"), std::string::npos) << cpu;
      EXPECT_EQ(error(Device::cuda()), cpu) << "top_k " << top_k << " top_p " << top_p;
    }
}
