// Timing, memory and option helpers shared by `inplace demo` and `inplace bench`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "arg_parser.h"
#include "core/dtype.h"

namespace inplace::cli {

int64_t parse_int_option(const std::string& option, const std::string& value, int64_t lo,
                         int64_t hi);

// Milliseconds since `start` (std::chrono::steady_clock).
double ms_since(int64_t start_ns);
int64_t now_ns();
// CPU time of the calling thread (its own work, whatever else the machine runs), in ns.
int64_t thread_cpu_ns();

// Peak resident memory of this process (getrusage), in bytes.
int64_t peak_rss_bytes();

// Percentile q in [0, 1] of `values` (sorted copy; nearest rank).
double percentile(std::vector<double> values, double q);

}  // namespace inplace::cli

namespace inplace::cli {

// This machine's read bandwidth in bytes/s with `threads` threads (read_bandwidth.cpp): the best
// of several passes summing a buffer much larger than the caches (`bytes`), each thread its own
// contiguous share, the way a decode step streams its weights.
double measure_read_bandwidth(int64_t bytes, int threads);

// BLAS (prompts, large products) on the calling thread: OpenBLAS's own threads would compete
// with the context's pool, and "one thread" should mean one.
void single_threaded_blas();

// --dtype f32|bf16 (the built-in model's weights).
DType parse_weight_dtype(const std::string& value);

}  // namespace inplace::cli
