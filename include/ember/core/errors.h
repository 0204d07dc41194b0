#pragma once
// Exceptions carry PyTorch-like messages; the Python package maps the classes to
// RuntimeError / IndexError / ValueError / TypeError.
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember {

struct Error : std::runtime_error { using std::runtime_error::runtime_error; };
struct IndexError : Error { using Error::Error; };
struct ValueError : Error { using Error::Error; };
struct TypeError : Error { using Error::Error; };
struct NotImplementedError : Error { using Error::Error; };

namespace detail {
template <class T> void put(std::ostream& os, const T& v) { os << v; }
// Shapes print as [2, 3], as in PyTorch's messages.
inline void put(std::ostream& os, const std::vector<int64_t>& v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
}
template <class... Args> std::string cat(const Args&... args) {
  std::ostringstream os;
  (put(os, args), ...);
  return os.str();
}
}  // namespace detail

}  // namespace ember

// EMBER_CHECK(cond, msg parts...) throws ember::Error; the _INDEX/_VALUE/_TYPE forms pick the class.
#define EMBER_CHECK_AS(EXC, cond, ...) \
  do { if (!(cond)) [[unlikely]] throw ::ember::EXC(::ember::detail::cat(__VA_ARGS__)); } while (0)
#define EMBER_CHECK(cond, ...) EMBER_CHECK_AS(Error, cond, __VA_ARGS__)
#define EMBER_CHECK_INDEX(cond, ...) EMBER_CHECK_AS(IndexError, cond, __VA_ARGS__)
#define EMBER_CHECK_VALUE(cond, ...) EMBER_CHECK_AS(ValueError, cond, __VA_ARGS__)
#define EMBER_CHECK_TYPE(cond, ...) EMBER_CHECK_AS(TypeError, cond, __VA_ARGS__)
