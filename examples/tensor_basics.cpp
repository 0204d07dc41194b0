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

  // Autograd: f(x) = x^3 + 2x^2 + 3x + 4, f'(2) = 23.
  Tensor x = tensor(2.0, {.requires_grad = true});
  Tensor f = x.pow(3) + 2 * x.pow(2) + 3 * x + 4;
  f.backward();
  std::cout << "f(2) = " << f.item<double>() << ", f'(2) = " << x.grad().item<double>()
            << " (grad_fn " << f.grad_fn()->name() << ")\n";
  return 0;
}
