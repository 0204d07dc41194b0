#pragma once
// Training curves as an SVG image (opens in any browser or image viewer): loss on the left,
// accuracy on the right, train and test as two lines each, with axes, ticks and a legend.
#include <filesystem>
#include <string>
#include <vector>

namespace train_demo {

struct Series {
  std::string label;
  std::string color;  // CSS colour
  std::vector<double> y;  // one value per epoch (epoch 1 first)
};

struct Panel {
  std::string title, y_label;
  std::vector<Series> series;
};

// Writes the panels side by side; x is the epoch number. Atomic (temp file + rename).
void write_svg_plot(const std::filesystem::path& file, const std::string& title, const std::vector<Panel>& panels);

// "Nice" axis ticks covering [lo, hi] (1, 2, 2.5 or 5 times a power of ten).
std::vector<double> nice_ticks(double lo, double hi, int max_ticks = 6);

}  // namespace train_demo
