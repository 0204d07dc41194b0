#pragma once
// What the stores share: the timeout error of a wait, and the integers add() keeps as decimal
// text (as torch's stores do: get() of a counter returns b"3").
#include <string>
#include <vector>

#include "ember/distributed/errors.h"
#include "ember/distributed/store.h"

namespace ember::distributed {

[[noreturn]] inline void throw_wait_timeout(const char* store, const std::vector<std::string>& keys, Millis timeout) {
  std::string names;
  for (const auto& k : keys) names += (names.empty() ? "'" : ", '") + k + "'";
  throw DistStoreError(detail::cat(store, ": timed out after ", timeout.count(), " ms waiting for keys ", names,
                                   " (a process that should set them has not: is every rank running?)"));
}

inline int64_t parse_int(const std::string& text, const std::string& key) {
  try {
    size_t used = 0;
    const int64_t v = std::stoll(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw ValueError(detail::cat("Store::add: the value of key '", key, "' is not an integer: '", text, "'"));
}

}  // namespace ember::distributed
