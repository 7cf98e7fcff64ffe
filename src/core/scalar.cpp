#include "core/scalar.h"

#include <cmath>
#include <sstream>

namespace inplace {

std::string Scalar::to_string() const {
  if (kind_ == Kind::kBool) return i_ ? "True" : "False";
  if (kind_ == Kind::kInt) return std::to_string(i_);
  if (std::isinf(f_)) return f_ > 0 ? "inf" : "-inf";
  if (std::isnan(f_)) return "nan";
  std::ostringstream os;
  os.precision(17);
  os << f_;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace inplace
