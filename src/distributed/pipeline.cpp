#include "ember/distributed/pipeline.h"

#include "ember/ops.h"

namespace ember::distributed {
namespace {
constexpr int64_t kHeader = 10;  // dtype, ndim, up to 8 sizes
}  // namespace

PipelineStage::PipelineStage(std::shared_ptr<nn::Module> module, int stage_index, int num_stages,
                             std::shared_ptr<ProcessGroup> group)
    : module_(std::move(module)), stage_index_(stage_index), num_stages_(num_stages), group_(std::move(group)) {
  EMBER_CHECK_VALUE(module_ && group_, "PipelineStage: expected a module and a process group");
  EMBER_CHECK_VALUE(group_->size() == num_stages, "PipelineStage: ", num_stages, " stages need a group of ", num_stages,
                    " ranks, got ", group_->size(), " (one stage per rank)");
  EMBER_CHECK_VALUE(group_->rank() == stage_index, "PipelineStage: stage ", stage_index, " must run on group rank ",
                    stage_index, ", not ", group_->rank());
}

void PipelineStage::send(const Tensor& t, int peer, int tag) {
  Tensor data = t.detach().contiguous();
  EMBER_CHECK_VALUE(data.dim() <= kHeader - 2, "PipelineStage: tensors of more than ", kHeader - 2,
                    " dimensions cannot be sent");
  Tensor header = zeros({kHeader}, {.dtype = kInt64});
  auto* h = static_cast<int64_t*>(header.data_ptr());
  h[0] = int64_t(data.dtype());
  h[1] = data.dim();
  for (int64_t i = 0; i < data.dim(); ++i) h[2 + i] = data.size(i);
  pending_.emplace_back(group_->send(header, peer, 2 * tag), header);
  pending_.emplace_back(group_->send(data, peer, 2 * tag + 1), data);
}

Tensor PipelineStage::recv(int peer, int tag) {
  Tensor header = zeros({kHeader}, {.dtype = kInt64});
  group_->recv(header, peer, 2 * tag)->wait();
  const auto* h = static_cast<const int64_t*>(header.data_ptr());
  Shape shape(h + 2, h + 2 + h[1]);
  Tensor t = empty(shape, {.dtype = DType(h[0])});
  group_->recv(t, peer, 2 * tag + 1)->wait();
  return t;
}

void PipelineStage::wait_sends() {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [work, tensor] : pending) work->wait();
}

void PipelineStage::reset() { live_.clear(); }

Tensor PipelineStage::forward_one_chunk(int mb, const Tensor& input) {
  Tensor x = is_first() ? input : recv(stage_index_ - 1, 2 * mb).requires_grad_(true);
  Tensor out = module_->forward(x);
  live_[mb] = {x, out};
  if (!is_last()) send(out, stage_index_ + 1, 2 * mb);
  return out;
}

void PipelineStage::backward_one_chunk(int mb, const Tensor& loss) {
  auto it = live_.find(mb);
  EMBER_CHECK(it != live_.end(), "PipelineStage: no forward of micro-batch ", mb, " to run backward for");
  auto [x, out] = it->second;
  live_.erase(it);
  if (is_last()) {
    EMBER_CHECK_VALUE(loss.defined(), "PipelineStage: the last stage's backward needs the loss");
    loss.backward();
  } else {
    out.backward(recv(stage_index_ + 1, 2 * mb + 1));
  }
  if (!is_first()) send(x.grad().defined() ? x.grad() : zeros_like(x), stage_index_ - 1, 2 * mb + 1);
}

PipelineSchedule::PipelineSchedule(PipelineStage& stage, int n_microbatches, Kind kind, LossFn loss_fn)
    : stage_(stage), n_(n_microbatches), kind_(kind), loss_fn_(std::move(loss_fn)) {
  EMBER_CHECK_VALUE(n_ >= 1, "PipelineSchedule: n_microbatches must be at least 1, got ", n_);
  EMBER_CHECK_VALUE(!stage.is_last() || loss_fn_, "PipelineSchedule: the last stage needs a loss_fn");
}

Tensor PipelineSchedule::forward(int mb, const std::vector<Tensor>& xs, const std::vector<Tensor>& ys,
                                 std::vector<Tensor>& losses) {
  Tensor out = stage_.forward_one_chunk(mb, xs.empty() ? Tensor() : xs[size_t(mb)]);
  if (!stage_.is_last()) return Tensor();
  Tensor loss = loss_fn_(out, ys[size_t(mb)]);
  losses.push_back(loss.detach());
  return loss.div(Scalar(n_));
}

std::vector<Tensor> PipelineSchedule::step(const Tensor& input, const Tensor& target) {
  auto split = [&](const Tensor& t, const char* what) {
    std::vector<Tensor> parts;
    if (!t.defined()) return parts;
    EMBER_CHECK_VALUE(t.dim() >= 1 && t.size(0) % n_ == 0, "PipelineSchedule.step: the ", what, "'s batch (",
                      t.dim() ? t.size(0) : 0, ") does not divide into ", n_, " micro-batches");
    return t.chunk(n_, 0);
  };
  EMBER_CHECK_VALUE(!stage_.is_first() || input.defined(), "PipelineSchedule.step: the first stage needs the input");
  EMBER_CHECK_VALUE(!stage_.is_last() || target.defined(), "PipelineSchedule.step: the last stage needs the target");
  const std::vector<Tensor> xs = split(input, "input"), ys = split(target, "target");
  std::vector<Tensor> losses;
  std::map<int, Tensor> scaled;
  stage_.reset();
  try {
    if (kind_ == Kind::kGPipe) {
      for (int mb = 0; mb < n_; ++mb) scaled[mb] = forward(mb, xs, ys, losses);
      for (int mb = 0; mb < n_; ++mb) stage_.backward_one_chunk(mb, scaled[mb]);
    } else {
      const int warmup = std::min(n_, stage_.num_stages() - 1 - stage_.stage_index());
      int fwd = 0, bwd = 0;
      for (; fwd < warmup; ++fwd) scaled[fwd] = forward(fwd, xs, ys, losses);
      for (; fwd < n_; ++fwd, ++bwd) {  // steady state: one forward, one backward
        scaled[fwd] = forward(fwd, xs, ys, losses);
        stage_.backward_one_chunk(bwd, scaled[bwd]);
        scaled.erase(bwd);
      }
      for (; bwd < n_; ++bwd) stage_.backward_one_chunk(bwd, scaled[bwd]);
    }
  } catch (...) {
    try { stage_.wait_sends(); } catch (...) {}
    throw;
  }
  stage_.wait_sends();
  return losses;
}

}  // namespace ember::distributed
