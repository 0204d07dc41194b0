#include "ember/distributed/flat_param.h"

#include "ember/autograd/autograd.h"
#include "ember/ops.h"

namespace ember::distributed {

const char* sharding_strategy_name(ShardingStrategy s) {
  switch (s) {
    case ShardingStrategy::FULL_SHARD: return "FULL_SHARD";
    case ShardingStrategy::SHARD_GRAD_OP: return "SHARD_GRAD_OP";
    case ShardingStrategy::NO_SHARD: return "NO_SHARD";
  }
  return "?";
}

namespace {
DType full_dtype(const FlatParamOptions& o, DType own) { return o.mixed_precision.param_dtype.value_or(own); }
}  // namespace

FlatParamHandle::FlatParamHandle(std::vector<std::pair<std::string, Tensor>> named_params,
                                 std::shared_ptr<ProcessGroup> group, FlatParamOptions options)
    : group_(std::move(group)), options_(options), compute_device_(Device(DeviceType::CPU)) {
  EMBER_CHECK_VALUE(group_, "FlatParamHandle: expected a process group");
  EMBER_CHECK_VALUE(!named_params.empty(), "FlatParamHandle: expected at least one parameter");
  const Tensor& first = named_params.front().second;
  const bool requires_grad = first.requires_grad();
  std::vector<Tensor> flat_pieces;
  for (const auto& [name, p] : named_params) {
    EMBER_CHECK_VALUE(p.defined(), "FSDP: parameter ", name, " is undefined");
    EMBER_CHECK_TYPE(p.dtype() == first.dtype(), "FSDP: a unit's parameters must share one dtype, but ",
                     named_params.front().first, " is ", dtype_name(first.dtype()), " and ", name, " is ",
                     dtype_name(p.dtype()));
    EMBER_CHECK_VALUE(p.device() == first.device(), "FSDP: a unit's parameters must share one device, but ",
                      named_params.front().first, " is on ", first.device().str(), " and ", name, " on ",
                      p.device().str());
    EMBER_CHECK_VALUE(p.requires_grad() == requires_grad, "FSDP doesn't support a unit whose parameters mix "
                      "requires_grad: ", named_params.front().first, " has requires_grad=", requires_grad, " and ",
                      name, " has ", p.requires_grad(), " (wrap them in different units)");
    names_.push_back(name);
    shapes_.emplace_back(p.sizes().begin(), p.sizes().end());
    offsets_.push_back(numel_);
    numels_.push_back(p.numel());
    numel_ += p.numel();
    flat_pieces.push_back(p.detach().reshape({-1}));
  }
  compute_device_ = options_.compute_device.value_or(first.device());
  const int64_t world = options_.strategy == ShardingStrategy::NO_SHARD ? 1 : group_->size();
  padded_numel_ = (numel_ + world - 1) / world * world;
  if (padded_numel_ > numel_)
    flat_pieces.push_back(zeros({padded_numel_ - numel_}, {.dtype = first.dtype(), .device = first.device()}));
  Tensor flat = cat(flat_pieces, 0);
  const int64_t shard_numel = padded_numel_ / world;
  Device shard_device = options_.offload_params ? Device(DeviceType::CPU) : compute_device_;
  shard_ = flat.narrow(0, shard_offset(), shard_numel).to(shard_device, /*copy=*/true).contiguous();
  if (requires_grad) shard_.requires_grad_(true);

  if (full_is_shard()) {
    full_ = shard_.detach();
    state_ = State::kUnsharded;
  } else {
    full_ = empty({padded_numel_}, {.dtype = full_dtype(options_, first.dtype()), .device = compute_device_});
    full_.impl()->storage()->release_data();
  }
}

FlatParamHandle::~FlatParamHandle() {
  // An all-gather still in flight writes into full_: let it land before the memory goes.
  if (gather_work_) try { gather_work_->wait(); } catch (...) {}
}

void FlatParamHandle::set_flat_param(const Tensor& param) {
  EMBER_CHECK_VALUE(param.defined() && param.is_alias_of(shard_) && param.numel() == shard_.numel() &&
                        param.storage_offset() == shard_.storage_offset() && param.is_contiguous(),
                    "FlatParamHandle.set_flat_param: expected a tensor over the flat parameter's own memory");
  shard_ = param;
}

bool FlatParamHandle::full_is_shard() const {
  return options_.strategy == ShardingStrategy::NO_SHARD && !options_.offload_params &&
         full_dtype(options_, shard_.dtype()) == shard_.dtype();
}

int64_t FlatParamHandle::shard_offset() const {
  if (options_.strategy == ShardingStrategy::NO_SHARD) return 0;
  return padded_numel_ / group_->size() * group_->rank();
}

void FlatParamHandle::start_unshard() {
  if (state_ != State::kSharded) return;
  full_.impl()->storage()->allocate_data();
  Tensor src = shard_.detach();
  if (src.device() != compute_device_ || src.dtype() != full_.dtype())
    src = src.to(compute_device_, full_.dtype());
  if (options_.strategy == ShardingStrategy::NO_SHARD) {
    full_.copy_(src);  // one rank's whole parameter: nothing to gather
    state_ = State::kUnsharded;
    return;
  }
  gather_src_ = src;
  gather_work_ = group_->all_gather_into(full_, gather_src_);
  state_ = State::kGathering;
}

void FlatParamHandle::wait_unshard() {
  if (state_ == State::kSharded) start_unshard();
  if (state_ == State::kGathering) {
    auto work = std::move(gather_work_);
    gather_work_ = nullptr;
    gather_src_ = Tensor();
    work->wait();
    state_ = State::kUnsharded;
  }
}

void FlatParamHandle::reshard() {
  if (full_is_shard()) return;
  if (state_ == State::kGathering) wait_unshard();
  if (state_ == State::kUnsharded) full_.impl()->storage()->release_data();
  state_ = State::kSharded;
}

std::vector<Tensor> FlatParamHandle::views() {
  EMBER_CHECK(state_ != State::kSharded, "FSDP: the parameters of this unit (", names_.front(),
              ", ...) are sharded; unshard() before asking for their views");
  wait_unshard();
  if (!shard_.requires_grad() || !autograd::GradMode::is_enabled()) return split(full_);
  auto self = shared_from_this();
  return autograd::apply_custom(
      "FsdpPostBackward", [&](autograd::AutogradContext*) { return split(full_); },
      [self](autograd::AutogradContext*, const autograd::variable_list& grads) -> autograd::variable_list {
        return {self->reduce_gradient(grads)};
      },
      {shard_});
}

// The unit's backward is complete once every view's gradient has arrived (autograd runs this node
// last among the unit's): one flat gradient, averaged over the group into this rank's shard.
Tensor FlatParamHandle::reduce_gradient(const std::vector<Tensor>& grads) {
  const DType reduce_dtype = options_.mixed_precision.reduce_dtype.value_or(full_.dtype());
  Tensor flat = empty({padded_numel_}, {.dtype = reduce_dtype, .device = compute_device_});
  for (size_t i = 0; i < grads.size(); ++i) {
    Tensor piece = flat.narrow(0, offsets_[i], numels_[i]);
    if (grads[i].defined()) piece.copy_(grads[i].reshape({-1}));
    else piece.zero_();
  }
  if (padded_numel_ > numel_) flat.narrow(0, numel_, padded_numel_ - numel_).zero_();
  Tensor shard_grad;
  if (options_.strategy == ShardingStrategy::NO_SHARD) {
    group_->all_reduce(flat, ReduceOp::AVG)->wait();
    shard_grad = flat;
  } else {
    shard_grad = empty({padded_numel_ / group_->size()}, {.dtype = reduce_dtype, .device = compute_device_});
    group_->reduce_scatter_consuming(shard_grad, flat, ReduceOp::AVG)->wait();  // flat is ours to overwrite
    reshard();  // the unit's backward is over: the gathered parameters can go
  }
  if (shard_grad.device() != shard_.device() || shard_grad.dtype() != shard_.dtype())
    shard_grad = shard_grad.to(shard_.device(), shard_.dtype());
  return shard_grad;
}

Tensor FlatParamHandle::gather_full() const {
  Tensor src = shard_.detach();
  if (options_.strategy == ShardingStrategy::NO_SHARD) return src.narrow(0, 0, numel_).clone();
  if (src.device() != compute_device_) src = src.to(compute_device_);
  Tensor full = empty({padded_numel_}, {.dtype = src.dtype(), .device = compute_device_});
  group_->all_gather_into(full, src.contiguous())->wait();
  return full.narrow(0, 0, numel_);
}

std::vector<Tensor> FlatParamHandle::split(const Tensor& full_flat) const {
  EMBER_CHECK_VALUE(full_flat.dim() == 1 && full_flat.numel() >= numel_, "FSDP: expected a flat tensor of ", numel_,
                    " elements, got shape ", full_flat.sizes());
  std::vector<Tensor> out;
  for (size_t i = 0; i < names_.size(); ++i) out.push_back(full_flat.narrow(0, offsets_[i], numels_[i]).view(shapes_[i]));
  return out;
}

void FlatParamHandle::load_full(const Tensor& full_flat) {
  EMBER_CHECK_VALUE(full_flat.dim() == 1 && full_flat.numel() == numel_, "FSDP: expected a flat tensor of ", numel_,
                    " elements, got shape ", full_flat.sizes());
  autograd::NoGradGuard no_grad;
  const int64_t begin = shard_offset(), n = shard_.numel();
  Tensor dst = shard_.detach();
  dst.zero_();  // the padding stays zero
  const int64_t have = std::max<int64_t>(0, std::min(n, numel_ - begin));
  if (have > 0) dst.narrow(0, 0, have).copy_(full_flat.narrow(0, begin, have));
  if (full_is_shard()) return;
  if (state_ == State::kUnsharded) reshard();  // the gathered copy is stale now
}

}  // namespace ember::distributed
