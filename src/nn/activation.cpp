#include "ember/nn/activation.h"

#include <sstream>

namespace ember::nn {

namespace {
// Python's repr of a float: 0.01, 1.0, 0.5.
std::string py_float(double v) {
  std::ostringstream os;
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos && s.find("inf") == std::string::npos && s.find("nan") == std::string::npos) s += ".0";
  return s;
}
void check_p(double p) {
  EMBER_CHECK_VALUE(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
}
}  // namespace

std::string LeakyReLU::extra_repr() const { return "negative_slope=" + py_float(negative_slope); }
std::string ELU::extra_repr() const { return "alpha=" + py_float(alpha); }
std::string Softplus::extra_repr() const { return "beta=" + py_float(beta) + ", threshold=" + py_float(threshold); }

Dropout::Dropout(double p) : p(p) { check_p(p); }
std::string Dropout::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }
Dropout2d::Dropout2d(double p) : p(p) { check_p(p); }
std::string Dropout2d::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }

}  // namespace ember::nn
