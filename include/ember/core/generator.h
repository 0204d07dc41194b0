#pragma once
// Random number generation: a Generator object per stream, one default per device, and
// manual_seed. Same seed, same numbers.
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>

namespace ember {

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) { manual_seed(seed); }
  void manual_seed(uint64_t seed) { std::lock_guard g(mu_); seed_ = seed; engine_.seed(seed); }
  uint64_t initial_seed() const { return seed_; }
  // 64 random bits.
  uint64_t next_u64() { std::lock_guard g(mu_); return engine_(); }
  // A uniform double in [0, 1) with 53 random bits; a float in [0, 1) with 24.
  double next_double() { return double(next_u64() >> 11) * 0x1.0p-53; }
  float next_float() { return float(next_u64() >> 40) * 0x1.0p-24f; }
  std::mt19937_64& engine() { return engine_; }
  std::mutex& mutex() { return mu_; }
  // Serialised state (the engine state as text), for get_state/set_state.
  std::string get_state() const;
  void set_state(const std::string& s);

 private:
  uint64_t seed_ = 0;
  std::mt19937_64 engine_;
  mutable std::mutex mu_;
};

// The default generator: the process-wide one, or on a thread inside a
// ThreadDefaultGeneratorGuard, that guard's generator (a DataLoader worker's own stream).
Generator& default_generator();

// While alive, default_generator() on this thread returns `generator` (PyTorch seeds each
// DataLoader worker process's global generator; ember's workers are threads, so the override is
// per thread). Not copyable; nests.
class ThreadDefaultGeneratorGuard {
 public:
  explicit ThreadDefaultGeneratorGuard(Generator* generator);
  ~ThreadDefaultGeneratorGuard();
  ThreadDefaultGeneratorGuard(const ThreadDefaultGeneratorGuard&) = delete;
  ThreadDefaultGeneratorGuard& operator=(const ThreadDefaultGeneratorGuard&) = delete;

 private:
  Generator* previous_;
};
// Seeds the default generator and every registered device backend's (core/backend.h).
void manual_seed(uint64_t seed);

}  // namespace ember
