#include "ember/distributed/reducer.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "ember/autograd/grad_mode.h"
#include "ember/ops.h"

namespace ember::distributed {

Reducer::Reducer(std::vector<std::pair<std::string, Tensor>> named_params, std::shared_ptr<ProcessGroup> group,
                 ReducerOptions options)
    : group_(std::move(group)), options_(options) {
  EMBER_CHECK(group_ != nullptr, "DistributedDataParallel: no process group");
  EMBER_CHECK(!named_params.empty(), "DistributedDataParallel is not needed when a module doesn't have any parameter "
                                     "that requires a gradient.");
  params_.assign(named_params.rbegin(), named_params.rend());
  // buckets: the first up to first_bucket_bytes, the rest up to bucket_cap_mb; one dtype and
  // device each
  const int64_t cap = int64_t(options_.bucket_cap_mb * 1024 * 1024);
  int64_t limit = std::min(options_.first_bucket_bytes, cap), size = 0;
  Bucket current;
  auto close = [&] {
    int64_t n = 0;
    for (size_t i : current.params) {
      current.offsets.push_back(n);
      n += params_[i].second.numel();
    }
    const Tensor& first = params_[current.params[0]].second;
    current.flat = zeros({n}, {.dtype = first.dtype(), .device = first.device()});
    buckets_.push_back(std::move(current));
    current = Bucket{};
    size = 0;
    limit = cap;
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i].second;
    EMBER_CHECK(p.requires_grad(), "DistributedDataParallel: parameter '", params_[i].first,
                "' does not require a gradient");
    const int64_t bytes = p.nbytes();
    if (!current.params.empty()) {
      const Tensor& head = params_[current.params[0]].second;
      if (size + bytes > limit || p.dtype() != head.dtype() || p.device() != head.device()) close();
    }
    bucket_of_.emplace_back(buckets_.size(), current.params.size());
    current.params.push_back(i);
    size += bytes;
  }
  close();
  got_.assign(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i)
    hooks_.push_back(autograd::register_post_accumulate_grad_hook(params_[i].second, [this, i](const Tensor&) {
      mark_ready(i);
    }));
}

Reducer::~Reducer() {
  for (auto& h : hooks_) h.remove();
  for (auto& b : buckets_)  // collectives still in flight write into our buffers
    if (b.work) {
      try {
        b.work->wait();
      } catch (const std::exception&) {
      }
    }
}

std::vector<std::vector<std::string>> Reducer::bucket_names() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& b : buckets_) {
    out.emplace_back();
    for (size_t i : b.params) out.back().push_back(params_[i].first);
  }
  return out;
}

void Reducer::prepare_for_forward() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // a backward that produced some gradients but not all (torch errors; a forward with no backward
  // after it, as in evaluation with grad mode on, just starts over)
  if (expect_sync_ && std::count(got_.begin(), got_.end(), char(2)) > 0) {
    std::string names;
    int listed = 0;
    for (size_t i = 0; i < params_.size() && listed < 20; ++i)
      if (!got_[i]) names += (listed++ ? ", " : "") + params_[i].first;
    throw Error(detail::cat(
        "Expected to have finished reduction in the prior iteration before starting a new one. This error "
        "indicates that your module has parameters that were not used in producing loss. You can enable unused "
        "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
        "`torch.nn.parallel.DistributedDataParallel`. Parameters that did not receive a gradient: ", names));
  }
  reset();
}

void Reducer::reset() {
  for (auto& b : buckets_) {
    if (b.work) b.work->wait();
    b.ready = 0;
    b.work = nullptr;
  }
  std::fill(got_.begin(), got_.end(), char(0));
  next_launch_ = 0;
  expect_sync_ = false;
}

void Reducer::prepare_for_backward(const std::vector<Tensor>& outputs) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  expect_sync_ = true;
  if (!options_.find_unused_parameters) return;
  // the leaves the outputs' graph reaches
  std::unordered_set<const TensorImpl*> reached;
  std::unordered_set<const autograd::Node*> seen;
  std::vector<std::shared_ptr<autograd::Node>> stack;
  for (const Tensor& o : outputs) {
    if (!o.defined()) continue;
    if (auto fn = o.grad_fn()) stack.push_back(fn);
    else if (o.requires_grad()) reached.insert(o.impl());
  }
  while (!stack.empty()) {
    auto fn = std::move(stack.back());
    stack.pop_back();
    if (!fn || !seen.insert(fn.get()).second) continue;
    if (auto* acc = dynamic_cast<autograd::AccumulateGrad*>(fn.get())) reached.insert(acc->leaf().get());
    for (const auto& e : fn->next_edges())
      if (e.fn) stack.push_back(e.fn);
  }
  for (size_t i = 0; i < params_.size(); ++i)
    if (!reached.count(params_[i].second.impl())) {
      got_[i] = 1;  // unused: ready now
      ++buckets_[bucket_of_[i].first].ready;
    }
  if (launch_complete_buckets()) finish();  // nothing was used: no hook will come
}

void Reducer::mark_ready(size_t index) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!expect_sync_) return;
  Bucket& b = buckets_[bucket_of_[index].first];
  EMBER_CHECK(!got_[index], "DistributedDataParallel: parameter '", params_[index].first,
              "' received its gradient twice in one backward (a parameter used by two forward passes before one "
              "backward: use no_sync() for the extra ones)");
  got_[index] = 2;  // from backward
  ++b.ready;
  if (launch_complete_buckets()) finish();
}

bool Reducer::launch_complete_buckets() {
  autograd::NoGradGuard no_grad;
  while (next_launch_ < buckets_.size()) {
    Bucket& b = buckets_[next_launch_];
    if (b.ready < b.params.size()) return false;
    for (size_t k = 0; k < b.params.size(); ++k) {
      const Tensor& p = params_[b.params[k]].second;
      Tensor view = b.flat.narrow(0, b.offsets[k], p.numel());
      const Tensor& g = p.grad();
      if (!g.defined()) view.zero_();
      else if (g.data_ptr() != view.data_ptr()) view.copy_(g.reshape({-1}));
    }
    b.work = group_->all_reduce(b.flat, ReduceOp::SUM);
    ++next_launch_;
  }
  return true;
}

void Reducer::finish() {
  autograd::NoGradGuard no_grad;
  const double world = group_->size();
  for (auto& b : buckets_) {
    b.work->wait();
    b.work = nullptr;
    b.flat.div_(Scalar(world));
    for (size_t k = 0; k < b.params.size(); ++k) {
      Tensor p = params_[b.params[k]].second;
      Tensor view = b.flat.narrow(0, b.offsets[k], p.numel()).view(p.sizes());
      if (options_.gradient_as_bucket_view) p.set_grad(view);
      else if (!p.grad().defined()) p.set_grad(view.clone());
      else p.mutable_grad().copy_(view);
    }
  }
  reset();
}

void broadcast_coalesced(ProcessGroup& group, const std::vector<Tensor>& tensors, int root) {
  autograd::NoGradGuard no_grad;
  std::map<std::pair<int, std::string>, std::vector<Tensor>> by_kind;
  for (const Tensor& t : tensors)
    if (t.defined() && t.numel() > 0) by_kind[{int(t.dtype()), t.device().str()}].push_back(t);
  for (auto& [_, ts] : by_kind) {
    std::vector<Tensor> flat_parts;
    for (const Tensor& t : ts) flat_parts.push_back(t.detach().reshape({-1}));
    Tensor flat = cat(flat_parts);
    group.broadcast(flat, root)->wait();
    int64_t at = 0;
    for (Tensor t : ts) {
      t.copy_(flat.narrow(0, at, t.numel()).view(t.sizes()));
      at += t.numel();
    }
  }
}

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group,
                                                 Options options)
    : module_(std::move(module)), group_(std::move(group)), options_(options) {
  EMBER_CHECK(module_ != nullptr && group_ != nullptr, "DistributedDataParallel: needs a module and a process group");
  std::vector<Tensor> state = module_->parameters();
  for (const Tensor& b : module_->buffers()) state.push_back(b);
  broadcast_coalesced(*group_, state, 0);
  std::vector<std::pair<std::string, Tensor>> trainable;
  for (auto& [name, p] : module_->named_parameters())
    if (p.requires_grad()) trainable.emplace_back(name, p);
  reducer_ = std::make_unique<Reducer>(std::move(trainable), group_, options_.reducer);
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  reducer_->prepare_for_forward();
  if (options_.broadcast_buffers && group_->size() > 1) {
    const std::vector<Tensor> buffers = module_->buffers();
    if (!buffers.empty()) broadcast_coalesced(*group_, buffers, 0);
  }
  Tensor out = module_->forward(input);
  if (autograd::GradMode::is_enabled() && require_sync_) reducer_->prepare_for_backward({out});
  return out;
}

}  // namespace ember::distributed
