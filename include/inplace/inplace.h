// inplace: the public C++ API in one include.
//   read a graph      -> frontend/graph_json.h, frontend/safetensors.h, ir/builder.h
//   run it eagerly    -> interpreter/interpreter.h
//   compile and run   -> compiler/compile.h, engine/execution_context.h
//   programs          -> program.h (methods over shared state, sessions)
#pragma once

#include "compiler/compile.h"
#include "core/tensor.h"
#include "engine/engine.h"
#include "engine/execution_context.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "inplace/program.h"
#include "interpreter/interpreter.h"
#include "ir/builder.h"
#include "ir/graph.h"
