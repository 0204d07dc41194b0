#include <omp.h>

#include "ember/core/errors.h"
#include "ember/ops.h"

extern "C" void openblas_set_num_threads(int);

namespace ember {

void set_num_threads(int n) {
  EMBER_CHECK_VALUE(n > 0, "set_num_threads expects a positive integer, got ", n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int get_num_threads() { return omp_get_max_threads(); }

}  // namespace ember
