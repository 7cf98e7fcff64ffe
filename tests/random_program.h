// Random small programs for differential tests: views of every kind, in-place ops, setitem with
// random index forms, copy_/fill_/index_put_, and reads before and after each write. Each
// program is valid in eager mode (no write through an overlapping view, no duplicate indices in
// a non-accumulating index_put, setitem values from another storage) and comes with fresh
// random inputs. Shared by the functional and engine differential tests.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "ir/graph.h"

namespace inplace::testing {

struct RandomProgramOptions {
  int min_ops = 4;
  int max_ops = 14;
  bool buffers = true;  // may read and write a get_attr buffer
  // Leave out constructs the passes can only lower with shapes (chunk pieces, as_strided of a
  // view, tensor indices after an Ellipsis, masks with one value per element).
  bool shape_free = false;
  // Positions and indices (select, narrow, integer indexing, slice bounds) that are graph
  // inputs rather than constants: the engine must follow their value on every call.
  bool runtime_positions = false;
};

struct RandomProgram {
  uint64_t seed = 0;
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> inputs;  // one per placeholder
  // Position inputs (0-dim int64): the values eager accepts, and some it refuses.
  std::map<std::string, std::vector<int64_t>> valid_positions, invalid_positions;
};

RandomProgram make_random_program(uint64_t seed, const RandomProgramOptions& options = {});

// Fresh inputs for another call of the same program: float and value operands redrawn, index
// tensors and masks kept (they are chosen to be valid), positions drawn across their whole
// valid range including its ends and, with probability `invalid`, from the values eager refuses.
std::map<std::string, Tensor> redraw_inputs(const RandomProgram& p, uint64_t seed,
                                            double invalid = 0.15);

// `inputs` (by placeholder name) in the graph's placeholder order: an engine's input bindings.
std::vector<Tensor> in_placeholder_order(const RandomProgram& p,
                                         const std::map<std::string, Tensor>& inputs);

}  // namespace inplace::testing
