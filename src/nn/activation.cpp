#include "nn/repr.h"
#include "ember/nn/activation.h"

#include <sstream>

namespace ember::nn {

namespace {
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
