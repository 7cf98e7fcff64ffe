// Backend conformance, the way ggml's test-backend-ops checks its backends: walk every (op,
// device) the kernel table covers, build random arguments from the op's schema, and run the
// kernel on several dtypes and layouts (contiguous, transposed, offset views) against a
// reference with a tolerance per case. The cpu is the reference device: its kernels must give
// the same results on every layout as on contiguous operands, and agree with the interpreter's
// decompositions where one exists. On a machine with a CUDA device each cuda kernel is also
// compared with the cpu kernel on the same arguments (skipped where no device is present).
#include <gtest/gtest.h>
#include <algorithm>

#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "backend/kernel_table.h"
#include "core/device_allocator.h"
#include "ops/elementwise_codes.h"
#include "test_util.h"

namespace inplace {
namespace {

using namespace inplace::testing;

enum class Layout { kContiguous, kTransposed, kOffset };
const Layout kLayouts[] = {Layout::kContiguous, Layout::kTransposed, Layout::kOffset};
const DType kDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                         DType::kInt64,   DType::kInt32,   DType::kBool};

// Values in [-2, 2] (integers in [-3, 3] without 0, so integer division is defined).
Tensor random_tensor(const Shape& shape, DType dtype, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::kFloat64);
  std::uniform_real_distribution<double> u(-2, 2);
  std::uniform_int_distribution<int> k(1, 3), sign(0, 1);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (is_floating(dtype))
      p[i] = u(rng);
    else if (dtype == DType::kBool)
      p[i] = sign(rng);
    else
      p[i] = (sign(rng) ? 1 : -1) * k(rng);
  }
  return t.to(dtype);
}

// The same values in `layout`: a transposed view of a [cols, rows] buffer, or a view at an
// offset into a larger one.
Tensor in_layout(const Tensor& t, Layout layout) {
  if (layout == Layout::kContiguous || t.dim() != 2) return t.clone();
  Tensor v;
  if (layout == Layout::kTransposed) {
    v = Tensor::empty({t.size(1), t.size(0)}, t.dtype()).transpose(0, 1);
  } else {
    v = Tensor::empty({t.size(0) + 1, t.size(1) + 2}, t.dtype())
            .narrow(0, 1, t.size(0))
            .narrow(1, 2, t.size(1));
  }
  v.copy_from(t);
  return v;
}

// Arguments for `op` from its schema: every required Tensor a random [3, 4] tensor of `dtype`,
// a Scalar 0.75 (an int 1 for integer dtypes), defaults for the rest. Empty when a required
// argument has a type this generator does not make.
std::optional<Args> schema_args(const OpDef& op, DType dtype, std::mt19937& rng) {
  std::vector<Value> positional;
  for (const ArgSpec& a : op.schema.args) {
    if (a.default_value || a.optional_type()) break;
    const std::string t = a.base_type();
    if (t == "Tensor")
      positional.push_back(Value::from_tensor(random_tensor({3, 4}, dtype, rng)));
    else if (t == "Scalar")
      positional.push_back(is_floating(dtype) ? Value::floating(0.75) : Value::integer(1));
    else
      return std::nullopt;
  }
  Args args;
  std::string why;
  if (!bind_args(op.schema, positional, {}, &args, &why)) return std::nullopt;
  return args;
}

bool has_planned_results(const OpDef& op, const Args& args) {
  try {
    op.infer(args);
    return true;
  } catch (const Error&) {
    return false;  // a dtype the op refuses, as torch does
  }
}

std::vector<Tensor> run_kernel(const Kernel& k, const OpDef& op, const Args& args) {
  std::vector<Tensor> outs;
  for (const Tensor& m : op.infer(args)) outs.push_back(Tensor::empty(m.shape(), m.dtype()));
  k(args, outs, KernelContext{});
  return outs;
}

// Equal within `tol` (relative to max(1, |want|)); NaN matches NaN. tol 0: bit-exact values.
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double tol) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "shape/dtype differ";
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.at(i), w = want.at(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (g == w) continue;
    if (std::abs(g - w) > tol * std::max(1.0, std::abs(w)))
      return ::testing::AssertionFailure() << "element " << i << ": " << g << " vs " << w;
  }
  return ::testing::AssertionSuccess();
}

// Pointwise kernels visit elements in any order, but each element's computation is fixed:
// every layout gives bit-exact results. Others (reductions, products) may sum in another
// order on a strided operand.
double layout_tolerance(const OpDef& op, DType dtype) {
  if (op.has_tag(kPointwise)) return 0;
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 ? 1e-2 : 1e-5;
}

double device_tolerance(DType dtype) {
  if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) return 1e-2;
  return dtype == DType::kFloat32 ? 1e-5 : 1e-12;
}

Args with_layout(const Args& args, Layout layout) {
  Args out = args;
  for (Value& v : out)
    if (v.is_tensor()) v = Value::from_tensor(in_layout(v.tensor, layout));
  return out;
}

// The ops of every (op, device) the table covers that the generator builds arguments for.
struct Walk {
  std::set<std::string> ran, skipped;
};

Walk walk_device(
    DeviceType device,
    const std::function<void(const OpDef&, const Kernel&, const Args&, DType)>& check) {
  const KernelTable& table = KernelTable::get();
  const Registry& registry = Registry::get();
  Walk w;
  for (const std::string& name : table.covered(device)) {
    // Each op its own draws (seeded by its name): an op added or renamed changes no other's.
    uint32_t seed = 28;
    for (char c : name) seed = (seed ^ static_cast<uint8_t>(c)) * 16777619u;
    std::mt19937 rng(seed);
    const OpDef* op = registry.find(name);
    EXPECT_NE(op, nullptr) << name;
    if (!op) continue;
    const Kernel* kernel = table.find(*op, device);
    EXPECT_NE(kernel, nullptr) << name << " is listed with a kernel on " << int(device);
    if (!kernel || !op->infer) {
      w.skipped.insert(name);
      continue;
    }
    bool any = false;
    for (DType dtype : kDTypes) {
      std::optional<Args> args = schema_args(*op, dtype, rng);
      if (!args || !has_planned_results(*op, *args)) continue;
      SCOPED_TRACE(name + " " + dtype_name(dtype));
      check(*op, *kernel, *args, dtype);
      any = true;
    }
    (any ? w.ran : w.skipped).insert(name);
  }
  return w;
}

TEST(BackendConformance, EveryCpuKernelAgreesOnEveryLayout) {
  Walk w = walk_device(
      DeviceType::kCpu, [](const OpDef& op, const Kernel& k, const Args& args, DType dtype) {
        std::vector<Tensor> want;
        try {
          want = run_kernel(k, op, args);
        } catch (const Error&) {
          return;  // values the op refuses at run time (an index out of range)
        }
        for (Layout layout : kLayouts) {
          SCOPED_TRACE(static_cast<int>(layout));
          // Inputs in the layout; a pointwise op's results into a planned buffer of that layout
          // too (the engine places them on an operand's memory), others' contiguous as planned.
          const Args largs = with_layout(args, layout);
          std::vector<Tensor> got;
          for (const Tensor& m : op.infer(largs)) {
            Tensor planned = Tensor::empty(m.shape(), m.dtype());
            got.push_back(op.has_tag(kPointwise) ? in_layout(planned, layout) : planned);
          }
          k(largs, got, KernelContext{});
          ASSERT_EQ(got.size(), want.size());
          for (size_t i = 0; i < got.size(); ++i)
            EXPECT_TRUE(close(got[i], want[i], layout_tolerance(op, dtype)));
          // The interpreter's path (infer, allocate, the same kernel) gives the same values.
          Value eager = eager_call(op, largs);
          if (eager.is_tensor() && want.size() == 1)
            EXPECT_TRUE(close(eager.tensor, want[0], layout_tolerance(op, dtype)));
        }
      });
  // Every elementwise op (declared once in ops/elementwise_codes.h) ran through the walk.
  auto ran = [&](const std::string& name) {
    for (const std::string& r : w.ran)
      if (r == name || r.rfind(name + ".", 0) == 0) return true;
    return false;
  };
  for (const UnaryDecl& d : kUnaryOps) EXPECT_TRUE(ran(d.name)) << d.name;
  for (const BinaryDecl& d : kBinaryOps) EXPECT_TRUE(ran(d.name)) << d.name;
  for (const CompareDecl& d : kCompareOps) EXPECT_TRUE(ran(d.name)) << d.name;
  EXPECT_GT(w.ran.size(), 100u);
  std::printf("[conformance] cpu: %zu ops ran, %zu covered ops need hand-made arguments\n",
              w.ran.size(), w.skipped.size());
}

TEST(BackendConformance, EveryPlannedOpHasACpuKernelAndEveryDeviceOpOneToo) {
  const KernelTable& table = KernelTable::get();
  for (const OpDef* op : Registry::get().all()) {
    if (op->infer) EXPECT_NE(table.find(*op, DeviceType::kCpu), nullptr) << op->schema.full_name();
    // The cpu is the reference: an op another device computes, the cpu computes too.
    for (int d = 0; d < kNumDeviceTypes; ++d)
      if (table.find(*op, static_cast<DeviceType>(d)))
        EXPECT_TRUE(table.find(*op, DeviceType::kCpu) || table.find_eager(*op, DeviceType::kCpu) ||
                    op->eager)
            << op->schema.full_name();
  }
}

// A few ops against their decomposition through the interpreter: the same torch semantics
// computed by other kernels (bit-exact in float32 where the kernel rounds as the steps do).
TEST(BackendConformance, CpuKernelsMatchTheirDecompositions) {
  std::mt19937 rng(5);
  const Tensor x = call_t("mul", {T(random_tensor({5, 7}, DType::kFloat32, rng)), F(4.0)});
  struct Decomposition {
    const char* op;
    std::function<Tensor(const Tensor&)> ref;
    double tol;
  };
  const Decomposition kCases[] = {
      {"hardswish",
       [](const Tensor& t) {
         Tensor r = call_t("clamp", {T(call_t("add", {T(t), F(3.0)})), F(0.0), F(6.0)});
         return call_t("div", {T(call_t("mul", {T(t), T(r)})), F(6.0)});
       },
       0},
      {"relu",
       [](const Tensor& t) {
         return call_t("clamp_min", {T(t), F(0.0)});
       },
       0},
      {"square",
       [](const Tensor& t) {
         return call_t("mul", {T(t), T(t)});
       },
       0},
      {"silu",
       [](const Tensor& t) {
         return call_t("mul", {T(t), T(call_t("sigmoid", {T(t)}))});
       },
       1e-6},
  };
  for (const Decomposition& c : kCases) {
    SCOPED_TRACE(c.op);
    for (Layout layout : kLayouts) {
      const Tensor in = in_layout(x, layout);
      EXPECT_TRUE(close(call_t(c.op, {T(in)}), c.ref(x), c.tol));
    }
  }
}

TEST(BackendConformance, EveryCudaKernelAgreesWithTheCpu) {
  if (!device_available(Device::cuda())) GTEST_SKIP() << "no CUDA device on this machine";
  const KernelTable& table = KernelTable::get();
  walk_device(DeviceType::kCuda, [&](const OpDef& op, const Kernel& k, const Args& args,
                                     DType dtype) {
    std::vector<Tensor> want;
    try {
      want = run_kernel(*table.find(op, DeviceType::kCpu), op, args);
    } catch (const Error&) {
      return;
    }
    if (const Supports* s = table.supports(op, DeviceType::kCuda); s && !(*s)(args).empty())
      return;  // a form the cuda kernel declares it does not run
    for (Layout layout : kLayouts) {
      SCOPED_TRACE(static_cast<int>(layout));
      Args dargs = with_layout(args, layout);
      for (Value& v : dargs)
        if (v.is_tensor()) v = Value::from_tensor(v.tensor.to_device(Device::cuda()));
      std::vector<Tensor> got;
      for (const Tensor& m : op.infer(args))
        got.push_back(Tensor::empty(m.shape(), m.dtype(), Device::cuda()));
      k(dargs, got, KernelContext{});
      for (size_t i = 0; i < got.size(); ++i)
        // At the result's dtype: cos of an int64 tensor is float32 math (CUDA's cosf is
        // within 2 ulp, not correctly rounded like the cpu's).
        EXPECT_TRUE(close(got[i].to_device(Device::cpu()), want[i],
                          std::max(device_tolerance(dtype), device_tolerance(want[i].dtype()))));
    }
  });
}

}  // namespace
}  // namespace inplace
