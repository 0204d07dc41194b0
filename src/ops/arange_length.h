#pragma once
// arange's checks and element count, one definition for every backend (CPU, CUDA, meta).
#include <cmath>

#include "ember/core/dtype.h"
#include "ember/core/errors.h"
#include "ember/core/scalar.h"

namespace ember {

// torch's count: ceil((end - start) / step) in double when anything is floating, exact integer
// division otherwise (a double would round ranges past 2^53).
inline int64_t arange_length(const Scalar& start, const Scalar& end, const Scalar& step, DType dt) {
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  EMBER_CHECK(st != 0, "step must be nonzero");
  EMBER_CHECK(std::isfinite(s) && std::isfinite(e), "unsupported range: ", start.str(), " -> ", end.str());
  EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "upper bound and larger bound inconsistent with step sign");
  if (is_floating(dt) || start.is_floating() || end.is_floating() || step.is_floating())
    return int64_t(std::ceil((e - s) / st));
  const int64_t is = start.to_int(), ie = end.to_int(), ist = step.to_int();
  return ist > 0 ? (ie - is + ist - 1) / ist : (is - ie + (-ist) - 1) / (-ist);
}

}  // namespace ember
