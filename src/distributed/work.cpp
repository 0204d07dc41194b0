#include "ember/distributed/process_group.h"

#include <algorithm>
#include <chrono>

namespace ember::distributed {

bool Work::wait(Millis timeout) {
  wait_transport(timeout);
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout.count() > 0) {
    if (!done_cv_.wait_for(lock, timeout, [&] { return done_; })) return false;
  } else {
    done_cv_.wait(lock, [&] { return done_; });
  }
  if (error_) std::rethrow_exception(error_);
  return true;
}

bool Work::is_completed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

bool Work::is_success() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ && !error_;
}

std::vector<Tensor> Work::result() {
  wait();
  std::lock_guard<std::mutex> lock(mutex_);
  return outputs_;
}

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

void Work::finish(std::exception_ptr error, std::vector<Tensor> outputs) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = std::move(error);
    outputs_ = std::move(outputs);
  }
  done_cv_.notify_all();
}

}  // namespace ember::distributed
