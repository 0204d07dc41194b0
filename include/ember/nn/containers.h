#pragma once
// Sequential, ModuleList, ModuleDict: containers that own their modules (shared_ptr, so a
// slice of a Sequential shares modules with it, as in PyTorch).
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

// make<Linear>(2, 3): a module owned by a shared_ptr, for containers.
template <class M, class... A> std::shared_ptr<M> make(A&&... args) {
  return std::make_shared<M>(std::forward<A>(args)...);
}

class Sequential : public Module {
 public:
  Sequential() = default;
  template <class... M> explicit Sequential(std::shared_ptr<M>... modules) { (push_back(std::move(modules)), ...); }
  explicit Sequential(const std::vector<std::shared_ptr<Module>>& modules) { for (auto& m : modules) push_back(m); }

  void push_back(std::shared_ptr<Module> m) { register_module(std::to_string(children_.size()), std::move(m)); }
  Tensor forward(const Tensor& x) override;
  size_t size() const { return children_.size(); }
  // Negative indices count from the end; out of range is an IndexError.
  Module& operator[](int64_t i) const { return *ptr(i); }
  std::shared_ptr<Module> ptr(int64_t i) const;
  template <class M> M& at(int64_t i) const { return dynamic_cast<M&>((*this)[i]); }
  // seq[start:end] as a new Sequential sharing the modules.
  std::shared_ptr<Sequential> slice(int64_t start, int64_t end) const;
  std::string name() const override { return "Sequential"; }
};

class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(const std::vector<std::shared_ptr<Module>>& modules) { for (auto& m : modules) push_back(m); }
  void push_back(std::shared_ptr<Module> m) { register_module(std::to_string(children_.size()), std::move(m)); }
  size_t size() const { return children_.size(); }
  Module& operator[](int64_t i) const;
  template <class M> M& at(int64_t i) const { return dynamic_cast<M&>((*this)[i]); }
  std::string name() const override { return "ModuleList"; }
};

class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  void insert(const std::string& key, std::shared_ptr<Module> m) { register_module(key, std::move(m)); }
  bool contains(const std::string& key) const;
  Module& operator[](const std::string& key) const;
  std::vector<std::string> keys() const;
  size_t size() const { return children_.size(); }
  std::string name() const override { return "ModuleDict"; }
};

}  // namespace ember::nn
