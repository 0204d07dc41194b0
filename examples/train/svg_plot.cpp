#include "svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <ember/core/errors.h>

namespace train_demo {

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (!(hi > lo)) {
    double pad = std::abs(lo) > 0 ? std::abs(lo) * 0.1 : 1.0;
    lo -= pad;
    hi += pad;
  }
  double raw = (hi - lo) / std::max(1, max_ticks - 1);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::floor(lo / step) * step; t <= hi + step * 0.5; t += step) ticks.push_back(t);
  // Ticks must cover the data at both ends.
  if (ticks.back() < hi) ticks.push_back(ticks.back() + step);
  return ticks;
}

namespace {

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

void draw_panel(std::ostringstream& svg, const Panel& p, double x0, double y0, double w, double h) {
  size_t epochs = 0;
  double lo = INFINITY, hi = -INFINITY;
  for (const Series& s : p.series) {
    epochs = std::max(epochs, s.y.size());
    for (double v : s.y)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  std::vector<double> yt = nice_ticks(lo, hi);
  double ymin = yt.front(), ymax = yt.back();
  double xmax = std::max<double>(2, double(epochs));
  // Plot area inside the panel, leaving room for labels.
  double L = x0 + 62, R = x0 + w - 14, T = y0 + 34, B = y0 + h - 46;
  auto X = [&](double e) { return L + (e - 1) / (xmax - 1) * (R - L); };
  auto Y = [&](double v) { return B - (v - ymin) / (ymax - ymin) * (B - T); };

  svg << "<text x='" << (L + R) / 2 << "' y='" << y0 + 20 << "' text-anchor='middle' font-size='15' font-weight='bold'>"
      << escape(p.title) << "</text>\n";
  for (double t : yt) {
    svg << "<line x1='" << L << "' x2='" << R << "' y1='" << Y(t) << "' y2='" << Y(t) << "' stroke='#e4e4e4'/>\n";
    svg << "<text x='" << L - 6 << "' y='" << Y(t) + 4 << "' text-anchor='end' font-size='11'>" << fmt(t) << "</text>\n";
  }
  std::vector<double> xt = nice_ticks(1, xmax, 8);
  for (double e : xt) {
    if (e < 1 || e > xmax || e != std::floor(e)) continue;
    svg << "<line x1='" << X(e) << "' x2='" << X(e) << "' y1='" << B << "' y2='" << B + 4 << "' stroke='#444'/>\n";
    svg << "<text x='" << X(e) << "' y='" << B + 17 << "' text-anchor='middle' font-size='11'>" << fmt(e) << "</text>\n";
  }
  svg << "<rect x='" << L << "' y='" << T << "' width='" << R - L << "' height='" << B - T
      << "' fill='none' stroke='#444'/>\n";
  svg << "<text x='" << (L + R) / 2 << "' y='" << B + 36 << "' text-anchor='middle' font-size='12'>epoch</text>\n";
  svg << "<text transform='translate(" << x0 + 16 << "," << (T + B) / 2
      << ") rotate(-90)' text-anchor='middle' font-size='12'>" << escape(p.y_label) << "</text>\n";
  double ly = T + 10;
  for (const Series& s : p.series) {
    std::ostringstream pts;
    for (size_t i = 0; i < s.y.size(); ++i) pts << X(double(i + 1)) << ',' << Y(s.y[i]) << ' ';
    svg << "<polyline fill='none' stroke='" << s.color << "' stroke-width='2' points='" << pts.str() << "'/>\n";
    for (size_t i = 0; i < s.y.size(); ++i)
      svg << "<circle cx='" << X(double(i + 1)) << "' cy='" << Y(s.y[i]) << "' r='3' fill='" << s.color << "'/>\n";
    // Legend in the top-right corner of the plot area.
    svg << "<line x1='" << R - 110 << "' x2='" << R - 90 << "' y1='" << ly << "' y2='" << ly << "' stroke='" << s.color
        << "' stroke-width='2'/>\n";
    svg << "<text x='" << R - 85 << "' y='" << ly + 4 << "' font-size='11'>" << escape(s.label) << "</text>\n";
    ly += 16;
  }
}

}  // namespace

void write_svg_plot(const std::filesystem::path& file, const std::string& title, const std::vector<Panel>& panels) {
  const double pw = 460, ph = 340, top = 36;
  double width = pw * double(panels.size()), height = ph + top;
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  svg << "<text x='" << width / 2 << "' y='24' text-anchor='middle' font-size='17'>" << escape(title) << "</text>\n";
  for (size_t i = 0; i < panels.size(); ++i) draw_panel(svg, panels[i], pw * double(i), top, pw, ph);
  svg << "</svg>\n";
  std::filesystem::path tmp = file;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << svg.str();
    EMBER_CHECK(out.good(), "cannot write the plot to ", tmp.string());
  }
  std::filesystem::rename(tmp, file);
}

}  // namespace train_demo
