#pragma once
// How modules print numbers, as Python's repr does inside torch's extra_repr strings.
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

namespace ember::nn {

// 0.01, 1.0, 1e-05: shortest round-trip digits, whole numbers with ".0".
inline std::string py_float(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// (3, 3) and the one-element tuple (4,).
inline std::string py_tuple(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

}  // namespace ember::nn
