#include "progress_bar.h"

#include <cstdio>

namespace train_demo {

std::string format_duration(double seconds) {
  auto s = int64_t(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60),
                  (long long)(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  return buf;
}

ProgressBar::ProgressBar(std::ostream& out, std::string label, int64_t total_steps, bool interactive)
    : out_(out), label_(std::move(label)), total_(total_steps), interactive_(interactive),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

void ProgressBar::update(int64_t samples, double loss, double accuracy) {
  ++step_;
  samples_ += samples;
  loss_ = loss;
  accuracy_ = accuracy;
  auto now = std::chrono::steady_clock::now();
  if (interactive_) {
    if (step_ == total_ || now - last_draw_ >= std::chrono::milliseconds(100)) {
      last_draw_ = now;
      draw();
    }
  } else if (total_ > 0 && step_ * 4 >= total_ * next_quarter_ && next_quarter_ < 4) {
    // Quarters 1-3 only: the epoch's summary row reports the end.
    while (next_quarter_ < 4 && step_ * 4 >= total_ * next_quarter_) ++next_quarter_;
    draw();
  }
}

void ProgressBar::draw() {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = elapsed > 0 ? double(samples_) / elapsed : 0;
  double eta = step_ > 0 ? elapsed * double(total_ - step_) / double(step_) : 0;
  double frac = total_ > 0 ? double(step_) / double(total_) : 1;
  constexpr int kWidth = 24;
  std::string bar;
  if (interactive_) {
    // Eighth-blocks give the bar sub-character resolution, as tqdm's does.
    static const char* kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    int eighths = int(frac * kWidth * 8);
    for (int i = 0; i < eighths / 8; ++i) bar += "█";
    int cells = eighths / 8;
    if (cells < kWidth && eighths % 8) {
      bar += kEighths[eighths % 8];
      ++cells;
    }
    bar += std::string(size_t(kWidth - cells), ' ');
  } else {
    int cells = int(frac * kWidth);
    bar = std::string(size_t(cells), '#') + std::string(size_t(kWidth - cells), '.');
  }
  char line[256];
  std::snprintf(line, sizeof line, "%s %3d%%|%s| %lld/%lld [%s<%s, %.0f samples/s, loss %.4f, acc %.2f%%]",
                label_.c_str(), int(frac * 100), bar.c_str(), (long long)step_, (long long)total_,
                format_duration(elapsed).c_str(), format_duration(eta).c_str(), rate, loss_, accuracy_);
  std::string s = line;
  if (interactive_) {
    size_t width = s.size();
    if (width < last_width_) s += std::string(last_width_ - width, ' ');
    last_width_ = width;
    out_ << '\r' << s << std::flush;
  } else {
    out_ << s << '\n' << std::flush;
  }
}

void ProgressBar::finish() {
  if (interactive_ && last_width_) out_ << '\r' << std::string(last_width_, ' ') << '\r' << std::flush;
}

}  // namespace train_demo
