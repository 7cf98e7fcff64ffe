#include "ops/schema.h"

#include <cctype>
#include <cmath>
#include <sstream>

#include "core/error.h"

namespace inplace {

std::string ArgSpec::base_type() const {
  std::string t = type;
  if (!t.empty() && t.back() == '?') t.pop_back();
  size_t lb = t.find('[');
  if (lb != std::string::npos) t = t.substr(0, lb) + "[]";
  return t;
}

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// Splits on commas at bracket depth 0.
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

Value parse_default(const std::string& text, const std::string& schema) {
  std::string t = trim(text);
  if (t == "None") return Value::none();
  if (t == "True") return Value::boolean(true);
  if (t == "False") return Value::boolean(false);
  if (t == "inf") return Value::floating(INFINITY);
  if (!t.empty() && (t[0] == '\'' || t[0] == '"')) return Value::string(t.substr(1, t.size() - 2));
  if (!t.empty() && t[0] == '[') {
    std::vector<Value> items;
    for (const auto& p : split_top(t.substr(1, t.size() - 2)))
      items.push_back(parse_default(p, schema));
    return Value::list(items);
  }
  if (t == "contiguous_format" || t == "strided") return Value::none();
  try {
    size_t pos = 0;
    if (t.find_first_of(".e") != std::string::npos && t.find("0x") == std::string::npos) {
      double d = std::stod(t, &pos);
      if (pos == t.size()) return Value::floating(d);
    } else {
      long long v = std::stoll(t, &pos);
      if (pos == t.size()) return Value::integer(v);
    }
  } catch (const std::exception&) {
  }
  IP_FAIL(kParse, "[schema] cannot parse default '", t, "' in '", schema, "'");
}

// "Tensor(a!)" -> type Tensor, alias a, writes ; "Tensor(a)[]" kept as type "Tensor[]".
void parse_type(std::string t, std::string* type, std::string* alias, bool* writes) {
  size_t lp = t.find('(');
  if (lp != std::string::npos) {
    size_t rp = t.find(')', lp);
    std::string ann = t.substr(lp + 1, rp - lp - 1);
    *writes = !ann.empty() && ann.back() == '!';
    if (*writes) ann.pop_back();
    *alias = ann;
    t = t.substr(0, lp) + t.substr(rp + 1);
  }
  *type = t;
}

}  // namespace

Schema Schema::parse(const std::string& text) {
  Schema s;
  size_t lp = text.find('('), arrow = text.rfind("->");
  IP_CHECK(lp != std::string::npos && arrow != std::string::npos && arrow > lp, kParse,
           "[schema] malformed schema '", text, "'");
  std::string name = trim(text.substr(0, lp));
  size_t dot = name.find('.');
  s.name = name.substr(0, dot);
  if (dot != std::string::npos) s.overload = name.substr(dot + 1);
  size_t rp = text.rfind(')', arrow);
  bool kw = false;
  for (const auto& a : split_top(text.substr(lp + 1, rp - lp - 1))) {
    if (a == "*") {
      kw = true;
      continue;
    }
    ArgSpec spec;
    spec.kwarg_only = kw;
    std::string decl = a;
    size_t eq = decl.find('=');
    if (eq != std::string::npos) {
      spec.default_value = parse_default(decl.substr(eq + 1), text);
      decl = trim(decl.substr(0, eq));
    }
    size_t sp = decl.find_last_of(' ');
    IP_CHECK(sp != std::string::npos, kParse, "[schema] argument '", a, "' has no name in '", text,
             "'");
    parse_type(trim(decl.substr(0, sp)), &spec.type, &spec.alias_set, &spec.writes);
    spec.name = trim(decl.substr(sp + 1));
    if (!spec.default_value && spec.optional_type()) spec.default_value = Value::none();
    s.args.push_back(std::move(spec));
  }
  std::string rets = trim(text.substr(arrow + 2));
  if (!rets.empty() && rets.front() == '(') rets = rets.substr(1, rets.size() - 2);
  if (rets != "()" && !rets.empty()) {
    for (const auto& r : split_top(rets)) {
      ReturnSpec spec;
      std::string t = r;
      size_t sp = t.find(' ');
      if (sp != std::string::npos) t = t.substr(0, sp);  // named returns: "Tensor values"
      parse_type(t, &spec.type, &spec.alias_set, &spec.writes);
      if (spec.type != "()") s.returns.push_back(spec);
    }
  }
  return s;
}

std::string Schema::to_string() const {
  std::ostringstream os;
  os << full_name() << "(";
  bool kw = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (i) os << ", ";
    if (a.kwarg_only && !kw) {
      os << "*, ";
      kw = true;
    }
    std::string t = a.type;
    if (!a.alias_set.empty()) {
      size_t br = t.find_first_of("[?");
      std::string ann = "(" + a.alias_set + (a.writes ? "!" : "") + ")";
      t = br == std::string::npos ? t + ann : t.substr(0, br) + ann + t.substr(br);
    }
    os << t << " " << a.name;
    if (a.default_value && !(a.optional_type() && a.default_value->is_none()))
      os << "=" << a.default_value->to_string();
    else if (a.default_value)
      os << "=None";
  }
  os << ") -> ";
  if (returns.size() != 1) os << "(";
  for (size_t i = 0; i < returns.size(); ++i) {
    const auto& r = returns[i];
    os << (i ? ", " : "") << r.type;
    if (!r.alias_set.empty()) os << "(" << r.alias_set << (r.writes ? "!" : "") << ")";
  }
  if (returns.size() != 1) os << ")";
  return os.str();
}

int Schema::index_of(const std::string& n) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == n) return static_cast<int>(i);
  return -1;
}

std::vector<int> Schema::mutated_args() const {
  std::vector<int> out;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].writes) out.push_back(static_cast<int>(i));
  return out;
}

int Schema::aliased_arg_of_return(size_t r) const {
  if (r >= returns.size() || returns[r].alias_set.empty()) return -1;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].alias_set == returns[r].alias_set) return static_cast<int>(i);
  return -1;
}

bool Schema::is_view() const {
  for (size_t r = 0; r < returns.size(); ++r) {
    int a = aliased_arg_of_return(r);
    if (a >= 0 && !args[a].writes) return true;
  }
  return false;
}

}  // namespace inplace
