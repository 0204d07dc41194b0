// Fitting a compiled template in C++ (ember/compile/compiled_template.h: fit_template), for
// exported programs: compile on a grid of sizes, interpolate each number that moves exactly.
//
// Why a grid and Newton's differences: the compiled graph's numbers come from the program's own
// (a view's shape, a slice's end, a piece's length), so a dim's highest power among the program's
// polynomials bounds it in every compiled number too. On the tensor grid base + {0..D_j} per dim
// such a polynomial is determined by its forward differences, which integer arithmetic computes
// exactly; one point past the grid in every dim checks it (a number of higher degree, a product
// a pass made, does not pass and leaves the program compiling per size, as before).
#include <cmath>
#include <map>

#include "ember/compile/compiled_template.h"
#include "ember/core/errors.h"

namespace ember::compiler {
namespace {

using Wide = __int128;
using Poly = std::map<uint64_t, Wide>;  // exponents per dim (a byte each, dim 0 lowest) -> coefficient

bool mul(Wide a, Wide b, Wide& out) { return !__builtin_mul_overflow(a, b, &out); }
bool add(Wide a, Wide b, Wide& out) { return !__builtin_add_overflow(a, b, &out); }

// n choose a for a small a (n >= 0), exactly.
Wide choose(int64_t n, int64_t a) {
  Wide r = 1;
  for (int64_t i = 0; i < a; ++i) r = r * Wide(n - i) / Wide(i + 1);  // (each partial product is a binomial)
  return r;
}

// A number of a compiled graph as an integer (a Double place that holds an integer counts).
bool as_integer(const GraphNumbers& n, size_t k, Wide& out) {
  if (!n.is_double[k]) {
    out = n.ints[k];
    return true;
  }
  const double d = n.doubles[k];
  if (!(std::floor(d) == d) || std::abs(d) > 9.0e15) return false;
  out = Wide(int64_t(d));
  return true;
}

}  // namespace

std::shared_ptr<const CompiledTemplate> fit_template(const SymbolicShapes& sym, const CompileAt& compile, std::string& why) {
  const size_t k = sym.names.size();
  if (k == 0) return why = "no dynamic dims", nullptr;
  // per dim: the highest power it has in the program's polynomials, and the grid's base
  std::vector<int64_t> degree(k, 0), base(k, 0), radix(k, 0);
  for (const auto& s : sym.sites)
    for (const auto& t : s.poly.terms)
      for (size_t j = 0; j < t.power.size() && j < k; ++j) degree[j] = std::max<int64_t>(degree[j], t.power[j]);
  int64_t points = 1;
  for (size_t j = 0; j < k; ++j) {
    const int64_t low = std::max<int64_t>(2, sym.min[j]);
    base[j] = sym.example[j];
    if (sym.max[j] != -1 && base[j] + degree[j] + 1 > sym.max[j]) base[j] = sym.max[j] - degree[j] - 1;
    if (base[j] < low) return why = "dim '" + sym.names[j] + "' has too narrow a range to fit on", nullptr;
    radix[j] = degree[j] + 1;
    points *= radix[j];
  }
  if (points > 64) return why = std::to_string(points) + " compilations would be needed to fit", nullptr;

  // compile on the grid (offsets in mixed radix, dim 0 fastest) and one point past it
  std::vector<std::shared_ptr<CompiledGraph>> compiled;
  std::vector<GraphNumbers> numbers;
  std::string key;
  for (int64_t g = 0; g <= points; ++g) {
    std::vector<int64_t> dims(k);
    for (size_t j = 0, rest = size_t(g); j < k; ++j) {
      dims[j] = base[j] + (g == points ? degree[j] + 1 : int64_t(rest % size_t(radix[j])));
      rest /= size_t(radix[j]);
    }
    std::shared_ptr<CompiledGraph> c;
    try {  // (a grid size the graph cannot take: no template, the call itself goes on)
      c = compile(dims);
    } catch (const std::exception& e) {
      return why = std::string("compiling on the fitting grid failed: ") + e.what(), nullptr;
    }
    if (!c) return why = "a compilation failed", nullptr;
    numbers.push_back(graph_numbers(c->graph()));
    const std::string here = c->structure_key();
    if (g == 0) key = here;
    else if (here != key) return why = "the compilations differ between sizes beyond their numbers", nullptr;
    compiled.push_back(std::move(c));
  }

  // each univariate factor a! C(d - base, a) = prod_{i<a} (d - base - i), per dim and a <= degree
  std::vector<std::vector<std::vector<Wide>>> falling(k);  // [dim][a] -> coefficients by power
  Wide scale = 1;                                           // prod_j degree_j!: clears the denominators
  for (size_t j = 0; j < k; ++j) {
    falling[j].push_back({1});
    for (int64_t a = 0; a < degree[j]; ++a) {
      const auto& q = falling[j].back();
      std::vector<Wide> next(q.size() + 1, 0);
      for (size_t e = 0; e < q.size(); ++e) {
        next[e + 1] += q[e];
        next[e] -= q[e] * Wide(base[j] + a);
      }
      falling[j].push_back(std::move(next));
      scale *= Wide(a + 1);
    }
  }

  SymbolicShapes fitted;
  fitted.names = sym.names;
  fitted.min = sym.min;
  fitted.max = sym.max;
  fitted.example = base;
  fitted.caller_binds = true;
  std::vector<Wide> diff(static_cast<size_t>(points));
  for (size_t p : differing_places(numbers)) {
    const std::string where = "a compiled number (place " + std::to_string(p) + ")";
    Wide check = 0;
    for (int64_t g = 0; g < points; ++g)
      if (!as_integer(numbers[size_t(g)], p, diff[size_t(g)])) return why = where + " is not an integer", nullptr;
    if (!as_integer(numbers[size_t(points)], p, check)) return why = where + " is not an integer", nullptr;
    // forward differences along each dim: diff[alpha] = Delta^alpha f(base)
    int64_t stride = 1;
    for (size_t j = 0; j < k; ++j) {
      for (int64_t g = 0; g < points; ++g) {
        if ((g / stride) % radix[j] != 0) continue;  // one line along dim j per start
        for (int64_t s = 1; s <= degree[j]; ++s)
          for (int64_t i = degree[j]; i >= s; --i) {
            Wide& hi = diff[size_t(g + i * stride)];
            if (__builtin_sub_overflow(hi, diff[size_t(g + (i - 1) * stride)], &hi)) return why = where + " overflows", nullptr;
          }
      }
      stride *= radix[j];
    }
    // the Newton form at the check point, and as a polynomial of the dims (times scale)
    Wide at_check = 0;
    Poly poly;
    for (int64_t g = 0; g < points; ++g) {
      const Wide c = diff[size_t(g)];
      if (c == 0) continue;
      std::vector<int64_t> alpha(k);
      Wide weight = c, factor = scale;
      for (size_t j = 0, rest = size_t(g); j < k; ++j) {
        alpha[j] = int64_t(rest % size_t(radix[j]));
        rest /= size_t(radix[j]);
        if (!mul(weight, choose(degree[j] + 1, alpha[j]), weight)) return why = where + " overflows", nullptr;
        for (int64_t i = 2; i <= alpha[j]; ++i) factor /= Wide(i);  // scale / prod alpha_j!
      }
      if (!add(at_check, weight, at_check)) return why = where + " overflows", nullptr;
      // c * factor * prod_j falling[j][alpha_j](d_j), expanded term by term
      std::vector<size_t> e(k, 0);
      while (true) {
        Wide term = 0;
        if (!mul(c, factor, term)) return why = where + " overflows", nullptr;
        uint64_t power = 0;
        for (size_t j = 0; j < k; ++j) {
          if (!mul(term, falling[j][size_t(alpha[j])][e[j]], term)) return why = where + " overflows", nullptr;
          power |= uint64_t(e[j]) << (8 * j);
        }
        if (!add(poly[power], term, poly[power])) return why = where + " overflows", nullptr;
        size_t j = 0;  // next exponent combination, each e_j <= alpha_j
        while (j < k && ++e[j] > size_t(alpha[j])) e[j++] = 0;
        if (j == k) break;
      }
    }
    if (at_check != check) return why = where + " is no polynomial of the program's degrees", nullptr;
    SymSite site = numbers[0].places[p];
    for (const auto& [power, coef] : poly) {
      if (coef == 0) continue;
      if (coef % scale != 0) return why = where + " is no integer polynomial", nullptr;
      const Wide c = coef / scale;
      if (c > Wide(INT64_MAX) || c < Wide(INT64_MIN)) return why = where + " overflows", nullptr;
      std::vector<uint8_t> powers(k);
      for (size_t j = 0; j < k; ++j) powers[j] = uint8_t(power >> (8 * j));
      site.poly.terms.push_back({int64_t(c), std::move(powers)});
    }
    if (site.poly.terms.empty()) site.poly.terms.push_back({0, std::vector<uint8_t>(k, 0)});
    fitted.sites.push_back(std::move(site));
  }
  try {
    return std::make_shared<const CompiledTemplate>(compiled[0], std::make_shared<const SymbolicShapes>(std::move(fitted)));
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

}  // namespace ember::compiler
