#include "ember/distributed/fsdp.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ember/ops.h"

namespace ember::distributed {

FullyShardedDataParallel::FullyShardedDataParallel(std::shared_ptr<nn::Module> module,
                                                   std::shared_ptr<ProcessGroup> group, FsdpOptions options)
    : module_(std::move(module)), group_(std::move(group)), options_(std::move(options)) {
  EMBER_CHECK_VALUE(module_ && group_, "FullyShardedDataParallel: expected a module and a process group");
  std::set<std::string> taken;
  auto add_unit = [&](nn::Module* m, const std::string& prefix, bool reshard) {
    Unit u;
    u.module = m;
    std::vector<std::pair<std::string, Tensor>> named;
    for (auto& [name, p] : module_->named_parameters()) {
      if (taken.count(name) || (!prefix.empty() && name.rfind(prefix, 0) != 0)) continue;
      taken.insert(name);
      u.names.push_back(name);
      u.slots.push_back(&module_->get_parameter(name));
      named.emplace_back(name, p);
    }
    if (named.empty()) return;
    u.handle = std::make_shared<FlatParamHandle>(std::move(named), group_, options_.flat);
    u.reshard_after_forward = reshard && options_.flat.strategy == ShardingStrategy::FULL_SHARD;
    units_.push_back(std::move(u));
  };
  if (auto* seq = dynamic_cast<nn::Sequential*>(module_.get()); seq && options_.wrap_children) {
    for (auto& [name, child] : seq->named_children()) {
      const bool is_unit = child->num_parameters() >= std::max<int64_t>(1, options_.min_unit_params);
      const size_t before = units_.size();
      if (is_unit) add_unit(child, name + ".", true);
      steps_.emplace_back(child, is_unit && units_.size() > before);
    }
  }
  add_unit(module_.get(), "", false);  // the root unit: everything no child unit took
  // The modules now hold views of the (freed) gathered buffers: reading them outside forward
  // raises; the shards are the only copy of the parameters.
  autograd::NoGradGuard no_grad;
  for (auto& u : units_) {
    u.handle->unshard();
    install(u);
    u.handle->reshard();
  }
}

void FullyShardedDataParallel::install(Unit& u) {
  std::vector<Tensor> views = u.handle->views();
  for (size_t i = 0; i < views.size(); ++i) *u.slots[i] = views[i];
}

std::vector<Tensor> FullyShardedDataParallel::parameters() const {
  std::vector<Tensor> out;
  for (const auto& u : units_) out.push_back(u.handle->flat_param());
  return out;
}

void FullyShardedDataParallel::before_backward(size_t i) {
  Unit& u = units_[i];
  if (u.backward_started) return;
  u.backward_started = true;
  u.handle->unshard();
  if (i > 0 && units_[i - 1].module != module_.get()) units_[i - 1].handle->start_unshard();  // the next in backward
}

Tensor FullyShardedDataParallel::forward(const Tensor& input) {
  const bool grad = autograd::GradMode::is_enabled();
  for (auto& u : units_) u.backward_started = false;
  Unit* root = !units_.empty() && units_.back().module == module_.get() ? &units_.back() : nullptr;
  if (root) {
    root->handle->unshard();
    install(*root);
  }
  Tensor x = input;
  if (steps_.empty()) {
    x = module_->forward(x);
  } else {
    size_t unit = 0;
    for (size_t s = 0; s < steps_.size(); ++s) {
      auto [child, is_unit] = steps_[s];
      if (!is_unit) {
        x = child->forward(x);
        continue;
      }
      const size_t index = unit++;
      Unit& u = units_[index];
      u.handle->unshard();
      if (options_.forward_prefetch && index + 1 < units_.size() && &units_[index + 1] != root)
        units_[index + 1].handle->start_unshard();
      install(u);
      x = child->forward(x);
      if (grad && x.requires_grad() && u.handle->flat_param().requires_grad())
        x.register_hook([this, index](const Tensor&) {
          before_backward(index);
          return Tensor();
        });
      if (u.reshard_after_forward || !grad) u.handle->reshard();
    }
  }
  if (root && !grad) root->handle->reshard();
  return x;
}

Tensor FullyShardedDataParallel::clip_grad_norm_(double max_norm, double norm_type) {
  std::vector<Tensor> grads;
  for (const auto& u : units_)
    if (u.handle->flat_param().grad().defined()) grads.push_back(u.handle->flat_param().grad());
  const bool inf = std::isinf(norm_type);
  Tensor total = zeros({}, {.dtype = kFloat32, .device = grads.empty() ? Device(DeviceType::CPU) : grads[0].device()});
  for (const auto& g : grads) {
    Tensor a = g.detach().to(kFloat32).abs();
    total = inf ? maximum(total, a.max()) : total + a.pow(Scalar(norm_type)).sum();
  }
  if (options_.flat.strategy != ShardingStrategy::NO_SHARD)
    group_->all_reduce(total, inf ? ReduceOp::MAX : ReduceOp::SUM)->wait();
  if (!inf) total = total.pow(Scalar(1.0 / norm_type));
  const double coef = max_norm / (total.item<double>() + 1e-6);
  if (coef < 1.0) {
    autograd::NoGradGuard no_grad;
    for (auto& g : grads) g.mul_(Scalar(coef));
  }
  return total;
}

nn::StateDict FullyShardedDataParallel::state_dict() const {
  std::map<std::string, Tensor> whole;
  for (const auto& u : units_) {
    std::vector<Tensor> pieces = u.handle->split(u.handle->gather_full());
    for (size_t i = 0; i < pieces.size(); ++i) whole[u.names[i]] = pieces[i].clone();
  }
  nn::StateDict out = module_->state_dict();  // the keys in order; parameter entries replaced
  for (auto& [key, value] : out)
    if (auto it = whole.find(key); it != whole.end()) value = it->second;
  return out;
}

void FullyShardedDataParallel::load_state_dict(const nn::StateDict& state) {
  std::map<std::string, const Tensor*> incoming;
  for (const auto& [k, v] : state) incoming[k] = &v;
  auto get = [&](const std::string& key) -> const Tensor& {
    auto it = incoming.find(key);
    EMBER_CHECK(it != incoming.end(), "Error(s) in loading state_dict for FullyShardedDataParallel: Missing key(s) "
                "in state_dict: \"", key, "\".");
    return *it->second;
  };
  autograd::NoGradGuard no_grad;
  for (auto& u : units_) {
    std::vector<Tensor> flat;
    for (size_t i = 0; i < u.names.size(); ++i) {
      const Tensor& v = get(u.names[i]);
      const Shape& want = u.handle->shapes()[i];
      EMBER_CHECK(Shape(v.sizes().begin(), v.sizes().end()) == want, "Error(s) in loading state_dict for "
                  "FullyShardedDataParallel: size mismatch for ", u.names[i], ": copying a param with shape ",
                  v.sizes(), ", the shape in current model is ", IntArrayRef(want));
      flat.push_back(v.reshape({-1}).to(u.handle->flat_param().dtype()));
    }
    u.handle->load_full(cat(flat, 0).to(u.handle->flat_param().device()));
  }
  std::set<std::string> params;
  for (const auto& u : units_) params.insert(u.names.begin(), u.names.end());
  for (auto& [key, buffer] : module_->state_dict())  // the persistent buffers (views of the module's)
    if (!params.count(key)) buffer.copy_(get(key));
}

namespace {
// [start, end) of rank r's piece of n rows cut as torch.chunk cuts them.
std::pair<int64_t, int64_t> chunk_bounds(int64_t n, int parts, int r) {
  const int64_t size = (n + parts - 1) / parts;
  const int64_t start = std::min(n, r * size);
  return {start, std::min(n, start + size)};
}
}  // namespace

checkpoint::DistStateDict FullyShardedDataParallel::sharded_state_dict() const {
  std::map<std::string, checkpoint::ShardedTensor> pieces;
  for (const auto& u : units_) {
    std::vector<Tensor> whole = u.handle->split(u.handle->gather_full());
    for (size_t i = 0; i < whole.size(); ++i) {
      const Tensor& w = whole[i];
      if (w.dim() == 0) {
        pieces[u.names[i]] = checkpoint::ShardedTensor::replicated(w.clone());
        continue;
      }
      auto [start, end] = chunk_bounds(w.size(0), group_->size(), group_->rank());
      Shape offsets(size_t(w.dim()), 0);
      offsets[0] = start;
      pieces[u.names[i]] = {w.narrow(0, start, end - start).clone(), Shape(w.sizes().begin(), w.sizes().end()), offsets};
    }
  }
  checkpoint::DistStateDict out;
  for (auto& [key, value] : module_->state_dict()) {
    auto it = pieces.find(key);
    out.emplace_back(key, it != pieces.end() ? it->second : checkpoint::ShardedTensor::replicated(value));
  }
  return out;
}

void FullyShardedDataParallel::load_sharded_state_dict(const checkpoint::DistStateDict& state) {
  std::map<std::string, const checkpoint::ShardedTensor*> incoming;
  for (const auto& [k, v] : state) incoming[k] = &v;
  nn::StateDict whole;
  for (const auto& u : units_)
    for (size_t i = 0; i < u.names.size(); ++i) {
      auto it = incoming.find(u.names[i]);
      EMBER_CHECK(it != incoming.end(), "FullyShardedDataParallel.load_sharded_state_dict: missing \"", u.names[i],
                  "\"");
      const checkpoint::ShardedTensor& st = *it->second;
      if (st.global_shape.empty()) {
        whole.emplace_back(u.names[i], st.local);
        continue;
      }
      // the whole parameter from every rank's dim-0 piece (padded to the largest piece)
      const int64_t rows = st.global_shape[0];
      const int64_t piece = (rows + group_->size() - 1) / group_->size();
      Shape padded_shape = st.global_shape;
      padded_shape[0] = piece;
      Tensor mine = zeros(padded_shape, {.dtype = st.local.dtype()});
      if (st.local.size(0) > 0) mine.narrow(0, 0, st.local.size(0)).copy_(st.local);
      Shape all_shape = st.global_shape;
      all_shape[0] = piece * group_->size();
      Tensor all = empty(all_shape, {.dtype = st.local.dtype()});
      group_->all_gather_into(all, mine)->wait();
      whole.emplace_back(u.names[i], all.narrow(0, 0, rows));
    }
  for (const auto& [key, value] : module_->state_dict())
    if (std::none_of(whole.begin(), whole.end(), [&](const auto& kv) { return kv.first == key; })) {
      auto it = incoming.find(key);
      EMBER_CHECK(it != incoming.end(), "FullyShardedDataParallel.load_sharded_state_dict: missing \"", key, "\"");
      whole.emplace_back(key, it->second->local);
    }
  load_state_dict(whole);
}

}  // namespace ember::distributed
