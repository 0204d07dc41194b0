#include "ember/core/errors.h"
#include "ember/distributed/store.h"

namespace ember::distributed {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> base)
    : Store(base ? base->timeout() : kDefaultStoreTimeout), prefix_(std::move(prefix)), base_(std::move(base)) {
  EMBER_CHECK_VALUE(base_ != nullptr, "PrefixStore: the underlying store is None");
}

std::vector<std::string> PrefixStore::keys_of(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(key_of(k));
  return out;
}

void PrefixStore::set(const std::string& key, const Bytes& value) { base_->set(key_of(key), value); }
Bytes PrefixStore::get(const std::string& key) { return base_->get(key_of(key)); }
int64_t PrefixStore::add(const std::string& key, int64_t amount) { return base_->add(key_of(key), amount); }
Bytes PrefixStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  return base_->compare_set(key_of(key), expected, desired);
}
bool PrefixStore::check(const std::vector<std::string>& keys) { return base_->check(keys_of(keys)); }
void PrefixStore::wait(const std::vector<std::string>& keys, Millis timeout) { base_->wait(keys_of(keys), timeout); }
bool PrefixStore::delete_key(const std::string& key) { return base_->delete_key(key_of(key)); }
int64_t PrefixStore::num_keys() { return base_->num_keys(); }

}  // namespace ember::distributed
