// key_averages(): events grouped by name (and input shapes or stack top when asked), as torch's
// EventList.key_averages; event_rows(): one row per event, for prof.events().table().
#include <algorithm>
#include <map>
#include <tuple>

#include "ember/profiler.h"

namespace ember::profiler {

namespace {

void append_dims(std::string& s, const std::vector<int64_t>& d) {
  s += '[';
  for (size_t k = 0; k < d.size(); ++k) {
    if (k) s += ", ";
    s += std::to_string(d[k]);
  }
  s += ']';
}

// Python's str() of torch's input_shapes: one list per argument, [] for non-tensors, a list of
// lists for a TensorList.
std::string shapes_string(const std::vector<InputInfo>& inputs) {
  std::string s = "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ", ";
    const auto& in = inputs[i];
    if (in.type == "TensorList") {
      s += '[';
      for (size_t k = 0; k < in.list_dims.size(); ++k) {
        if (k) s += ", ";
        append_dims(s, in.list_dims[k]);
      }
      s += ']';
    } else {
      append_dims(s, in.dims);
    }
  }
  return s + "]";
}

EventAverage row_of(const ProfilerEvent& e) {
  EventAverage r;
  r.key = e.name;
  r.count = 1;
  const bool device = e.kind == EventKind::Kernel;
  r.is_device_event = device;
  r.is_user_annotation = e.kind == EventKind::UserAnnotation;
  if (!device) {
    r.cpu_time_total_ns = e.duration_ns();
    r.self_cpu_time_total_ns = e.self_cpu_time_ns;
  }
  r.device_time_total_ns = e.device_time_ns;
  r.self_device_time_total_ns = e.self_device_time_ns;
  r.cpu_memory = e.cpu_memory;
  r.self_cpu_memory = e.self_cpu_memory;
  r.device_memory = e.device_memory;
  r.self_device_memory = e.self_device_memory;
  r.flops = e.flops;
  r.input_shapes = shapes_string(e.inputs);
  r.stack = e.stack;
  r.has_parent = e.parent >= 0;
  return r;
}

void add_into(EventAverage& a, const EventAverage& r) {
  a.count += r.count;
  a.cpu_time_total_ns += r.cpu_time_total_ns;
  a.self_cpu_time_total_ns += r.self_cpu_time_total_ns;
  a.device_time_total_ns += r.device_time_total_ns;
  a.self_device_time_total_ns += r.self_device_time_total_ns;
  a.cpu_memory += r.cpu_memory;
  a.self_cpu_memory += r.self_cpu_memory;
  a.device_memory += r.device_memory;
  a.self_device_memory += r.self_device_memory;
  a.flops += r.flops;
}

}  // namespace

std::vector<EventAverage> event_rows(const ProfilerResult& result) {
  std::vector<EventAverage> rows;
  rows.reserve(result.events().size());
  for (const auto& e : result.events()) rows.push_back(row_of(e));
  return rows;
}

std::vector<EventAverage> key_averages(const ProfilerResult& result, bool group_by_input_shape, int group_by_stack_n) {
  using Key = std::tuple<std::string, std::string, std::vector<std::string>, bool>;
  std::map<Key, size_t> index;
  std::vector<EventAverage> rows;
  for (const auto& e : result.events()) {
    EventAverage r = row_of(e);
    std::vector<std::string> stack_key;
    if (group_by_stack_n > 0)
      stack_key.assign(r.stack.begin(), r.stack.begin() + std::min<ptrdiff_t>(group_by_stack_n, ptrdiff_t(r.stack.size())));
    Key key{r.key, group_by_input_shape ? r.input_shapes : std::string(), stack_key, r.is_device_event};
    auto [it, fresh] = index.try_emplace(key, rows.size());
    if (fresh) {
      rows.push_back(std::move(r));  // the first event of a group gives its shapes and stack
    } else {
      add_into(rows[it->second], r);
    }
  }
  // As torch: shapes only when grouped by them, stacks only as deep as grouped.
  for (auto& r : rows) {
    if (!group_by_input_shape) r.input_shapes.clear();
    if (r.stack.size() > size_t(std::max(group_by_stack_n, 0))) r.stack.resize(size_t(std::max(group_by_stack_n, 0)));
  }
  return rows;
}

}  // namespace ember::profiler
