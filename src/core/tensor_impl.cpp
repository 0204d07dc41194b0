#include "ember/core/tensor_impl.h"
#include "ember/core/errors.h"

namespace ember {

Shape contiguous_strides(IntArrayRef sizes) {
  Shape st(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = s;
    s *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return st;
}

int64_t shape_numel(IntArrayRef sizes) {
  int64_t n = 1;
  for (auto s : sizes) n *= s;
  return n;
}

TensorImpl::TensorImpl(StoragePtr storage, DType dtype, Shape sizes, Shape strides, int64_t offset)
    : storage_(std::move(storage)), sizes_(std::move(sizes)), strides_(std::move(strides)),
      offset_(offset), dtype_(dtype), version_(std::make_shared<VersionCounter>()) {
  refresh();
}

void TensorImpl::set_geometry(Shape sizes, Shape strides, int64_t offset) {
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  offset_ = offset;
  refresh();
}

void TensorImpl::set_data_from(const TensorImpl& src) {
  storage_ = src.storage_;
  dtype_ = src.dtype_;
  wrapped_number_ = false;
  view_base_ = nullptr;  // the new data is not a window of this impl's old base
  set_geometry(src.sizes_, src.strides_, src.offset_);
}

void TensorImpl::throw_no_data() const {
  if (device().is_meta())
    throw NotImplementedError("Cannot access data of a meta tensor: it has sizes and a dtype but no data "
                              "(give the module real tensors with to_empty() or load_state_dict(assign=True))");
  throw Error("this tensor's storage has been freed: it is a view of a sharded parameter (FSDP) used outside "
              "its unit's forward and backward; read the module's parameters through state_dict() or "
              "summon_full_params() instead");
}

void TensorImpl::refresh() {
  numel_ = shape_numel(sizes_);
  // Contiguous: row-major, ignoring strides of size-1 dims (as PyTorch does).
  is_contiguous_ = true;
  int64_t expected = 1;
  for (size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] == 1) continue;
    if (strides_[i] != expected) { is_contiguous_ = false; break; }
    expected *= sizes_[i];
  }
  if (numel_ == 0) is_contiguous_ = true;
}

}  // namespace ember
