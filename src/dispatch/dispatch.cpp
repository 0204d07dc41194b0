#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "ember/dispatch/op.h"

namespace ember {

const char* dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::PrivateUse1: return "PrivateUse1";
    case DispatchKey::Meta: return "Meta";
    case DispatchKey::CompositeBackend: return "CompositeBackend";
    case DispatchKey::Autograd: return "Autograd";
    case DispatchKey::Autocast: return "Autocast";
    case DispatchKey::Profiler: return "Profiler";
    case DispatchKey::Tracer: return "Tracer";
    case DispatchKey::NumKeys: break;
  }
  return "Unknown";
}

LocalDispatchState& local_dispatch_state() {
  thread_local LocalDispatchState state;
  return state;
}

void throw_no_kernel(const char* op, DispatchKey key) {
  throw NotImplementedError(detail::cat(
      "Could not run '", op, "' with arguments from the '", dispatch_key_name(key),
      "' backend: no kernel is registered for it"));
}

namespace {
struct ObserverRegistry {
  std::recursive_mutex mu;  // an observer may itself run ops
  std::vector<std::pair<int, OpObserver>> list;
  int next_id = 0;
  void publish() {  // the dispatcher's one-word check (op_recording.h)
    if (list.empty()) profiler::detail::g_op_recording.fetch_and(~profiler::detail::kPlainObservers);
    else profiler::detail::g_op_recording.fetch_or(profiler::detail::kPlainObservers);
  }
};
ObserverRegistry& observers() {
  static ObserverRegistry r;
  return r;
}
}  // namespace

int add_op_observer(OpObserver o) {
  auto& r = observers();
  std::lock_guard<std::recursive_mutex> g(r.mu);
  r.list.emplace_back(r.next_id, std::move(o));
  r.publish();
  return r.next_id++;
}

void remove_op_observer(int id) {
  auto& r = observers();
  std::lock_guard<std::recursive_mutex> g(r.mu);
  std::erase_if(r.list, [id](const auto& p) { return p.first == id; });
  r.publish();
}

void notify_op_begin(const char* name) {
  auto& r = observers();
  std::lock_guard<std::recursive_mutex> g(r.mu);
  for (auto& [id, o] : r.list) if (o.on_begin) o.on_begin(name);
}

void notify_op_end(const char* name) {
  auto& r = observers();
  std::lock_guard<std::recursive_mutex> g(r.mu);
  for (auto& [id, o] : r.list) if (o.on_end) o.on_end(name);
}

}  // namespace ember
