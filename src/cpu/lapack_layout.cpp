// Moving batches of matrices between ember's row-major tensors and LAPACK's column-major
// buffers (src/cpu/lapack.h).
#include "cpu/lapack.h"

#include "ember/ops.h"

namespace ember::cpu::lapack {

Shape batch_shape(const Tensor& a) { return Shape(a.sizes().begin(), a.sizes().end() - 2); }

ColumnMajor column_major(const Tensor& a) {
  ColumnMajor m;
  m.rows = a.size(-2);
  m.cols = a.size(-1);
  Tensor t = a.mT();
  // contiguous() returns t itself when a is already column-major: LAPACK must not write there.
  m.buf = t.is_contiguous() ? t.clone() : t.contiguous();
  m.batch = shape_numel(batch_shape(a));
  return m;
}

ColumnMajor column_major_empty(IntArrayRef batch, int64_t rows, int64_t cols, DType dtype) {
  ColumnMajor m;
  m.rows = rows;
  m.cols = cols;
  Shape shape(batch.begin(), batch.end());
  shape.push_back(cols);
  shape.push_back(rows);
  m.buf = empty(shape, {.dtype = dtype, .device = Device(DeviceType::CPU)});
  m.batch = shape_numel(Shape(batch.begin(), batch.end()));
  return m;
}

Tensor row_major(const ColumnMajor& m) { return m.buf.mT().contiguous(); }

}  // namespace ember::cpu::lapack
