// Tensor's autograd methods and the links between tensors and graph nodes.
#include "autograd/meta.h"
#include "autograd/record.h"
#include "ember/ops.h"

namespace ember::autograd {

AutogradMeta* get_meta(const Tensor& t) {
  return t.defined() ? static_cast<AutogradMeta*>(t.impl()->autograd_meta()) : nullptr;
}

AutogradMeta& materialize_meta(const Tensor& t) {
  EMBER_CHECK(t.defined(), "autograd: undefined tensor");
  if (!t.impl()->autograd_meta()) t.impl()->set_autograd_meta(std::make_unique<AutogradMeta>());
  return *static_cast<AutogradMeta*>(t.impl()->autograd_meta());
}

std::string tensor_description(const Tensor& t) {
  const char* kind = "FloatTensor";
  switch (t.dtype()) {
    case DType::Float64: kind = "DoubleTensor"; break;
    case DType::Float16: kind = "HalfTensor"; break;
    case DType::BFloat16: kind = "BFloat16Tensor"; break;
    case DType::Int64: kind = "LongTensor"; break;
    case DType::Int32: kind = "IntTensor"; break;
    case DType::Bool: kind = "BoolTensor"; break;
    default: break;
  }
  return detail::cat("[ember.", kind, " ", t.sizes(), "]");
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta& m = materialize_meta(t);
  if (auto acc = m.grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
  m.grad_accumulator = acc;
  return acc;
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  AutogradMeta& m = materialize_meta(t);
  m.grad_fn = fn;
  m.output_nr = output_nr;
  m.attr_version = t._version();
}

namespace {
// A view whose base was written in place after the view got its history: its gradient now
// flows through the base's current history, as an as_strided window of it.
void refresh_view_history(const Tensor& t) {
  AutogradMeta* m = get_meta(t);
  if (!m || !m->grad_fn || !t.impl()->is_view() || m->attr_version == t._version()) return;
  Tensor base(t.impl()->view_base());
  if (!base.requires_grad()) return;
  std::shared_ptr<Node> node = make_view_of_base_node(base, t);
  set_history(t, node, 0);
}
}  // namespace

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = get_meta(t);
  if (!m) return {};
  refresh_view_history(t);
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (m->requires_grad_flag) return {grad_accumulator(t), 0};
  return {};
}

RemovableHandle register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> hook) {
  EMBER_CHECK(leaf.is_leaf() && leaf.requires_grad(),
              "post accumulate grad hooks cannot be registered on non-leaf tensors");
  AutogradMeta& m = materialize_meta(leaf);
  int id = m.next_hook_id++;
  m.post_accumulate_hooks.emplace_back(id, std::move(hook));
  std::weak_ptr<TensorImpl> weak = leaf.impl_ptr();
  return RemovableHandle([weak, id] {
    if (auto impl = weak.lock())
      std::erase_if(materialize_meta(Tensor(impl)).post_accumulate_hooks, [id](const auto& h) { return h.first == id; });
  });
}

}  // namespace ember::autograd

namespace ember {
using namespace autograd;

Tensor& Tensor::requires_grad_(bool on) {
  if (on)
    EMBER_CHECK(is_floating_or_complex(dtype()), "only Tensors of floating point and complex dtype can require gradients");
  AutogradMeta* m = get_meta(*this);
  if (m && m->grad_fn) {
    EMBER_CHECK(on, "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
    return *this;
  }
  if (!on && !m) return *this;
  materialize_meta(*this).requires_grad_flag = on;
  return *this;
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  AutogradMeta* m = get_meta(*this);
  return m ? m->grad : undefined;
}

Tensor& Tensor::mutable_grad() { return materialize_meta(*this).grad; }

void Tensor::set_grad(const Tensor& g) {
  if (g.defined())
    EMBER_CHECK(IntArrayRef(g.sizes()) == IntArrayRef(sizes()), "assigned grad has data of a different size");
  materialize_meta(*this).grad = g;
}

bool Tensor::is_leaf() const {
  AutogradMeta* m = get_meta(*this);
  return !m || !m->grad_fn;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  if (!get_meta(*this)) return nullptr;
  gradient_edge(*this);  // rebuilds a stale view history
  return get_meta(*this)->grad_fn;
}

int64_t Tensor::output_nr() const {
  AutogradMeta* m = get_meta(*this);
  return m ? m->output_nr : 0;
}

void Tensor::retain_grad() {
  EMBER_CHECK(requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
  AutogradMeta& m = materialize_meta(*this);
  if (!m.grad_fn || m.retains_grad) return;  // leaves keep .grad anyway
  m.retains_grad = true;
  std::weak_ptr<TensorImpl> weak = impl_ptr();
  m.grad_fn->add_retains_grad_hook(m.output_nr, [weak](const Tensor& g) -> Tensor {
    auto impl = weak.lock();
    if (!impl) return Tensor();
    AutogradMeta& mm = materialize_meta(Tensor(impl));
    if (!mm.grad.defined()) mm.grad = GradMode::is_enabled() ? g : g.detach().clone();
    else mm.grad = GradMode::is_enabled() ? mm.grad + g : mm.grad.add(g.detach());
    return Tensor();
  });
}

bool Tensor::retains_grad() const {
  AutogradMeta* m = get_meta(*this);
  return m && m->retains_grad;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>(impl_->storage(), dtype(), sizes(), strides(), storage_offset());
  impl->share_version_counter(impl_->version_counter());
  return Tensor(std::move(impl));
}

void Tensor::set_data(const Tensor& new_data) {
  EMBER_CHECK(new_data.defined(), "set_data: the new data is an undefined tensor");
  EMBER_CHECK(!requires_grad() || is_floating_or_complex(new_data.dtype()),
              "data set to a tensor that requires gradients must be floating point or complex dtype");
  AutogradMeta* m = get_meta(*this);
  // A cached AccumulateGrad expects gradients of the old shape/dtype/device; a new graph must
  // get a fresh one (an old graph still holding the previous one keeps working).
  if (m && (new_data.dtype() != dtype() || new_data.device() != device() ||
            !(IntArrayRef(new_data.sizes()) == IntArrayRef(sizes()))))
    m->grad_accumulator.reset();
  impl_->set_data_from(*new_data.impl());
}

Tensor& Tensor::detach_() {
  EMBER_CHECK(!impl_->is_view() || !requires_grad(),
              "Can't detach views in-place. Use detach() instead.");
  if (AutogradMeta* m = get_meta(*this)) {
    m->grad_fn.reset();
    m->requires_grad_flag = false;
    m->output_nr = 0;
  }
  return *this;
}

autograd::RemovableHandle Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  EMBER_CHECK(requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
  AutogradMeta& m = materialize_meta(*this);
  if (!m.grad_fn) {
    int id = m.next_hook_id++;
    m.leaf_hooks.emplace_back(id, std::move(hook));
    std::weak_ptr<TensorImpl> weak = impl_ptr();
    return RemovableHandle([weak, id] {
      if (auto impl = weak.lock())
        std::erase_if(materialize_meta(Tensor(impl)).leaf_hooks, [id](const auto& h) { return h.first == id; });
    });
  }
  std::shared_ptr<Node> fn = grad_fn();
  int id = fn->add_pre_hook(uint32_t(m.output_nr), std::move(hook));
  std::weak_ptr<Node> weak = fn;
  return RemovableHandle([weak, id] {
    if (auto n = weak.lock()) n->remove_pre_hook(id);
  });
}

}  // namespace ember
