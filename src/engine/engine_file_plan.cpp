// The PLAN field: bindings, steps (op by full name, argument templates as compact binary
// Values), arena slots and output refs. Reading re-checks everything execution would index
// without checking (operand paths, arena slots, extents) on top of validate_plan.
#include <limits>

#include "backend/eager_call.h"
#include "engine/engine_file_codec.h"
#include "engine/number_operands.h"
#include "ops/renamed_ops.h"

namespace inplace::engine_file {
namespace {

// Value tags: stable on disk, independent of Value::Kind's order.
enum class Tag : uint8_t {
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kTuple,
  kDict,
  kSlice,
  kEllipsis,
  kDType,
  kDevice,
  kTensorMeta,
};
constexpr int kMaxValueDepth = 32;
constexpr int kMaxRank = 32;
// The step kind byte's high bit: the step runs on the host (Step::on_host); files written
// before it was added never set it, so they load unchanged.
constexpr uint8_t kStepOnHost = 0x80;
// Bound every size read from a file so arithmetic on it cannot overflow int64.
constexpr int64_t kMaxExtent = int64_t{1} << 50;
constexpr int64_t kArenaAlignment = 64;

void write_value(Writer& w, const Value& v) {
  using K = Value::Kind;
  switch (v.kind) {
    case K::kNone:
      w.u8(uint8_t(Tag::kNone));
      return;
    case K::kBool:
      w.u8(uint8_t(Tag::kBool));
      w.u8(v.b);
      return;
    case K::kInt:
      w.u8(uint8_t(Tag::kInt));
      w.i64(v.i);
      return;
    case K::kFloat:
      w.u8(uint8_t(Tag::kFloat));
      w.f64(v.f);
      return;
    case K::kString:
      w.u8(uint8_t(Tag::kString));
      w.str(v.s);
      return;
    case K::kDevice:
      w.u8(uint8_t(Tag::kDevice));
      w.str(v.s);
      return;
    case K::kEllipsis:
      w.u8(uint8_t(Tag::kEllipsis));
      return;
    case K::kDType:
      w.u8(uint8_t(Tag::kDType));
      w.u8(uint8_t(v.dtype));
      return;
    case K::kList:
    case K::kTuple:
    case K::kSlice:
      w.u8(uint8_t(v.kind == K::kList    ? Tag::kList
                   : v.kind == K::kTuple ? Tag::kTuple
                                         : Tag::kSlice));
      w.u32(static_cast<uint32_t>(v.items.size()));
      for (const Value& x : v.items) write_value(w, x);
      return;
    case K::kDict:
      w.u8(uint8_t(Tag::kDict));
      w.u32(static_cast<uint32_t>(v.items.size()));
      for (size_t k = 0; k < v.items.size(); ++k) {
        w.str(k < v.keys.size() ? v.keys[k] : std::string());
        write_value(w, v.items[k]);
      }
      return;
    case K::kTensor:
      // Templates hold metas only: the data comes from the step's tensor slots.
      w.u8(uint8_t(Tag::kTensorMeta));
      w.shape(v.tensor.shape());
      w.shape(v.tensor.strides());
      w.u8(uint8_t(v.tensor.dtype()));
      w.i64(v.tensor.offset());
      return;
    case K::kNode:
      break;
  }
  IP_FAIL(kInternal, "[engine_file] cannot save a ", v.kind_name(), " argument");
}

// Every size in range and the product of the non-zero sizes too, so contiguous strides of the
// shape cannot overflow (check_extent stops at a zero size; strides do not).
void check_shape(Reader& r, const Shape& shape, const char* item) {
  if (shape.size() > kMaxRank) r.fail(str_cat(item, " has rank ", shape.size()));
  int64_t product = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || shape[d] > kMaxExtent)
      r.fail(str_cat(item, " has size ", shape[d], " in dim ", d));
    if (shape[d] == 0) continue;
    if (product > kMaxExtent / shape[d])
      r.fail(str_cat(item, " has too many elements ", shape_str(shape)));
    product *= shape[d];
  }
}

void check_extent(Reader& r, const Shape& shape, const Shape& strides, int64_t offset,
                  const char* item) {
  check_shape(r, shape, item);
  if (shape.size() != strides.size())
    r.fail(str_cat(item, " has shape and strides of different rank"));
  if (offset < 0 || offset > kMaxExtent) r.fail(str_cat(item, " has offset ", offset));
  // Sizes and their product were checked by check_shape; what remains is how far the strides
  // reach.
  int64_t last = offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (strides[d] < 0 || strides[d] > kMaxExtent)
      r.fail(str_cat(item, " has size ", shape[d], " stride ", strides[d], " in dim ", d));
    if (shape[d] == 0) return;
    if (strides[d] && shape[d] - 1 > (kMaxExtent - last) / strides[d])
      r.fail(str_cat(item, " reaches too far ", shape_str(shape), " strides ", shape_str(strides)));
    last += (shape[d] - 1) * strides[d];
  }
}

Value read_value(Reader& r, int depth) {
  if (depth > kMaxValueDepth) r.fail("argument nesting deeper than 32");
  uint8_t tag = r.u8("value tag");
  switch (static_cast<Tag>(tag)) {
    case Tag::kNone:
      return Value::none();
    case Tag::kBool: {
      uint8_t b = r.u8("bool");
      if (b > 1) r.fail(str_cat("bool value ", int(b)));
      return Value::boolean(b);
    }
    case Tag::kInt:
      return Value::integer(r.i64("int"));
    case Tag::kFloat:
      return Value::floating(r.f64("float"));
    case Tag::kString:
      return Value::string(r.str("string"));
    case Tag::kDevice:
      return Value::device(r.str("device"));
    case Tag::kEllipsis:
      return Value::ellipsis();
    case Tag::kDType:
      return Value::dtype_value(r.dtype("dtype value"));
    case Tag::kList:
    case Tag::kTuple:
    case Tag::kSlice: {
      uint64_t n = r.count("list items", 1);
      std::vector<Value> items;
      items.reserve(n);
      for (uint64_t k = 0; k < n; ++k) items.push_back(read_value(r, depth + 1));
      if (tag == uint8_t(Tag::kSlice)) {
        if (n != 3) r.fail(str_cat("slice with ", n, " items"));
        return Value::slice(items[0], items[1], items[2]);
      }
      return tag == uint8_t(Tag::kList) ? Value::list(std::move(items))
                                        : Value::tuple(std::move(items));
    }
    case Tag::kDict: {
      uint64_t n = r.count("dict items", 9);
      std::vector<std::string> keys;
      std::vector<Value> items;
      for (uint64_t k = 0; k < n; ++k) {
        keys.push_back(r.str("dict key"));
        items.push_back(read_value(r, depth + 1));
      }
      return Value::dict(std::move(keys), std::move(items));
    }
    case Tag::kTensorMeta: {
      Shape shape = r.shape("tensor shape"), strides = r.shape("tensor strides");
      DType dt = r.dtype("tensor dtype");
      int64_t offset = r.i64("tensor offset");
      check_extent(r, shape, strides, offset, "tensor argument");
      return Value::from_tensor(Tensor::meta(shape, dt, strides, offset));
    }
  }
  r.fail(str_cat("unknown value tag ", int(tag)));
}

void write_ref(Writer& w, const TensorRef& t) {
  w.u8(uint8_t(t.buffer.kind));
  w.u32(static_cast<uint32_t>(t.buffer.index));
  w.i64(t.offset);
  w.shape(t.shape);
  w.shape(t.strides);
  w.u8(uint8_t(t.dtype));
  w.i64(t.dyn);
}

TensorRef read_ref(Reader& r) {
  TensorRef t;
  uint8_t kind = r.u8("buffer kind");
  if (kind > uint8_t(BufferKind::kConstant)) r.fail(str_cat("unknown buffer kind ", int(kind)));
  t.buffer.kind = static_cast<BufferKind>(kind);
  t.buffer.index = static_cast<int32_t>(r.u32("buffer index"));
  t.offset = r.i64("tensor offset");
  t.shape = r.shape("tensor shape");
  t.strides = r.shape("tensor strides");
  t.dtype = r.dtype("tensor dtype");
  int64_t dyn = r.i64("dynamic value");
  if (dyn < -1 || dyn > std::numeric_limits<int32_t>::max())
    r.fail(str_cat("dynamic value ", dyn, " is out of range"));
  t.dyn = static_cast<int32_t>(dyn);
  check_extent(r, t.shape, t.strides, t.offset, "tensor reference");
  return t;
}

void write_bindings(Writer& w, const std::vector<Binding>& bs) {
  w.u32(static_cast<uint32_t>(bs.size()));
  for (const Binding& b : bs) {
    w.str(b.name);
    w.shape(b.shape);
    w.u8(uint8_t(b.dtype));
    w.shape(b.dynamic_dims);
    w.i64(b.dyn);
    w.u8(b.value_range ? 1 : 0);
    if (b.value_range) {
      w.i64(b.value_range->lo);
      w.i64(b.value_range->hi);
    }
  }
}

// `side` is "input" or "output" (errors name the binding: "input binding 'x' has ...").
std::vector<Binding> read_bindings(Reader& r, const char* items, const char* side) {
  uint64_t n = r.count(items, 13);
  std::vector<Binding> out(n);
  for (Binding& b : out) {
    b.name = r.str("binding name");
    b.shape = r.shape("binding shape");
    b.dtype = r.dtype("binding dtype");
    const std::string what = str_cat(side, " binding '", b.name, "'");
    check_shape(r, b.shape, what.c_str());
    check_extent(r, b.shape, contiguous_strides(b.shape), 0, what.c_str());
    b.dynamic_dims = r.shape("binding dynamic dims");
    for (int64_t d : b.dynamic_dims)
      if (d < 0 || d >= static_cast<int64_t>(b.shape.size()))
        r.fail(str_cat("binding '", b.name, "' has dynamic dim ", d, " outside its rank"));
    int64_t dyn = r.i64("binding dynamic value");
    if (dyn < -1 || dyn > std::numeric_limits<int32_t>::max() ||
        (dyn >= 0) == b.dynamic_dims.empty())
      r.fail(str_cat("binding '", b.name, "' has dynamic value ", dyn, " that does not fit its ",
                     b.dynamic_dims.size(), " dynamic dims"));
    b.dyn = static_cast<int32_t>(dyn);
    if (r.u8("binding value range flag")) {
      int64_t lo = r.i64("value range"), hi = r.i64("value range");
      if (lo > hi) r.fail(str_cat("binding '", b.name, "' has empty value range"));
      b.value_range = SymRange{lo, hi};
    }
  }
  return out;
}

// The leaf a tensor slot names; null when the path leaves the template.
const Value* leaf_at(const std::vector<Value>& args, const std::vector<int>& path) {
  if (path.empty() || path[0] < 0 || path[0] >= static_cast<int>(args.size())) return nullptr;
  const Value* v = &args[path[0]];
  for (size_t k = 1; k < path.size(); ++k) {
    if (path[k] < 0 || path[k] >= static_cast<int>(v->items.size())) return nullptr;
    v = &v->items[path[k]];
  }
  return v;
}

// An out kernel writes contiguous results of the shapes its infer function gives: results of
// any other shape in the file would make it write out of bounds, so they are checked here.
void check_out_results(Reader& r, const Step& s) {
  std::vector<Tensor> metas;
  try {
    metas = s.op->infer(number_operands_as(*s.op, s.args, 1));  // a number operand read as 1
  } catch (const Error& e) {
    r.fail(str_cat("step '", s.node, "': its arguments do not fit op '", s.op->schema.full_name(),
                   "': ", e.what()));
  }
  if (metas.size() != s.outs.size())
    r.fail(str_cat("step '", s.node, "' has ", s.outs.size(), " results where op '",
                   s.op->schema.full_name(), "' returns ", metas.size()));
  for (size_t k = 0; k < metas.size(); ++k) {
    const TensorRef& o = s.outs[k];
    if (o.dyn >= 0) {  // a bound: checked against each call's size by the refresh
      if (o.dtype != metas[k].dtype() || o.strides != contiguous_strides(o.shape))
        r.fail(str_cat("step '", s.node, "' dynamic result ", k, " is not a contiguous ",
                       dtype_name(metas[k].dtype()), " bound"));
      continue;
    }
    if (o.shape != metas[k].shape() || o.dtype != metas[k].dtype() ||
        o.strides != contiguous_strides(o.shape))
      r.fail(str_cat("step '", s.node, "' result ", k, " is ", shape_str(o.shape), " ",
                     dtype_name(o.dtype), " but op '", s.op->schema.full_name(), "' makes ",
                     shape_str(metas[k].shape()), " ", dtype_name(metas[k].dtype()),
                     " (contiguous)"));
  }
}

}  // namespace

void write_plan(Writer& w, const Plan& plan) {
  write_bindings(w, plan.inputs);
  write_bindings(w, plan.outputs);
  w.u32(static_cast<uint32_t>(plan.steps.size()));
  for (const Step& s : plan.steps) {
    w.u8(static_cast<uint8_t>(uint8_t(s.kind) | (s.on_host ? kStepOnHost : 0)));
    w.str(s.op ? s.op->schema.full_name() : std::string());
    w.str(s.node);
    w.str(s.writes_binding);
    w.u32(static_cast<uint32_t>(s.args.size()));
    for (const Value& a : s.args) write_value(w, a);
    w.u32(static_cast<uint32_t>(s.tensors.size()));
    for (const TensorSlot& t : s.tensors) {
      w.u32(static_cast<uint32_t>(t.path.size()));
      for (int p : t.path) w.u32(static_cast<uint32_t>(p));
      write_ref(w, t.ref);
    }
    w.u32(static_cast<uint32_t>(s.ints.size()));
    for (const IntSlot& i : s.ints) {
      w.u32(static_cast<uint32_t>(i.path.size()));
      for (int p : i.path) w.u32(static_cast<uint32_t>(p));
      w.u32(static_cast<uint32_t>(i.scalar));
    }
    w.u32(static_cast<uint32_t>(s.outs.size()));
    for (const TensorRef& o : s.outs) write_ref(w, o);
  }
  w.u32(static_cast<uint32_t>(plan.scalars.size()));
  for (size_t k = 0; k < plan.scalars.size(); ++k) {
    w.str(plan.scalar_names[k]);
    w.u32(static_cast<uint32_t>(plan.scalars[k].code.size()));
    for (const SymInstr& in : plan.scalars[k].code) {
      w.u8(uint8_t(in.op));
      w.i64(in.a);
      w.i64(in.b);
    }
  }
  w.u32(static_cast<uint32_t>(plan.refresh.size()));
  for (const RefreshItem& it : plan.refresh) {
    w.u8(uint8_t(it.kind));
    w.u32(static_cast<uint32_t>(it.index));
  }
  w.i64(plan.num_dyn);
  w.u32(static_cast<uint32_t>(plan.arena.size()));
  for (const ArenaSlot& a : plan.arena) {
    w.i64(a.offset_bytes);
    w.i64(a.nbytes);
  }
  w.i64(plan.arena_bytes);
  w.u32(static_cast<uint32_t>(plan.output_buffer_bytes.size()));
  for (int64_t n : plan.output_buffer_bytes) w.i64(n);
  w.u32(static_cast<uint32_t>(plan.output_refs.size()));
  for (const TensorRef& o : plan.output_refs) write_ref(w, o);
  w.i64(plan.original_output_count);
  if (plan.prepared.empty()) return;  // the section is new within ABI 3: absent when empty
  w.u32(static_cast<uint32_t>(plan.prepared.size()));
  for (const PreparedInput& p : plan.prepared) {
    w.u32(static_cast<uint32_t>(p.input));
    w.u32(static_cast<uint32_t>(p.source));
    w.shape(p.perm);
  }
}

void read_plan(Reader& r, Plan* plan) {
  plan->inputs = read_bindings(r, "input bindings", "input");
  plan->outputs = read_bindings(r, "output bindings", "output");
  uint64_t nsteps = r.count("steps", 41);
  plan->steps.resize(nsteps);
  for (uint64_t q = 0; q < nsteps; ++q) {
    Step& s = plan->steps[q];
    uint8_t kind = r.u8("step kind");
    s.on_host = (kind & kStepOnHost) != 0;
    kind = static_cast<uint8_t>(kind & ~kStepOnHost);
    if (kind > uint8_t(StepKind::kView))
      r.fail(str_cat("step ", q, " has unknown kind ", int(kind)));
    s.kind = static_cast<StepKind>(kind);
    std::string op = r.str("op name");
    s.node = r.str("node name");
    s.writes_binding = r.str("writes_binding");
    if (!op.empty()) {
      // A file of an earlier build may name an op since renamed (ops/renamed_ops.h).
      s.op = find_op_or_renamed(op);
      if (!s.op) r.fail(str_cat("step '", s.node, "' uses unknown op '", op, "'"));
    }
    uint64_t nargs = r.count("arguments", 1);
    for (uint64_t k = 0; k < nargs; ++k) s.args.push_back(read_value(r, 0));
    // A step of an op renamed since, or of one that gained defaulted arguments at its end since
    // (fused_linear's more_biases), takes the op's defaults for those it lacks.
    if (s.op && s.kind != StepKind::kCopy && !append_defaults(s.op->schema, &s.args))
      r.fail(str_cat("step '", s.node, "' has ", s.args.size(), " arguments for op '", op, "'",
                     s.op->schema.full_name() != op
                         ? str_cat(", renamed '", s.op->schema.full_name(), "',")
                         : std::string(),
                     " which takes ", s.op->schema.args.size()));
    uint64_t nslots = r.count("tensor operands", 4);
    for (uint64_t k = 0; k < nslots; ++k) {
      TensorSlot t;
      uint64_t depth = r.count("operand path", 4);
      for (uint64_t d = 0; d < depth; ++d)
        t.path.push_back(static_cast<int>(r.u32("operand path")));
      t.ref = read_ref(r);
      const Value* leaf = leaf_at(s.args, t.path);
      if (!leaf || !leaf->is_tensor())
        r.fail(str_cat("step '", s.node, "' has an operand path that names no tensor argument"));
      if (leaf->tensor.shape() != t.ref.shape || leaf->tensor.strides() != t.ref.strides ||
          leaf->tensor.dtype() != t.ref.dtype)
        r.fail(
            str_cat("step '", s.node, "' has an operand template that differs from its reference"));
      s.tensors.push_back(std::move(t));
    }
    uint64_t nints = r.count("int operands", 8);
    for (uint64_t k = 0; k < nints; ++k) {
      IntSlot i;
      uint64_t depth = r.count("int operand path", 4);
      for (uint64_t d = 0; d < depth; ++d) i.path.push_back(static_cast<int>(r.u32("int path")));
      i.scalar = static_cast<int32_t>(r.u32("int operand scalar"));
      const Value* leaf = leaf_at(s.args, i.path);
      if (!leaf || leaf->kind != Value::Kind::kInt)
        r.fail(str_cat("step '", s.node, "' has an int operand path that names no int argument"));
      s.ints.push_back(std::move(i));
    }
    uint64_t nouts = r.count("results", 1);
    for (uint64_t k = 0; k < nouts; ++k) s.outs.push_back(read_ref(r));
    if (s.kind == StepKind::kView && !(s.op && s.op->kind != OpKind::kMutating))
      r.fail(str_cat("view step '", s.node, "' needs a non-mutating op"));
    if (s.kind == StepKind::kCopy &&
        (s.tensors.size() != 1 || s.tensors[0].path != std::vector<int>{0}))
      r.fail(str_cat("copy step '", s.node, "' must read its first argument"));
    if (s.kind != StepKind::kCopy && s.op && s.args.size() != s.op->schema.args.size())
      r.fail(str_cat("step '", s.node, "' has ", s.args.size(), " arguments for op '", op,
                     "' which takes ", s.op->schema.args.size()));
    if (s.kind == StepKind::kOut && s.op && s.op->infer) check_out_results(r, s);
    if (s.on_host && !((s.kind == StepKind::kOut || s.kind == StepKind::kEager) && s.op))
      r.fail(str_cat("step '", s.node, "' runs on the host but is no op's step"));
    if (s.kind == StepKind::kEager && s.op && !has_eager(*s.op))
      r.fail(str_cat("step '", s.node, "' needs an eager kernel op '", op, "' lacks"));
  }
  uint64_t nscalars = r.count("scalars", 12);
  for (uint64_t k = 0; k < nscalars; ++k) {
    plan->scalar_names.push_back(r.str("scalar name"));
    SymExpr e;
    uint64_t n = r.count("scalar code", 17);
    for (uint64_t c = 0; c < n; ++c) {
      SymInstr in;
      uint8_t op = r.u8("scalar op");
      if (op >= kNumSymOps) r.fail(str_cat("scalar ", k, " has unknown op ", int(op)));
      in.op = static_cast<SymInstr::Op>(op);
      in.a = r.i64("scalar operand");
      in.b = r.i64("scalar operand");
      e.code.push_back(in);
    }
    plan->scalars.push_back(std::move(e));
  }
  uint64_t nrefresh = r.count("refresh", 5);
  for (uint64_t k = 0; k < nrefresh; ++k) {
    RefreshItem it;
    uint8_t kind = r.u8("refresh kind");
    if (kind > uint8_t(RefreshItem::Kind::kStep))
      r.fail(str_cat("unknown refresh kind ", int(kind)));
    it.kind = static_cast<RefreshItem::Kind>(kind);
    it.index = static_cast<int32_t>(r.u32("refresh index"));
    plan->refresh.push_back(it);
  }
  int64_t ndyn = r.i64("dynamic values");
  if (ndyn < 0 || ndyn > (1 << 24))
    r.fail(str_cat("dynamic value count ", ndyn, " is out of range"));
  plan->num_dyn = static_cast<int32_t>(ndyn);
  uint64_t nslots = r.count("arena slots", 16);
  plan->arena.resize(nslots);
  for (ArenaSlot& a : plan->arena) {
    a.offset_bytes = r.i64("arena slot");
    a.nbytes = r.i64("arena slot");
  }
  plan->arena_bytes = r.i64("arena_bytes");
  if (plan->arena_bytes < 0 || plan->arena_bytes > kMaxExtent)
    r.fail(str_cat("arena_bytes ", plan->arena_bytes, " is out of range"));
  for (size_t k = 0; k < plan->arena.size(); ++k) {
    const ArenaSlot& a = plan->arena[k];
    if (a.offset_bytes < 0 || a.nbytes < 0 || a.offset_bytes > plan->arena_bytes ||
        a.nbytes > plan->arena_bytes - a.offset_bytes)
      r.fail(str_cat("arena slot ", k, " [", a.offset_bytes, ", +", a.nbytes,
                     ") lies outside the arena of ", plan->arena_bytes, " bytes"));
    // The memory planner aligns every slot to 64 bytes; a tensor at an odd offset would be a
    // misaligned access in every kernel (fuzzer finding: regress-arena-slot-misaligned).
    if (a.offset_bytes % kArenaAlignment != 0)
      r.fail(str_cat("arena slot ", k, " at byte ", a.offset_bytes, " is not ", kArenaAlignment,
                     "-byte aligned"));
  }
  uint64_t nob = r.count("output buffers", 8);
  for (uint64_t k = 0; k < nob; ++k) {
    int64_t n = r.i64("output buffer bytes");
    if (n < 0 || n > kMaxExtent) r.fail(str_cat("output buffer ", k, " has ", n, " bytes"));
    plan->output_buffer_bytes.push_back(n);
  }
  uint64_t nrefs = r.count("output refs", 30);
  for (uint64_t k = 0; k < nrefs; ++k) plan->output_refs.push_back(read_ref(r));
  int64_t orig = r.i64("original_output_count");
  if (orig < 0 || orig > std::numeric_limits<int>::max())
    r.fail(str_cat("original_output_count ", orig, " is out of range"));
  plan->original_output_count = static_cast<int>(orig);
  if (r.remaining() == 0) return;  // no prepared bindings
  uint64_t nprepared = r.count("prepared bindings", 12);
  if (nprepared == 0 || nprepared > plan->inputs.size())
    r.fail(str_cat(nprepared, " prepared bindings for ", plan->inputs.size(), " bindings"));
  for (uint64_t k = 0; k < nprepared; ++k) {
    PreparedInput p;
    p.input = static_cast<int32_t>(r.u32("prepared binding"));
    p.source = static_cast<int32_t>(r.u32("prepared source"));
    p.perm = r.shape("prepared permutation");
    plan->prepared.push_back(std::move(p));
  }
  r.expect_end();
}

}  // namespace inplace::engine_file
