#pragma once
// Random number generation: a Generator object per stream, one default per device, and
// manual_seed. The CPU generator is PyTorch's: a 32-bit Mersenne Twister (mt19937) seeded with
// the low 32 bits of the seed, plus the cached second value of a Box-Muller pair, so the same seed
// gives torch's numbers (docs/issue15-random.md) and get_state/set_state exchange torch's
// 5056-byte state.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "ember/core/device.h"

namespace ember {

// The 32-bit Mersenne Twister (Matsumoto & Nishimura 1998), with PyTorch's bookkeeping of its
// position (`left`: draws until the next refill, counting from 1; `next`: the index of the next
// word), which is what torch's state bytes record.
class Mt19937 {
 public:
  static constexpr int kN = 624;
  explicit Mt19937(uint64_t seed = 5489) { seed_with(seed); }
  void seed_with(uint64_t seed);

  uint32_t operator()() {
    if (--left_ == 0) refill();
    uint32_t y = state_[next_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }
  // Two draws, the first as the high word (torch's random64).
  uint64_t random64() {
    uint64_t hi = (*this)();
    return (hi << 32) | (*this)();
  }

  uint64_t seed() const { return seed_; }
  int32_t left() const { return left_; }
  uint32_t next() const { return next_; }
  const uint32_t* words() const { return state_; }
  // Replaces the whole state; false (and nothing changed) when it is not a reachable one.
  bool set(uint64_t seed, int32_t left, uint32_t next, const uint32_t* words);

 private:
  void refill();
  uint64_t seed_ = 0;
  int32_t left_ = 1;
  uint32_t next_ = 0;
  uint32_t state_[kN];
};

class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;
  // torch's CPU state tensor: sizeof(CPUGeneratorImplState).
  static constexpr size_t kStateBytes = 5056;

  explicit Generator(uint64_t seed = kDefaultSeed) { manual_seed(seed); }
  // A generator for `device`'s kernels: the CPU's draws from the Mersenne Twister, a GPU's
  // (counter-based Philox) from (initial_seed(), philox offset) only.
  explicit Generator(Device device, uint64_t seed = kDefaultSeed) : device_(device) { manual_seed(seed); }
  Device device() const { return device_; }
  Generator(const Generator& other);
  Generator& operator=(const Generator& other);

  // Reseeds the engine and forgets a cached normal value.
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { std::lock_guard g(mu_); return engine_.seed(); }
  // Reseeds from the operating system's entropy and returns the seed used.
  uint64_t seed();

  // Locked single draws for code outside the kernels: 32 bits, 64 bits (torch's random64), a
  // uniform double in [0, 1) from 53 bits and a float in [0, 1) from 24 bits, as torch's.
  uint32_t next_u32() { std::lock_guard g(mu_); return engine_(); }
  uint64_t next_u64() { std::lock_guard g(mu_); return engine_.random64(); }
  double next_double() { return double(next_u64() & ((uint64_t(1) << 53) - 1)) * 0x1.0p-53; }
  float next_float() { return float(next_u32() & ((1u << 24) - 1)) * 0x1.0p-24f; }

  // Kernels lock mutex() once and draw from engine() directly.
  std::mutex& mutex() { return mu_; }
  Mt19937& engine() { return engine_; }
  // The second value of the last Box-Muller pair drawn by the one-at-a-time normal sampler
  // (torch keeps it in the generator, so it is part of the state). Access under mutex().
  std::optional<double>& cached_normal() { return next_double_normal_; }
  std::optional<float>& cached_float_normal() { return next_float_normal_; }

  // Counter-based device generators (CUDA's Philox) draw from (seed, offset): the seed is
  // initial_seed(), and each kernel reserves `increment` counter values past the current offset
  // and gets the old offset back, so consecutive kernels never reuse numbers and a manual_seed
  // replays them. manual_seed resets the offset to 0, as torch's CUDA generator.
  std::pair<uint64_t, uint64_t> philox_seed_and_advance(uint64_t increment) {
    std::lock_guard g(mu_);
    uint64_t offset = philox_offset_;
    philox_offset_ += increment;
    return {engine_.seed(), offset};
  }
  uint64_t philox_offset() const { std::lock_guard g(mu_); return philox_offset_; }
  void set_philox_offset(uint64_t offset) { std::lock_guard g(mu_); philox_offset_ = offset; }

  // The state as torch's bytes: on the CPU its 5056 (CPUGeneratorImplState: seed, left, seeded,
  // next, the 624 words widened to 64 bits, the cached double normal, the cached float normal);
  // on a GPU its 16 (CUDAGeneratorImpl: the seed, then the Philox offset).
  std::string get_state() const;
  // Accepts exactly what get_state (or torch.get_rng_state) produces; anything else throws.
  void set_state(const std::string& s);

 private:
  Mt19937 engine_;
  std::optional<double> next_double_normal_;
  std::optional<float> next_float_normal_;
  uint64_t philox_offset_ = 0;
  Device device_{DeviceType::CPU};
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
