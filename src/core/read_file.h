#pragma once
// A whole file as bytes; errors name `who` (the reader) and the path.
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "ember/core/errors.h"

namespace ember {

inline std::string read_whole_file(const std::string& path, std::string_view who) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f, who, ": cannot open ", path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EMBER_CHECK(!f.bad(), who, ": error reading ", path);
  return s;
}

}  // namespace ember
