#include "random_program.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "ir/builder.h"
#include "ops/index_spec.h"

namespace inplace::testing {

namespace {

struct Live {
  Node* node = nullptr;
  Tensor meta;  // shape, dtype, strides and offset within its root's storage
  int root = 0;
  bool writable = true;    // false for views that repeat elements (expand)
  bool root_level = true;  // the whole root, contiguous (as_strided may start here)
};

class Generator {
 public:
  Generator(uint64_t seed, const RandomProgramOptions& options)
      : rng_(seed), options_(options), b_("random_" + std::to_string(seed)) {}

  RandomProgram build(uint64_t seed) {
    int n_inputs = uniform(1, 2);
    for (int i = 0; i < n_inputs; ++i) add_root_input(random_shape(1, 3), DType::kFloat32);
    if (chance(0.15)) add_root_input(random_shape(1, 2), DType::kInt64);
    if (options_.buffers && chance(0.4)) add_buffer(random_shape(1, 3));
    int n_ops = uniform(options_.min_ops, options_.max_ops);
    for (int i = 0; i < n_ops; ++i) step();
    // Outputs: a few live values, read at the end.
    std::vector<Arg> outs;
    int n_out = uniform(1, std::min<int>(4, static_cast<int>(live_.size())));
    for (int i = 0; i < n_out; ++i) outs.push_back(live_[pick(live_.size())].node);
    for (Node* s : snapshots_) outs.push_back(s);
    if (options_.runtime_positions && chance(0.5)) outs.push_back(prefix_read());
    b_.output(arg::tuple(outs));
    RandomProgram p;
    p.seed = seed;
    p.graph = b_.build();
    p.inputs = std::move(inputs_);
    p.valid_positions = std::move(valid_);
    p.invalid_positions = std::move(invalid_);
    return p;
  }

  // v[:n] * 2 for a runtime n: a result whose size changes per call (every n is valid).
  Node* prefix_read() {
    std::vector<Live*> c = candidates(false, 1);
    if (c.empty()) return live_[0].node;
    const Live& v = *c[pick(c.size())];
    int64_t size = v.meta.size(0);
    std::vector<int64_t> all;
    for (int64_t i = -size - 2; i <= size + 2; ++i) all.push_back(i);
    Arg n = position(uniform(0, static_cast<int>(size)), all, {}, /*always=*/true);
    Node* prefix = b_.call_function("_operator.getitem", {v.node, arg::slice(nullptr, n)});
    return b_.call_function("torch.mul", {prefix, 2});
  }

  // `value` as a constant, or (runtime_positions) as a 0-dim int64 input whose later draws
  // come from `valid` (and `invalid`).
  Arg position(int64_t value, std::vector<int64_t> valid, std::vector<int64_t> invalid,
               bool always = false) {
    if (!options_.runtime_positions || !(always || chance(0.5))) return value;
    Node* n = new_input("n", Tensor::scalar(value, DType::kInt64));
    valid_[n->name] = std::move(valid);
    invalid_[n->name] = std::move(invalid);
    return n;
  }
  static std::vector<int64_t> range(int64_t lo, int64_t hi) {
    std::vector<int64_t> r;
    for (int64_t i = lo; i <= hi; ++i) r.push_back(i);
    return r;
  }

 private:
  // ---- randomness ----
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  size_t pick(size_t n) { return static_cast<size_t>(uniform(0, static_cast<int>(n) - 1)); }
  double real() { return std::round(std::uniform_real_distribution<double>(-4, 4)(rng_) * 8) / 8; }
  Shape random_shape(int min_rank, int max_rank) {
    Shape s(uniform(min_rank, max_rank));
    for (auto& d : s) d = uniform(1, 5);
    return s;
  }
  Tensor random_tensor(const Shape& shape, DType dtype) {
    Tensor t = Tensor::empty(shape, DType::kFloat64);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<double>()[i] = dtype == DType::kFloat32 ? real() : uniform(-5, 5);
    return t.to(dtype);
  }

  // ---- values ----
  Node* new_input(const std::string& prefix, Tensor value) {
    std::string name = prefix + std::to_string(next_name_++);
    Node* n = b_.placeholder(name);
    inputs_[name] = std::move(value);
    return n;
  }
  void add_root_input(const Shape& shape, DType dtype) {
    Node* n = new_input("x", random_tensor(shape, dtype));
    add_root(n, shape, dtype);
  }
  void add_buffer(const Shape& shape) {
    Node* n = b_.get_attr("buf", random_tensor(shape, DType::kFloat32));
    add_root(n, shape, DType::kFloat32);
  }
  void add_root(Node* n, const Shape& shape, DType dtype) {
    Live l;
    l.node = n;
    l.meta = Tensor::meta(shape, dtype);
    l.root = next_root_++;
    live_.push_back(l);
  }
  void add_view(const Live& parent, Node* n, Tensor meta, bool writable = true) {
    Live l;
    l.node = n;
    l.meta = std::move(meta);
    l.root = parent.root;
    l.writable = parent.writable && writable;
    l.root_level = false;
    live_.push_back(l);
  }
  // An operand of `shape` (or broadcastable to it) from storage other than `root`.
  Arg operand(const Shape& shape, int root, DType dtype = DType::kFloat32) {
    std::vector<const Live*> same;
    for (const Live& l : live_)
      if (l.root != root && l.meta.shape() == shape && l.meta.dtype() == dtype) same.push_back(&l);
    if (!same.empty() && chance(0.5)) return same[pick(same.size())]->node;
    Shape s = shape;
    if (chance(0.4)) {
      // Broadcastable: drop leading dims or set some to 1.
      size_t drop = pick(s.size() + 1);
      s.erase(s.begin(), s.begin() + static_cast<long>(drop));
      for (auto& d : s)
        if (chance(0.3)) d = 1;
    }
    return new_input("o", random_tensor(s, dtype));
  }
  std::vector<Live*> candidates(bool writable, int min_dim = 0, bool float_only = false) {
    std::vector<Live*> out;
    for (Live& l : live_)
      if ((!writable || l.writable) && l.meta.dim() >= min_dim &&
          (!float_only || l.meta.dtype() == DType::kFloat32))
        out.push_back(&l);
    return out;
  }

  // ---- steps ----
  void step() {
    int kind = uniform(0, 99);
    if (kind < 38) return view_step();
    if (kind < 93) {
      // A write, then maybe a snapshot of some alias: what it holds right after.
      if (kind < 58)
        arith_step();
      else if (kind < 78)
        setitem_step();
      else if (kind < 88)
        copy_fill_step();
      else
        index_put_step();
      if (chance(0.5)) snapshot();
      return;
    }
    return read_step();
  }

  // clone() of a random live value: a fresh tensor the program returns, so the check sees
  // every value between writes, not only the final ones.
  void snapshot() {
    if (snapshots_.size() >= 6) return;
    const Live& v = live_[pick(live_.size())];
    snapshots_.push_back(b_.call_method("clone", {v.node}, {}, "snapshot"));
  }

  void read_step() {
    Live src = live_[pick(live_.size())];
    Node* n;
    Tensor meta;
    switch (uniform(0, 3)) {
      case 0:
        n = b_.call_method("clone", {src.node});
        break;
      case 1:
        n = b_.call_function("torch.mul", {src.node, 2});
        break;
      case 2: {
        // reshape views when the strides allow, else copies; without shapes the passes assume
        // a view.
        bool viewable = true;
        Tensor r;
        try {
          r = src.meta.view({-1});
        } catch (const Error&) {
          viewable = false;
        }
        if (!viewable && options_.shape_free) return;
        n = b_.call_method("reshape", {src.node, -1});
        if (viewable)
          add_view(src, n, r);
        else
          add_root(n, {src.meta.numel()}, src.meta.dtype());
        return;
      }
      default:
        n = b_.call_function("torch.neg", {src.node});
        break;
    }
    add_root(n, src.meta.shape(), src.meta.dtype());
  }

  void view_step() {
    Live v = live_[pick(live_.size())];
    const Tensor& m = v.meta;
    int64_t d = m.dim();
    auto dim = [&] {
      return static_cast<int64_t>(uniform(static_cast<int>(-d), static_cast<int>(d - 1)));
    };
    switch (uniform(0, 16)) {
      case 0:
        if (d >= 2) {
          int64_t a = dim(), c = dim();
          add_view(v, b_.call_method("transpose", {v.node, a, c}), m.transpose(a, c));
          return;
        }
        break;
      case 1:
        if (d >= 2) {
          std::vector<int64_t> perm(d);
          std::iota(perm.begin(), perm.end(), 0);
          std::shuffle(perm.begin(), perm.end(), rng_);
          std::vector<Arg> args{v.node};
          for (int64_t p : perm) args.push_back(p);
          add_view(v, b_.call_method("permute", args), m.permute(perm));
          return;
        }
        break;
      case 2:
        if (d >= 1 && d <= 2) {
          add_view(v, b_.call_method("t", {v.node}), m.t());
          return;
        }
        break;
      case 3:
        if (d >= 1 && m.numel() > 0) {
          int64_t a = dim(), size = m.size(a);
          int64_t i = uniform(static_cast<int>(-size), static_cast<int>(size - 1));
          Arg index = position(i, range(-size, size - 1), {size, -size - 1, size + 3});
          add_view(v, b_.call_method("select", {v.node, a, index}), m.select(a, i));
          return;
        }
        break;
      case 4:
        if (d >= 1) {
          int64_t a = dim(), size = m.size(a);
          int64_t start = uniform(0, static_cast<int>(size)),
                  end = uniform(static_cast<int>(start), static_cast<int>(size));
          int64_t st = uniform(1, 2);
          add_view(v, b_.call_function("aten.slice.Tensor", {v.node, a, start, end, st}),
                   m.slice(a, start, end, st));
          return;
        }
        break;
      case 5:
        if (d >= 1) {
          int64_t a = dim(), size = m.size(a);
          int64_t start = uniform(0, static_cast<int>(size)),
                  len = uniform(0, static_cast<int>(size - start));
          std::vector<int64_t> valid = range(0, size - len), invalid{size - len + 1, -size - 1};
          if (len > 0)
            for (int64_t x : range(-size, -len)) valid.push_back(x);
          Arg st = position(start, valid, invalid);
          add_view(v, b_.call_method("narrow", {v.node, a, st, len}), m.narrow(a, start, len));
          return;
        }
        break;
      case 6:
        if (d >= 2) {
          int64_t a = uniform(0, static_cast<int>(d - 1)), c;
          do c = uniform(0, static_cast<int>(d - 1));
          while (c == a);
          int64_t off = uniform(-1, 1);
          add_view(v, b_.call_method("diagonal", {v.node, off, a, c}), m.diagonal(off, a, c));
          return;
        }
        break;
      case 7: {
        int64_t a = uniform(static_cast<int>(-d - 1), static_cast<int>(d));
        add_view(v, b_.call_method("unsqueeze", {v.node, a}), m.unsqueeze(a));
        return;
      }
      case 8:
        for (int64_t a = 0; a < d; ++a)
          if (m.size(a) == 1) {
            add_view(v, b_.call_method("squeeze", {v.node, a}), m.squeeze({a}));
            return;
          }
        break;
      case 9:
        if (m.is_contiguous()) {
          add_view(v, b_.call_method("view", {v.node, -1}), m.view({-1}));
          return;
        }
        break;
      case 10: {
        // expand: a read-only view (writes through it would repeat elements).
        Shape s = m.shape();
        for (auto& x : s)
          if (x == 1 && chance(0.5)) x = uniform(2, 3);
        if (chance(0.3)) s.insert(s.begin(), 2);
        add_view(v, b_.call_method("expand", {v.node, arg::ints(s)}), m.expand(s), false);
        return;
      }
      case 11:
        return getitem_view(v);
      case 12:
        if (d >= 1) {
          int64_t a = dim(), size = m.size(a);
          int kind = uniform(0, options_.shape_free ? 1 : 2);
          if (kind == 0) {
            int64_t s = uniform(1, static_cast<int>(std::max<int64_t>(size, 1)));
            Node* parts = b_.call_method("split", {v.node, s, a});
            auto pieces = m.split(s, a);
            if (pieces.empty()) break;
            size_t k = pick(pieces.size());
            add_view(v, b_.call_function("_operator.getitem", {parts, static_cast<int64_t>(k)}),
                     pieces[k]);
          } else if (kind == 1) {
            Node* parts = b_.call_method("unbind", {v.node, a});
            auto pieces = m.unbind(a);
            if (pieces.empty()) break;
            size_t k = pick(pieces.size());
            add_view(v, b_.call_function("_operator.getitem", {parts, static_cast<int64_t>(k)}),
                     pieces[k]);
          } else {
            int64_t c = uniform(1, 3);
            Node* parts = b_.call_method("chunk", {v.node, c, a});
            auto pieces = m.chunk(c, a);
            if (pieces.empty()) break;
            size_t k = pick(pieces.size());
            add_view(v, b_.call_function("_operator.getitem", {parts, static_cast<int64_t>(k)}),
                     pieces[k]);
          }
          return;
        }
        break;
      case 13:
        if (v.root_level && m.numel() > 0) {
          int64_t n = m.numel();
          int64_t stride = uniform(1, 3);
          int64_t offset = uniform(0, static_cast<int>(n - 1));
          int64_t count = uniform(1, static_cast<int>((n - 1 - offset) / stride + 1));
          add_view(v,
                   b_.call_function("torch.as_strided",
                                    {v.node, arg::ints({count}), arg::ints({stride}), offset}),
                   m.as_strided({count}, {stride}, offset));
          return;
        }
        break;
      case 14:
        if (d >= 2) {
          int64_t a = dim(), c = dim();
          Tensor r = m.permute(movedim_perm(a, c, d));
          add_view(v, b_.call_method("movedim", {v.node, a, c}), r);
          return;
        }
        break;
      case 15:
        add_view(v, b_.call_method(chance(0.5) ? "detach" : "alias", {v.node}), m);
        return;
      default:
        if (m.is_contiguous()) {
          add_view(v, b_.call_method("contiguous", {v.node}), m);
        } else if (!options_.shape_free) {  // a copy: only shapes tell the passes so
          Node* n = b_.call_method("contiguous", {v.node});
          add_root(n, m.shape(), m.dtype());
        }
        return;
    }
    // Nothing fitted this value: take a plain alias instead.
    add_view(v, b_.call_method("alias", {v.node}), m);
  }

  static std::vector<int64_t> movedim_perm(int64_t src, int64_t dst, int64_t ndim) {
    src = (src + ndim) % ndim;
    dst = (dst + ndim) % ndim;
    std::vector<int64_t> order;
    for (int64_t i = 0; i < ndim; ++i)
      if (i != src) order.push_back(i);
    order.insert(order.begin() + dst, src);
    return order;
  }

  // A random basic index (ints, slices, None, Ellipsis) for a tensor of this shape. Int
  // entries may be runtime positions; `probe` gets the same index with their example values.
  Value basic_index(const Tensor& m, Value* probe, bool allow_single = true) {
    std::vector<Arg> probe_items;
    int64_t d = m.dim();
    std::vector<Arg> items;
    bool ellipsis = false;
    int64_t dims_left = d;
    int n = uniform(allow_single ? 1 : 2, static_cast<int>(std::max<int64_t>(d, 1)) + 1);
    int64_t pos = 0;
    for (int i = 0; i < n; ++i) {
      int kind = uniform(0, 9);
      if (kind == 0 && !ellipsis) {
        items.push_back(arg::ellipsis());
        probe_items.push_back(arg::ellipsis());
        ellipsis = true;
        // The rest index the trailing dims: skip ahead.
        int64_t remaining = n - i - 1;
        pos = std::max<int64_t>(pos, d - remaining);
        continue;
      }
      if (kind == 1) {
        items.push_back(nullptr);
        probe_items.push_back(nullptr);
        continue;
      }
      if (dims_left == 0 || pos >= d) break;
      int64_t size = m.size(pos);
      if (kind <= 4 && size > 0) {
        int64_t i = uniform(static_cast<int>(-size), static_cast<int>(size - 1));
        items.push_back(position(i, range(-size, size - 1), {size, -size - 1}));
        probe_items.push_back(i);
      } else {
        Arg start = chance(0.3) ? Arg(nullptr)
                                : Arg(static_cast<int64_t>(uniform(static_cast<int>(-size - 1),
                                                                   static_cast<int>(size))));
        Arg stop = chance(0.3) ? Arg(nullptr)
                               : Arg(static_cast<int64_t>(
                                     uniform(static_cast<int>(-size), static_cast<int>(size + 1))));
        Arg stepv = chance(0.6) ? Arg(nullptr) : Arg(static_cast<int64_t>(uniform(1, 3)));
        items.push_back(arg::slice(start, stop, stepv));
        probe_items.push_back(arg::slice(start, stop, stepv));
      }
      ++pos;
      --dims_left;
    }
    if (items.size() == 1 && chance(0.5)) {
      *probe = probe_items[0].value;
      return items[0].value;
    }
    *probe = arg::tuple(probe_items);
    return arg::tuple(items);
  }

  void getitem_view(const Live& v) {
    Value probe;
    Value idx = basic_index(v.meta, &probe);
    Tensor r;
    try {
      r = getitem_tensor(v.meta, probe);
    } catch (const Error&) {
      return;
    }
    add_view(v, b_.call_function("_operator.getitem", {v.node, idx}), r);
  }

  void arith_step() {
    auto c = candidates(true);
    if (c.empty()) return;
    Live& v = *c[pick(c.size())];
    bool is_float = v.meta.dtype() == DType::kFloat32;
    const Shape& s = v.meta.shape();
    switch (uniform(0, 6)) {
      case 0:
        b_.call_method("add_", {v.node, is_float ? Arg(real()) : Arg(uniform(-3, 3))});
        return;
      case 1:
        b_.call_method("mul_", {v.node, operand(s, v.root, v.meta.dtype())});
        return;
      case 2:
        b_.call_method("sub_", {v.node, operand(s, v.root, v.meta.dtype())}, {{"alpha", 2}});
        return;
      case 3:
        b_.call_method("clamp_", {v.node}, {{"min", is_float ? Arg(real()) : Arg(-1)}});
        return;
      case 4:
        b_.call_method(chance(0.5) ? "ge_" : "lt_", {v.node, operand(s, v.root, v.meta.dtype())});
        return;
      case 5: {
        Node* mask = b_.call_function("torch.gt", {operand(s, v.root, v.meta.dtype()), 0});
        b_.call_method("masked_fill_", {v.node, mask, is_float ? Arg(real()) : Arg(7)});
        return;
      }
      default: {
        // Through the result of an earlier in-place op: its value follows later writes.
        Node* r = b_.call_method("add_", {v.node, 1});
        add_view(v, r, v.meta);
        return;
      }
    }
  }

  // A value for a region of `shape`: a number, or a tensor broadcastable to it.
  Arg fill_value(const Shape& shape, int root, DType dtype) {
    int kind = uniform(0, 4);
    if (kind == 0) return dtype == DType::kFloat32 ? Arg(real()) : Arg(uniform(-5, 5));
    if (kind == 1) return new_input("o", random_tensor(shape, DType::kInt64));  // cast on write
    if (kind == 2 && !options_.shape_free) {
      Shape lead{1};
      lead.insert(lead.end(), shape.begin(), shape.end());
      return new_input("o", random_tensor(lead, dtype));  // leading 1s are dropped
    }
    return operand(shape, root, dtype);
  }

  Tensor index_tensor(int64_t size, int64_t count, bool unique) {
    std::vector<int64_t> vals;
    if (unique) {
      std::vector<int64_t> all(size);
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng_);
      count = std::min(count, size);
      vals.assign(all.begin(), all.begin() + count);
    } else {
      for (int64_t i = 0; i < count; ++i) vals.push_back(uniform(0, static_cast<int>(size - 1)));
    }
    for (auto& x : vals)
      if (chance(0.3)) x -= size;  // negative indices count from the end
    return Tensor::from_vector<int64_t>(vals, {static_cast<int64_t>(vals.size())});
  }

  void setitem_step() {
    auto c = candidates(true, 1);
    if (c.empty()) return;
    Live& v = *c[pick(c.size())];
    const Tensor& m = v.meta;
    Value idx, probe;
    switch (uniform(0, 5)) {
      case 0:
      case 1:
        idx = basic_index(m, &probe);
        break;
      case 2: {
        // A bool mask over the leading dims.
        int64_t k = uniform(1, static_cast<int>(m.dim()));
        Shape ms(m.shape().begin(), m.shape().begin() + k);
        Tensor mask = Tensor::empty(ms, DType::kBool);
        for (int64_t i = 0; i < mask.numel(); ++i) mask.data<bool>()[i] = chance(0.5);
        idx = Value::node_ref(new_input("m", mask));
        Tensor region = getitem_tensor(m, Value::from_tensor(mask));
        Arg value = (options_.shape_free || chance(0.5))
                        ? fill_value(tail(region.shape()), v.root, m.dtype())
                        : operand(region.shape(), v.root, m.dtype());
        b_.call_function("_operator.setitem", {v.node, idx, value});
        return;
      }
      case 3: {
        // An int tensor index, alone or in a tuple with ints and slices on other dims.
        int64_t count = uniform(1, 3);
        int64_t a = m.dim() >= 2 && chance(0.5) ? 1 : 0;
        Tensor it = index_tensor(m.size(a), count, true);
        if (m.size(a) == 0) return;
        Node* in = new_input("i", it);
        std::vector<Arg> items;
        for (int64_t i = 0; i < a; ++i)
          items.push_back(chance(0.5) ? Arg(arg::slice()) : Arg(static_cast<int64_t>(0)));
        items.push_back(in);
        if (m.dim() > a + 1 && chance(0.5))
          items.push_back(static_cast<int64_t>(uniform(0, static_cast<int>(m.size(a + 1) - 1))));
        idx = items.size() == 1 ? Value::node_ref(in) : arg::tuple(items);
        Value probe = substitute(idx, in, it);
        Tensor region;
        try {
          region = getitem_tensor(m, probe);
        } catch (const Error&) {
          return;
        }
        b_.call_function("_operator.setitem",
                         {v.node, idx, fill_value(tail(region.shape()), v.root, m.dtype())});
        return;
      }
      default:
        idx = basic_index(m, &probe);
        break;
    }
    Tensor region;
    try {
      region = getitem_tensor(m, probe);
    } catch (const Error&) {
      return;
    }
    b_.call_function("_operator.setitem",
                     {v.node, idx, fill_value(region.shape(), v.root, m.dtype())});
  }

  // A shape's trailing part (values broadcast over the rest).
  Shape tail(const Shape& s) {
    if (s.empty() || chance(0.5)) return s;
    return Shape(s.begin() + 1, s.end());
  }

  static Value substitute(const Value& idx, Node* n, const Tensor& t) {
    if (idx.is_node() && idx.node == n) return Value::from_tensor(t);
    Value out = idx;
    for (Value& item : out.items) item = substitute(item, n, t);
    return out;
  }

  void copy_fill_step() {
    auto c = candidates(true);
    if (c.empty()) return;
    Live& v = *c[pick(c.size())];
    switch (uniform(0, 3)) {
      case 0:
        b_.call_method("fill_", {v.node, v.meta.dtype() == DType::kFloat32 ? Arg(real()) : Arg(3)});
        return;
      case 1:
        b_.call_method("zero_", {v.node});
        return;
      default: {
        DType dt = chance(0.3) ? DType::kInt64 : v.meta.dtype();
        b_.call_method("copy_", {v.node, operand(v.meta.shape(), v.root, dt)});
        return;
      }
    }
  }

  void index_put_step() {
    auto c = candidates(true, 1, true);
    if (c.empty()) return;
    Live& v = *c[pick(c.size())];
    const Tensor& m = v.meta;
    if (m.size(0) == 0) return;
    bool accumulate = chance(0.5);
    int64_t count = uniform(1, 4);
    Tensor it = index_tensor(m.size(0), count, !accumulate);
    Node* in = new_input("i", it);
    Shape vs{it.numel()};
    vs.insert(vs.end(), m.shape().begin() + 1, m.shape().end());
    Arg values = new_input("o", random_tensor(chance(0.3) ? tail(vs) : vs, DType::kFloat32));
    b_.call_method("index_put_", {v.node, arg::tuple({in}), values}, {{"accumulate", accumulate}});
  }

  std::mt19937_64 rng_;
  RandomProgramOptions options_;
  GraphBuilder b_;
  std::vector<Live> live_;
  std::vector<Node*> snapshots_;
  std::map<std::string, Tensor> inputs_;
  std::map<std::string, std::vector<int64_t>> valid_, invalid_;
  int next_name_ = 0, next_root_ = 0;
};

}  // namespace

RandomProgram make_random_program(uint64_t seed, const RandomProgramOptions& options) {
  return Generator(seed, options).build(seed);
}

std::map<std::string, Tensor> redraw_inputs(const RandomProgram& p, uint64_t seed, double invalid) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : p.inputs) {
    auto valid = p.valid_positions.find(name);
    if (valid != p.valid_positions.end()) {
      const std::vector<int64_t>& bad = p.invalid_positions.at(name);
      bool refuse = !bad.empty() && std::uniform_real_distribution<double>(0, 1)(rng) < invalid;
      const std::vector<int64_t>& from = refuse ? bad : valid->second;
      int64_t v =
          from.empty()
              ? t.item().to_int()
              : from[static_cast<size_t>(uniform(0, static_cast<int64_t>(from.size()) - 1))];
      out[name] = Tensor::scalar(v, DType::kInt64);
      continue;
    }
    // Index tensors ("i") and masks ("m") stay: they were chosen to be valid and unique.
    if (name[0] == 'i' || name[0] == 'm') {
      out[name] = t.clone();
      continue;
    }
    Tensor r = Tensor::empty(t.shape(), DType::kFloat64);
    for (int64_t i = 0; i < r.numel(); ++i)
      r.data<double>()[i] = is_floating(t.dtype()) ? static_cast<double>(uniform(-32, 32)) / 8
                                                   : static_cast<double>(uniform(-5, 5));
    out[name] = r.to(t.dtype());
  }
  return out;
}

std::vector<Tensor> in_placeholder_order(const RandomProgram& p,
                                         const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> v;
  for (Node* n : p.graph->placeholders()) v.push_back(inputs.at(n->name));
  return v;
}

}  // namespace inplace::testing
