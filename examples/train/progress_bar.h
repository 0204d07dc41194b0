#pragma once
// A tqdm-style progress line for one epoch:
//   epoch 2/3  45%|█████▍      | 211/469 [00:12<00:15, 1753 samples/s, loss 0.5120, acc 81.30%]
// On a terminal it redraws in place (at most 10 times a second); into a file or pipe it writes a
// line at every quarter, so logs stay short.
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace train_demo {

class ProgressBar {
 public:
  ProgressBar(std::ostream& out, std::string label, int64_t total_steps, bool interactive);
  // After each batch: samples in it and the running loss and accuracy (percent).
  void update(int64_t samples, double loss, double accuracy);
  // Erases the line (terminal) so the epoch's summary row can take its place.
  void finish();

 private:
  void draw();
  std::ostream& out_;
  std::string label_;
  int64_t total_, step_ = 0, samples_ = 0;
  double loss_ = 0, accuracy_ = 0;
  bool interactive_;
  int next_quarter_ = 1;
  std::chrono::steady_clock::time_point start_, last_draw_;
  size_t last_width_ = 0;
};

// "mm:ss" (or "h:mm:ss").
std::string format_duration(double seconds);

}  // namespace train_demo
