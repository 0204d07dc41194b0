#include "autograd/record.h"

#include "autograd/meta.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::autograd {

bool any_requires_grad(const variable_list& inputs) {
  for (const auto& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

std::shared_ptr<LambdaNode> record(const char* name, const variable_list& inputs, const variable_list& outputs,
                                   std::vector<Save> saves, LambdaNode::Backward backward) {
  if (!GradMode::is_enabled() || !any_requires_grad(inputs)) return nullptr;
  auto node = std::make_shared<LambdaNode>(name, std::move(backward));
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const auto& t : inputs) edges.push_back(t.defined() ? gradient_edge(t) : Edge{});
  node->set_next_edges(std::move(edges));
  for (size_t i = 0; i < outputs.size(); ++i) {
    node->add_input_metadata(outputs[i]);
    if (outputs[i].defined() && is_floating_or_complex(outputs[i].dtype())) set_history(outputs[i], node, uint32_t(i));
  }
  node->saved.reserve(saves.size());
  for (auto& s : saves) node->saved.emplace_back(s.tensor, s.is_output);
  return node;
}

Tensor sum_to(const Tensor& grad, IntArrayRef shape) {
  if (IntArrayRef(grad.sizes()) == shape) return grad;
  int64_t lead = grad.dim() - int64_t(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead) dims.push_back(d);
    else if (shape[d - lead] == 1 && grad.sizes()[d] != 1) dims.push_back(d);
  }
  Tensor r = dims.empty() ? grad : grad.sum(dims, /*keepdim=*/true);
  if (lead > 0 || r.dim() != int64_t(shape.size())) r = r.reshape(shape);
  return r;
}

namespace {

struct Geometry {
  Shape sizes, strides;
  int64_t offset;
};
Geometry geometry(const Tensor& t) { return {t.sizes(), t.strides(), t.storage_offset()}; }

// A tensor laid out like `g` (base geometry) holding grad's values, so a view's as_strided
// window can be taken on it at the same relative offsets.
Tensor like_base(const Geometry& base, const Tensor& grad) {
  Tensor r = empty_strided(base.sizes, base.strides, {.dtype = grad.dtype(), .device = grad.device()});
  r.copy_(grad);
  return r;
}

// Gradient of base when `fn` overwrote a window of it in place.
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn)
      : base_(geometry(base)), view_(geometry(view)), fn_(std::move(fn)) {
    add_input_metadata(base);
  }
  std::string name() const override { return "CopySlices"; }
  variable_list apply(variable_list&& grads) override {
    Tensor g = grads[0].defined() ? grads[0]
                                  : zeros(input_meta_[0].shape, {.dtype = input_meta_[0].dtype, .device = input_meta_[0].device});
    Tensor result = like_base(base_, g);
    Tensor slice = result.as_strided(view_.sizes, view_.strides, result.storage_offset() + view_.offset - base_.offset);
    variable_list res = fn_->apply({slice.clone()});
    slice.zero_();
    variable_list out;
    out.reserve(1 + res.size());
    out.push_back(result);
    for (auto& r : res) out.push_back(std::move(r));
    return out;
  }
  void release_variables() override { fn_->release_variables(); }

 private:
  Geometry base_, view_;
  std::shared_ptr<Node> fn_;
};

class ViewOfBase final : public Node {
 public:
  ViewOfBase(const Tensor& base, const Tensor& view) : base_(geometry(base)), view_(geometry(view)) {
    add_input_metadata(view);
  }
  std::string name() const override { return "AsStridedBackward0"; }
  variable_list apply(variable_list&& grads) override {
    Tensor result = empty_strided(base_.sizes, base_.strides, {.dtype = grads[0].dtype(), .device = grads[0].device()});
    result.zero_();
    Tensor slice = result.as_strided(view_.sizes, view_.strides, result.storage_offset() + view_.offset - base_.offset);
    slice.copy_(grads[0]);
    return {result};
  }

 private:
  Geometry base_, view_;
};

}  // namespace

std::shared_ptr<Node> make_view_of_base_node(const Tensor& base, const Tensor& view) {
  auto node = std::make_shared<ViewOfBase>(base, view);
  node->set_next_edges({gradient_edge(base)});
  return node;
}

Tensor& record_inplace(Tensor& self, bool clone_self, const std::function<Tensor(const Tensor&)>& compute) {
  AutogradMeta* m = get_meta(self);
  EMBER_CHECK(!(m && !m->grad_fn && m->requires_grad_flag),
              "a leaf Variable that requires grad is being used in an in-place operation.");
  Tensor base = self.impl()->is_view() ? Tensor(self.impl()->view_base()) : Tensor();
  if (base.defined()) {
    AutogradMeta* bm = get_meta(base);
    EMBER_CHECK(!(bm && !bm->grad_fn && bm->requires_grad_flag),
                "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  }
  Tensor value = compute(clone_self ? self.clone() : self);
  below_autograd([&] { return ops::copy_()(self, value, false); });

  std::shared_ptr<Node> fn = value.requires_grad() ? value.grad_fn() : nullptr;
  uint32_t fn_output = value.requires_grad() ? uint32_t(value.output_nr()) : 0;
  if (!fn && self.requires_grad()) {
    // The new value is a constant: old self gets a zero gradient, self keeps requiring grad.
    Tensor self_old = self;
    auto zero = std::make_shared<LambdaNode>("CopyBackwards", [](const variable_list& g, LambdaNode&) -> variable_list {
      return {zeros_like(g[0])};
    });
    zero->set_next_edges({gradient_edge(self)});
    zero->add_input_metadata(self);
    fn = zero;
    fn_output = 0;
  }
  if (!fn) return self;
  if (base.defined()) {
    // fn computed the view's new values; the base's history becomes CopySlices(fn).
    EMBER_CHECK(fn_output == 0, "in-place on a view: multi-output functions are not supported");
    auto copy_slices = std::make_shared<CopySlices>(base, self, fn);
    std::vector<Edge> edges{gradient_edge(base)};
    for (const auto& e : fn->next_edges()) edges.push_back(e);
    copy_slices->set_next_edges(std::move(edges));
    set_history(base, copy_slices, 0);
    set_history(self, make_view_of_base_node(base, self), 0);
  } else {
    set_history(self, fn, fn_output);
  }
  return self;
}

}  // namespace ember::autograd
