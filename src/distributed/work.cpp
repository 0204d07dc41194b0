#include "ember/distributed/process_group.h"

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
