#pragma once
// torch.set_printoptions for Tensor::str(): process-wide, as torch's PRINT_OPTS.
#include <cstdint>
#include <optional>
#include <string>

namespace ember {

struct PrintOptions {
  int precision = 4;           // digits after the point
  int64_t threshold = 1000;    // more elements than this are summarised
  int64_t edgeitems = 3;       // items shown at each end of a summarised dim
  int64_t linewidth = 80;      // characters per line before wrapping
  std::optional<bool> sci_mode;  // force scientific (true) or fixed (false); unset: chosen per tensor
};

// Each unset argument keeps its current value; `profile` ("default", "short", "full") is applied
// first, as torch does.
void set_printoptions(std::optional<int> precision = std::nullopt, std::optional<int64_t> threshold = std::nullopt,
                      std::optional<int64_t> edgeitems = std::nullopt, std::optional<int64_t> linewidth = std::nullopt,
                      std::optional<std::string> profile = std::nullopt,
                      std::optional<std::optional<bool>> sci_mode = std::nullopt);
PrintOptions get_printoptions();

}  // namespace ember
