#include "ember/nn/containers.h"

#include <algorithm>

namespace ember::nn {

namespace {
int64_t wrap_index(int64_t i, size_t n, const char* what) {
  int64_t size = int64_t(n);
  EMBER_CHECK_INDEX(i >= -size && i < size, "index ", i, " is out of range for ", what, " of length ", size);
  return i < 0 ? i + size : i;
}
}  // namespace

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& c : children_) h = c.module->forward(h);
  return h;
}

std::shared_ptr<Module> Sequential::ptr(int64_t i) const {
  const auto& c = children_[size_t(wrap_index(i, children_.size(), "Sequential"))];
  return c.owned ? c.owned : std::shared_ptr<Module>(std::shared_ptr<Module>(), c.module);
}

std::shared_ptr<Sequential> Sequential::slice(int64_t start, int64_t end) const {
  int64_t n = int64_t(children_.size());
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  auto out = std::make_shared<Sequential>();
  // Keys keep their original indices, as PyTorch's Sequential slicing does.
  for (int64_t i = start; i < end; ++i) out->register_module(children_[i].name, ptr(i));
  return out;
}

Module& ModuleList::operator[](int64_t i) const {
  return *children_[size_t(wrap_index(i, children_.size(), "ModuleList"))].module;
}

bool ModuleDict::contains(const std::string& key) const {
  return std::any_of(children_.begin(), children_.end(), [&](const auto& c) { return c.name == key; });
}

Module& ModuleDict::operator[](const std::string& key) const {
  for (const auto& c : children_) if (c.name == key) return *c.module;
  throw IndexError(::ember::detail::cat("ModuleDict has no key '", key, "'"));
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& c : children_) out.push_back(c.name);
  return out;
}

}  // namespace ember::nn
