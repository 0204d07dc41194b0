// After a failed collective: which ranks never reached it (both backends' failure messages).
#include <algorithm>
#include <chrono>

#include "ember/distributed/process_group.h"

namespace ember::distributed {

std::string describe_missing_ranks(Store& store, const std::string& key, int rank, int size, Millis wait) {
  const std::string base = key + "/";
  std::vector<int> missing;
  try {
    store.set(base + std::to_string(rank), Bytes{1});
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      const auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
      try {
        store.wait({base + std::to_string(r)}, std::max(left, Millis(1)));
      } catch (const std::exception&) {
        missing.push_back(r);
      }
    }
  } catch (const std::exception&) {
    return "the store is unreachable too (rank 0, which serves it, may have exited)";
  }
  if (missing.empty()) return "every rank reached this collective (a mismatch of collectives or sizes?)";
  std::string list;
  for (int r : missing) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return std::string("missing rank") + (missing.size() > 1 ? "s " : " ") + list +
         " (exited, or stopped calling the same collectives)";
}

}  // namespace ember::distributed
