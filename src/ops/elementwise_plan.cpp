// ElementwisePlan: broadcasting, promotion, outputs and merged geometry, shared by every
// backend's elementwise engine (see ops/elementwise_plan.h).
#include "ops/elementwise_plan.h"

#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/promotion.h"

namespace ember {

ElementwisePlan::ElementwisePlan(std::vector<Tensor> outputs, std::vector<Tensor> inputs, const IterConfig& cfg) {
  noutputs_ = int(outputs.size());
  ntensors_ = noutputs_ + int(inputs.size());
  EMBER_CHECK(ntensors_ <= kMaxIterOperands, cfg.op_name, ": too many operands");

  // 1. The broadcast shape of the inputs; a given output must already have it.
  shape_.clear();
  bool first = true;
  for (const auto& in : inputs) {
    EMBER_CHECK(in.defined(), cfg.op_name, ": got an undefined tensor as input");
    if (first) { shape_ = in.sizes(); first = false; }
    else if (!(IntArrayRef(shape_) == IntArrayRef(in.sizes()))) shape_ = broadcast_shapes(shape_, in.sizes());
  }
  for (const auto& out : outputs) {
    if (!out.defined()) continue;
    if (inputs.empty()) { shape_ = out.sizes(); continue; }
    // Inputs may broadcast up to a given output, never the other way round.
    bool ok = IntArrayRef(out.sizes()) == IntArrayRef(shape_);
    if (!ok) {
      try { ok = IntArrayRef(broadcast_shapes(shape_, out.sizes())) == IntArrayRef(out.sizes()); }
      catch (const Error&) { ok = false; }
    }
    EMBER_CHECK(ok, "output with shape ", out.sizes(), " doesn't match the broadcast shape ",
                (IntArrayRef(out.sizes()) == IntArrayRef(shape_) ? shape_ : [&] {
                  try { return broadcast_shapes(shape_, out.sizes()); } catch (const Error&) { return shape_; }
                }()));
    shape_ = out.sizes();
  }
  EMBER_CHECK(int(shape_.size()) <= kMaxIterDims, cfg.op_name, ": tensors with more than 16 dimensions are not supported");
  numel_ = shape_numel(shape_);

  // 2. Dtypes: the promoted common dtype, what the loop computes in, and the result dtype.
  DType common;
  if (cfg.compute_dtype) {
    common = *cfg.compute_dtype;
  } else {
    common = compute_result_type(inputs);
    if (cfg.int_to_float && !is_floating_or_complex(common)) common = default_dtype();
  }
  DType result_dtype = cfg.output_dtype ? *cfg.output_dtype : common;
  compute_dtype_ = (cfg.upcast_reduced_float && is_reduced_float(common)) ? DType::Float32 : common;
  DType loop_out_dtype =
      (cfg.upcast_reduced_float && is_reduced_float(result_dtype)) ? DType::Float32 : result_dtype;

  // 3. Outputs: allocate, or check and (if the loop writes another dtype) stage in a temporary.
  // New outputs go where the tensor operands are: a host 0-dim input (a Python number) next to
  // a device tensor does not pull the result onto the host.
  std::optional<Device> input_device;
  for (const auto& in : inputs)
    if (!input_device || (input_device->is_cpu() && !(in.is_cpu() && in.dim() == 0))) input_device = in.device();
  for (int i = 0; i < noutputs_; ++i) {
    Operand& op = ops_[i];
    Tensor& out = outputs[i];
    Device dev = input_device ? *input_device : out.device();
    if (!out.defined()) {
      op.original = empty(shape_, {.dtype = result_dtype, .device = dev});
    } else {
      EMBER_CHECK(can_cast(result_dtype, out.dtype()), "result type ", dtype_name(result_dtype),
                  " can't be cast to the desired output type ", dtype_name(out.dtype()));
      op.original = out;
    }
    const bool convert_in_loop =
        cfg.reduced_in_loop && compute_dtype_ == DType::Float32 && is_reduced_float(op.original.dtype());
    if (cfg.cast_in_loop || convert_in_loop) {
      op.tensor = op.original;
    } else {
      op.tensor = op.original.dtype() == loop_out_dtype
                      ? op.original
                      : empty(shape_, {.dtype = loop_out_dtype, .device = dev});
    }
    op.dtype = op.tensor.dtype();
  }
  // 4. Inputs, cast to the compute dtype where the op asks for it.
  for (size_t j = 0; j < inputs.size(); ++j) {
    Operand& op = ops_[noutputs_ + j];
    const Tensor& in = inputs[j];
    const bool convert_in_loop = cfg.reduced_in_loop && compute_dtype_ == DType::Float32 && is_reduced_float(in.dtype());
    if (cfg.cast_inputs && !cfg.cast_in_loop && !convert_in_loop && in.dtype() != compute_dtype_) {
      // A 0-dim host operand (usually a wrapped Python number) converts without a kernel, and
      // stays on the host (not on the default device, which may be a GPU).
      op.tensor = (in.dim() == 0 && in.is_cpu()) ? scalar_tensor(in.item(), {.dtype = compute_dtype_, .device = Device(DeviceType::CPU)})
                                                 : in.to(compute_dtype_);
    } else {
      op.tensor = in;
    }
    op.original = in;
    op.dtype = op.tensor.dtype();
  }

  if (cfg.shapes_only) return;

  // 5. Geometry. Fast path: every operand dense with the full shape.
  bool all_dense = true;
  for (int i = 0; i < ntensors_; ++i) {
    const Tensor& t = ops_[i].tensor;
    ops_[i].data = static_cast<char*>(t.data_ptr());
    if (!(t.is_contiguous() && IntArrayRef(t.sizes()) == IntArrayRef(shape_))) all_dense = false;
  }
  if (all_dense || numel_ <= 1) {
    contiguous_ = all_dense;
    if (all_dense) return;
  }
  // Byte strides per operand, inner dim first, 0 along broadcast dims; size-1 dims dropped.
  int nd = int(shape_.size());
  ndim_ = 0;
  for (int d = nd - 1; d >= 0; --d) {
    if (shape_[d] == 1) continue;
    iter_shape_[ndim_] = shape_[d];
    for (int i = 0; i < ntensors_; ++i) {
      const Tensor& t = ops_[i].tensor;
      int td = d - (nd - int(t.dim()));
      int64_t st = (td < 0 || t.sizes()[td] == 1) ? 0 : t.strides()[td] * element_size(ops_[i].dtype);
      ops_[i].strides[ndim_] = st;
    }
    ++ndim_;
  }
  // Merge neighbours that every operand walks as one run.
  int merged = 0;
  for (int d = 1; d < ndim_; ++d) {
    bool can = true;
    for (int i = 0; i < ntensors_ && can; ++i)
      can = ops_[i].strides[d] == ops_[i].strides[merged] * iter_shape_[merged];
    if (can) {
      iter_shape_[merged] *= iter_shape_[d];
    } else {
      ++merged;
      iter_shape_[merged] = iter_shape_[d];
      for (int i = 0; i < ntensors_; ++i) ops_[i].strides[merged] = ops_[i].strides[d];
    }
  }
  if (ndim_ > 0) ndim_ = merged + 1;
  if (ndim_ == 1) {
    bool dense = true;
    for (int i = 0; i < ntensors_; ++i) dense = dense && ops_[i].strides[0] == element_size(ops_[i].dtype);
    contiguous_ = dense;
  }
}

void ElementwisePlan::finish() {
  for (int i = 0; i < noutputs_; ++i) {
    Operand& op = ops_[i];
    if (!op.tensor.is_same(op.original)) {
      ops::copy_()(op.original, op.tensor, false);
      op.tensor = op.original;
    }
  }
}

}  // namespace ember
