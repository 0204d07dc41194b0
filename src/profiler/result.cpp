// Turns a stopped session's raw buffers into a ProfilerResult: events in start order with
// parents and children, self times, memory and device time attributed to the events that were
// innermost when they happened, device activities as events of their own.
#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "ember/core/errors.h"
#include "profiler/raw_events.h"

namespace ember::profiler {

ProfilerResult::ProfilerResult(ProfilerConfig config, std::vector<ProfilerEvent> events,
                               std::vector<MemoryEvent> memory, int64_t duration_ns, int64_t base_time_epoch_ns,
                               std::vector<std::string> warnings)
    : config_(config),
      events_(std::move(events)),
      memory_(std::move(memory)),
      duration_ns_(duration_ns),
      base_time_epoch_ns_(base_time_epoch_ns),
      warnings_(std::move(warnings)) {}

std::string ProfilerResult::use_device() const {
  if (config_.cuda) return "cuda";
  for (const auto& e : events_)
    if (e.kind == EventKind::Kernel) return "cuda";
  return "";
}

namespace detail {

namespace {

// The event's name as torch shows it: dispatched ops and composites in the aten namespace.
std::string event_name(const RawEvent& r) {
  if (r.static_name) return std::string("aten::") + r.static_name;
  return r.dynamic_name;
}

}  // namespace

std::shared_ptr<ProfilerResult> build_result(RawSession& s) {
  // 1. Flatten the per-thread buffers; parents become global indices.
  std::vector<ProfilerEvent> flat;
  std::vector<MemoryEvent> memory;
  for (auto& b : s.buffers) {
    const int64_t offset = int64_t(flat.size());
    for (auto& r : b->events) {
      ProfilerEvent e;
      e.id = r.id;
      e.name = event_name(r);
      e.kind = r.kind;
      e.start_ns = r.start_ns - s.start_ns;
      e.end_ns = (r.end_ns < 0 ? s.stop_ns : r.end_ns) - s.start_ns;
      e.thread = b->os_tid;
      e.sequence_nr = r.seq_nr;
      e.fwd_thread = r.fwd_thread;
      e.inputs = std::move(r.inputs);
      e.stack = std::move(r.stack);
      e.parent = r.parent < 0 ? -1 : offset + r.parent;
      if (s.config.with_flops) e.flops = estimate_flops(e.name, e.inputs);
      if (!s.config.record_shapes) e.inputs.clear();  // recorded only for the FLOPs
      flat.push_back(std::move(e));
    }
    for (auto& m : b->memory) {
      MemoryEvent c = m;
      c.ts_ns -= s.start_ns;
      c.event = m.event < 0 ? -1 : offset + m.event;
      memory.push_back(c);
    }
  }
  const int64_t num_cpu = int64_t(flat.size());

  // 2. Device activities: events of their own, linked to the op that launched them.
  std::unordered_map<int64_t, int64_t> by_id;
  for (int64_t i = 0; i < num_cpu; ++i) by_id[flat[size_t(i)].id] = i;
  std::unordered_map<int64_t, int64_t> runtime_by_correlation;
  for (auto& c : s.runtime_calls) {
    ProfilerEvent e;
    e.name = c.name;
    e.kind = EventKind::Runtime;
    e.start_ns = c.start_ns - s.start_ns;
    e.end_ns = c.end_ns - s.start_ns;
    e.thread = c.thread;
    e.correlation = c.correlation;
    auto it = by_id.find(c.external_id);
    e.parent = it == by_id.end() ? -1 : it->second;
    runtime_by_correlation[c.correlation] = int64_t(flat.size());
    flat.push_back(std::move(e));
  }
  for (auto& a : s.activities) {
    ProfilerEvent e;
    e.name = a.name;
    e.kind = EventKind::Kernel;
    e.device_activity_kind = a.kind;
    e.start_ns = a.start_ns - s.start_ns;
    e.end_ns = a.end_ns - s.start_ns;
    e.device_type = DeviceType::CUDA;
    e.device_index = a.device;
    e.stream = a.stream;
    e.correlation = a.correlation;
    e.grid = a.grid;
    e.block = a.block;
    auto it = by_id.find(a.external_id);
    e.launched_by = it == by_id.end() ? -1 : it->second;
    e.self_device_time_ns = e.device_time_ns = e.end_ns - e.start_ns;
    flat.push_back(std::move(e));
  }

  // 3. Start order (parents before children: a parent starts no later than its children, and
  // ties keep the recording order, which opened the parent first).
  std::vector<int64_t> order(flat.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return flat[size_t(a)].start_ns < flat[size_t(b)].start_ns;
  });
  std::vector<int64_t> new_index(flat.size());
  for (size_t k = 0; k < order.size(); ++k) new_index[size_t(order[k])] = int64_t(k);
  std::vector<ProfilerEvent> events;
  events.reserve(flat.size());
  for (int64_t i : order) {
    ProfilerEvent e = std::move(flat[size_t(i)]);
    if (e.parent >= 0) e.parent = new_index[size_t(e.parent)];
    if (e.launched_by >= 0) e.launched_by = new_index[size_t(e.launched_by)];
    events.push_back(std::move(e));
  }
  for (auto& m : memory)
    if (m.event >= 0) m.event = new_index[size_t(m.event)];
  std::stable_sort(memory.begin(), memory.end(), [](const MemoryEvent& a, const MemoryEvent& b) { return a.ts_ns < b.ts_ns; });

  // 4. Children, self CPU time (CPU events only; runtime calls count as their launcher's children).
  for (int64_t i = 0; i < int64_t(events.size()); ++i) {
    auto& e = events[size_t(i)];
    if (e.kind == EventKind::Kernel) continue;
    if (e.parent >= 0) events[size_t(e.parent)].children.push_back(i);
  }
  for (auto& e : events) {
    if (e.kind == EventKind::Kernel) continue;
    int64_t inside = 0;
    for (int64_t c : e.children) inside += events[size_t(c)].duration_ns();
    e.self_cpu_time_ns = std::max<int64_t>(0, e.duration_ns() - inside);
  }

  // 5. Memory and device time: self on the innermost event, totals summed up the tree (children
  // come after their parents in start order, so one backward pass suffices).
  for (const auto& m : memory) {
    if (m.event < 0) continue;
    auto& e = events[size_t(m.event)];
    (m.device.type == DeviceType::CPU ? e.self_cpu_memory : e.self_device_memory) += m.bytes;
  }
  for (const auto& k : events)
    if (k.kind == EventKind::Kernel && k.launched_by >= 0) events[size_t(k.launched_by)].self_device_time_ns += k.duration_ns();
  for (auto& e : events) {
    if (e.kind == EventKind::Kernel) continue;
    e.cpu_memory += e.self_cpu_memory;
    e.device_memory += e.self_device_memory;
    e.device_time_ns += e.self_device_time_ns;
  }
  for (int64_t i = int64_t(events.size()) - 1; i >= 0; --i) {
    const auto& e = events[size_t(i)];
    if (e.kind == EventKind::Kernel || e.parent < 0) continue;
    auto& p = events[size_t(e.parent)];
    p.cpu_memory += e.cpu_memory;
    p.device_memory += e.device_memory;
    p.device_time_ns += e.device_time_ns;
  }

  int64_t duration = s.stop_ns - s.start_ns;
  return std::make_shared<ProfilerResult>(s.config, std::move(events), std::move(memory), duration, s.epoch_ns,
                                          std::move(s.warnings));
}

}  // namespace detail
}  // namespace ember::profiler
