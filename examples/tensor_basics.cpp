// The README's first command runs this: build tensors, do arithmetic, print them.
#include <ember/ember.h>

#include <iostream>

int main() {
  using namespace ember;
  manual_seed(0);
  Tensor a = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Tensor b = arange(3, {.dtype = kFloat32});
  std::cout << "a =\n" << a << "\n";
  std::cout << "b = " << b << "\n";
  std::cout << "a + b =\n" << a + b << "\n";
  std::cout << "a * 2 - 1 =\n" << a * 2 - 1 << "\n";
  std::cout << "a @ a.T =\n" << a.matmul(a.t()) << "\n";
  std::cout << "a.sum(dim=1) = " << a.sum({1}) << "\n";
  std::cout << "softmax(a, dim=1) =\n" << a.softmax(1) << "\n";
  std::cout << "a[:, 1:] =\n" << a.slice(1, 1) << "\n";
  std::cout << "a > 2.5 =\n" << (a > 2.5) << "\n";
  std::cout << "integer division 7 / 2 = " << tensor({7}) / 2 << "\n";
  std::cout << "randn(2, 3) =\n" << randn({2, 3}) << "\n";
  return 0;
}
