// The key_averages table in torch's layout: the same columns, widths, number formats, sorting
// and totals line, so a table from ember reads like one from PyTorch beside it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "ember/core/errors.h"
#include "ember/profiler.h"

namespace ember::profiler {

std::string format_time_us(double us) {
  char buf[64];
  if (us >= 1e6) std::snprintf(buf, sizeof buf, "%.3fs", us / 1e6);
  else if (us >= 1e3) std::snprintf(buf, sizeof buf, "%.3fms", us / 1e3);
  else std::snprintf(buf, sizeof buf, "%.3fus", us);
  return buf;
}

std::string format_memory(int64_t bytes) {
  const double kb = 1024, mb = 1024 * kb, gb = 1024 * mb;
  char buf[64];
  double a = std::fabs(double(bytes));
  if (a >= gb) std::snprintf(buf, sizeof buf, "%.2f GB", double(bytes) / gb);
  else if (a >= mb) std::snprintf(buf, sizeof buf, "%.2f MB", double(bytes) / mb);
  else if (a >= kb) std::snprintf(buf, sizeof buf, "%.2f KB", double(bytes) / kb);
  else return std::to_string(bytes) + " B";
  return buf;
}

namespace {

double us(int64_t ns) { return double(ns) / 1000.0; }

std::string share(double part, double total) {
  if (total == 0) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", part * 100.0 / total);
  return buf;
}

std::string time_text(double time_us, const std::string& unit) {
  char buf[64];
  if (unit == "s") std::snprintf(buf, sizeof buf, "%.3fs", time_us / 1e6);
  else if (unit == "ms") std::snprintf(buf, sizeof buf, "%.3fms", time_us / 1e3);
  else if (unit == "us") std::snprintf(buf, sizeof buf, "%.3fus", time_us);
  else return format_time_us(time_us);
  return buf;
}

// The value a sort_by name reads, with torch's spelling ("cuda_time_total" is the device time).
std::function<double(const EventAverage&)> sort_key(std::string name) {
  for (const char* alias : {"cuda", "xpu", "privateuse1"}) {
    for (size_t p; (p = name.find(alias)) != std::string::npos;) name.replace(p, std::string(alias).size(), "device");
  }
  auto avg = [](int64_t total, int64_t count) { return count ? double(total) / double(count) : 0.0; };
  if (name == "cpu_time_total") return [](const EventAverage& e) { return double(e.cpu_time_total_ns); };
  if (name == "self_cpu_time_total") return [](const EventAverage& e) { return double(e.self_cpu_time_total_ns); };
  if (name == "cpu_time") return [avg](const EventAverage& e) { return avg(e.cpu_time_total_ns, e.count); };
  if (name == "device_time_total") return [](const EventAverage& e) { return double(e.device_time_total_ns); };
  if (name == "self_device_time_total") return [](const EventAverage& e) { return double(e.self_device_time_total_ns); };
  if (name == "device_time") return [avg](const EventAverage& e) { return avg(e.device_time_total_ns, e.count); };
  if (name == "cpu_memory_usage") return [](const EventAverage& e) { return double(e.cpu_memory); };
  if (name == "self_cpu_memory_usage") return [](const EventAverage& e) { return double(e.self_cpu_memory); };
  if (name == "device_memory_usage") return [](const EventAverage& e) { return double(e.device_memory); };
  if (name == "self_device_memory_usage") return [](const EventAverage& e) { return double(e.self_device_memory); };
  if (name == "count") return [](const EventAverage& e) { return double(e.count); };
  if (name == "flops") return [](const EventAverage& e) { return double(e.flops); };
  throw ValueError(ember::detail::cat(
      "table(): sort_by='", name, "' is not a column; use one of cpu_time, cpu_time_total, self_cpu_time_total, "
      "cuda_time, cuda_time_total, self_cuda_time_total (or device_*), cpu_memory_usage, self_cpu_memory_usage, "
      "cuda_memory_usage, self_cuda_memory_usage, count, flops"));
}

// Python's "{: >W}" / "{: <W}": pads to W, never truncates.
void cell(std::string& line, const std::string& text, int64_t width, bool left = false) {
  int64_t pad = std::max<int64_t>(0, width - int64_t(text.size()));
  if (left) line += text + std::string(size_t(pad), ' ');
  else line += std::string(size_t(pad), ' ') + text;
  line += "  ";
}

std::string trim_path(std::string path, int64_t width) {
  if (int64_t(path.size()) > width) {
    path = path.substr(path.size() - size_t(width));
    if (path.size() > 3) path = "..." + path.substr(3);
  }
  return path;
}

}  // namespace

std::string table(const std::vector<EventAverage>& input_rows, const TableOptions& o, const std::string& use_device,
                  bool profile_memory, bool with_flops) {
  if (input_rows.empty()) return "";
  std::vector<EventAverage> rows = input_rows;
  if (!o.sort_by.empty()) {
    auto key = sort_key(o.sort_by);
    std::stable_sort(rows.begin(), rows.end(), [&](const EventAverage& a, const EventAverage& b) { return key(a) > key(b); });
  }
  bool has_device_time = false, has_device_mem = false, has_shapes = false, has_stack = false;
  int64_t name_width = 0, shapes_width = 0, src_width = 0;
  int64_t min_flops = 0;
  for (const auto& r : rows) {
    has_device_time |= r.self_device_time_total_ns > 0;
    has_device_mem |= r.self_device_memory > 0;
    has_shapes |= !r.input_shapes.empty() && r.input_shapes != "[]";
    name_width = std::max<int64_t>(name_width, int64_t(r.key.size()) + 4);
    shapes_width = std::max<int64_t>(shapes_width, int64_t(r.input_shapes.size()) + 4);
    for (const auto& f : r.stack) {
      has_stack = true;
      src_width = std::max<int64_t>(src_width, int64_t(f.size()) + 4);
    }
    if (r.flops > 0) min_flops = min_flops == 0 ? r.flops : std::min(min_flops, r.flops);
  }
  EMBER_CHECK(!(has_device_time && use_device.empty()), "table(): use_device is None, but there is device performance data");
  if (o.max_name_column_width > 0) name_width = std::min(name_width, o.max_name_column_width);
  if (o.max_shapes_column_width > 0) shapes_width = std::min(shapes_width, o.max_shapes_column_width);
  if (o.max_src_column_width > 0) src_width = std::min(src_width, o.max_src_column_width);
  const int64_t width = 12;
  std::string device_name = use_device;
  std::transform(device_name.begin(), device_name.end(), device_name.begin(), ::toupper);
  if (device_name.empty()) device_name = "None";

  std::vector<std::string> headers = {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"};
  if (has_device_time)
    headers.insert(headers.end(), {"Self " + device_name, "Self " + device_name + " %", device_name + " total",
                                   device_name + " time avg"});
  if (profile_memory) {
    headers.insert(headers.end(), {"CPU Mem", "Self CPU Mem"});
    if (!use_device.empty() && has_device_mem) headers.insert(headers.end(), {device_name + " Mem", "Self " + device_name + " Mem"});
  }
  headers.push_back("# of Calls");
  std::vector<int64_t> widths(headers.size(), width);
  widths[0] = name_width;
  std::vector<bool> left(headers.size(), false);
  if (has_shapes) { headers.push_back("Input Shapes"); widths.push_back(shapes_width); left.push_back(false); }
  if (has_stack) { headers.push_back("Source Location"); widths.push_back(src_width); left.push_back(true); }
  // torch orders the values flops-before-stack but the headers stack-before-flops; with both on
  // its columns disagree. Here the header follows the value.
  double flops_scale = 1;
  std::string flops_header;
  if (with_flops && min_flops > 0) {
    static const char* names[] = {"FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"};
    double lg = std::max(0.0, std::min(std::log10(double(min_flops)) / 3.0, 5.0));
    int k = int(std::floor(lg));
    flops_scale = std::pow(10.0, -3.0 * k);
    flops_header = std::string("Total ") + names[k];
    size_t at = has_stack ? headers.size() - 1 : headers.size();
    headers.insert(headers.begin() + ptrdiff_t(at), flops_header);
    widths.insert(widths.begin() + ptrdiff_t(at), width);
    left.insert(left.begin() + ptrdiff_t(at), false);
  } else {
    with_flops = false;
  }

  int64_t line_length = -2;
  std::string sep;
  for (int64_t w : widths) {
    sep += std::string(size_t(w), '-') + "  ";
    line_length += w + 2;
  }
  auto format_row = [&](const std::vector<std::string>& values) {
    std::string line;
    for (size_t k = 0; k < values.size(); ++k) cell(line, values[k], widths[k], left[k]);
    return line;
  };

  double sum_self_cpu = 0, sum_self_device = 0;
  for (const auto& r : rows) {
    sum_self_cpu += us(r.self_cpu_time_total_ns);
    if (r.is_device_event && !r.is_user_annotation) sum_self_device += us(r.self_device_time_total_ns);
  }

  std::string out;
  auto append = [&](const std::string& s) { out += s + "\n"; };
  if (!o.header.empty()) {
    append(std::string(size_t(line_length), '='));
    append(o.header);
  }
  if (o.top_level_events_only) {
    append(std::string(size_t(line_length), '='));
    append("This report only display top-level ops statistics");
  }
  append(sep);
  append(format_row(headers));
  append(sep);

  int64_t shown = 0;
  for (const auto& r : rows) {
    if (shown == o.row_limit) break;
    if (o.top_level_events_only && r.has_parent) continue;
    ++shown;
    std::string name = r.key;
    if (o.max_name_column_width > 0 && int64_t(name.size()) >= o.max_name_column_width - 3)
      name = name.substr(0, size_t(o.max_name_column_width - 3)) + "...";
    const double cnt = double(std::max<int64_t>(r.count, 1));
    std::vector<std::string> v = {name,
                                  share(us(r.self_cpu_time_total_ns), sum_self_cpu),
                                  time_text(us(r.self_cpu_time_total_ns), o.time_unit),
                                  share(us(r.cpu_time_total_ns), sum_self_cpu),
                                  time_text(us(r.cpu_time_total_ns), o.time_unit),
                                  time_text(us(r.cpu_time_total_ns) / cnt, o.time_unit)};
    if (has_device_time) {
      v.push_back(time_text(us(r.self_device_time_total_ns), o.time_unit));
      v.push_back(share(us(r.self_device_time_total_ns), sum_self_device));
      v.push_back(time_text(us(r.device_time_total_ns), o.time_unit));
      v.push_back(time_text(us(r.device_time_total_ns) / cnt, o.time_unit));
    }
    if (profile_memory) {
      v.push_back(format_memory(r.cpu_memory));
      v.push_back(format_memory(r.self_cpu_memory));
      if (!use_device.empty() && has_device_mem) {
        v.push_back(format_memory(r.device_memory));
        v.push_back(format_memory(r.self_device_memory));
      }
    }
    v.push_back(std::to_string(r.count));
    if (has_shapes) v.push_back(r.input_shapes.substr(0, size_t(shapes_width)));
    if (with_flops) {
      char buf[64];
      if (r.flops <= 0) std::snprintf(buf, sizeof buf, "--");
      else std::snprintf(buf, sizeof buf, "%8.3f", double(r.flops) * flops_scale);
      v.push_back(buf);
    }
    if (has_stack) v.push_back(r.stack.empty() ? "" : trim_path(r.stack[0], src_width));
    append(format_row(v));
    if (has_stack) {
      std::vector<std::string> empty(headers.size() - 1);
      for (size_t k = 1; k < r.stack.size(); ++k) {
        auto line = empty;
        line.push_back(trim_path(r.stack[k], src_width));
        append(format_row(line));
      }
      empty.push_back("");
      append(format_row(empty));
    }
  }
  append(sep);
  append("Self CPU time total: " + time_text(sum_self_cpu, o.time_unit));
  if (has_device_time) append("Self " + device_name + " time total: " + time_text(sum_self_device, o.time_unit));
  return out;
}

}  // namespace ember::profiler
