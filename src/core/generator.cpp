#include "ember/core/generator.h"

#include <sstream>

#include "ember/core/errors.h"

namespace ember {

namespace {
thread_local Generator* thread_default_generator = nullptr;
}

Generator& default_generator() {
  if (thread_default_generator) return *thread_default_generator;
  static Generator gen;
  return gen;
}

ThreadDefaultGeneratorGuard::ThreadDefaultGeneratorGuard(Generator* generator)
    : previous_(thread_default_generator) {
  thread_default_generator = generator;
}

ThreadDefaultGeneratorGuard::~ThreadDefaultGeneratorGuard() { thread_default_generator = previous_; }

std::string Generator::get_state() const {
  std::lock_guard g(mu_);
  std::ostringstream os;
  os << seed_ << ' ' << engine_;
  return os.str();
}

void Generator::set_state(const std::string& s) {
  std::lock_guard g(mu_);
  std::istringstream is(s);
  uint64_t seed;
  std::mt19937_64 e;
  is >> seed >> e;
  EMBER_CHECK(!is.fail(), "Generator.set_state: the state is not one get_state produced");
  seed_ = seed;
  engine_ = e;
}

}  // namespace ember
