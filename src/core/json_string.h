#pragma once
// A string as a JSON string literal (quotes, backslash escapes, \u00XX for other control
// characters), appended to out. Used by the safetensors header and the profiler's traces.
#include <string>
#include <string_view>

namespace ember {

inline void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 0xF];
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

}  // namespace ember
