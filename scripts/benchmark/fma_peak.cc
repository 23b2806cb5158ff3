// The FP32 FMA peak of this CPU, measured: each of N threads runs independent chains of fused
// multiply-adds in the widest vectors the compiler targets (-march=native: AVX-512, AVX2 or
// SSE), enough chains to hide the FMA latency. Prints GFLOP/s (2 flops per lane per FMA).
//   g++ -O2 -march=native -pthread fma_peak.cc -o fma_peak && ./fma_peak THREADS [SECONDS]
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec Splat(float x) { return _mm512_set1_ps(x); }
inline float First(Vec v) { return _mm512_cvtss_f32(v); }
#elif defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec Splat(float x) { return _mm256_set1_ps(x); }
inline float First(Vec v) { return _mm256_cvtss_f32(v); }
#else
using Vec = __m128;
constexpr int kLanes = 4;
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
inline Vec Splat(float x) { return _mm_set1_ps(x); }
inline float First(Vec v) { return _mm_cvtss_f32(v); }
#endif

constexpr int kChains = 12;           // latency 4 x 2 pipes, and some to spare
constexpr long kStepsPerCheck = 1 << 16;

// FMAs run by one thread until `stop`; the sum keeps the chains from being optimized away.
long Run(const std::atomic<bool>& stop, float* sink) {
  Vec acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = Splat(0.001f * i);
  const Vec a = Splat(0.999999f), b = Splat(1e-7f);
  long steps = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    for (long s = 0; s < kStepsPerCheck; ++s) {
      for (int i = 0; i < kChains; ++i) acc[i] = Fma(acc[i], a, b);
    }
    steps += kStepsPerCheck;
  }
  float total = 0;
  for (int i = 0; i < kChains; ++i) total += First(acc[i]);
  *sink = total;
  return steps * kChains;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  double seconds = argc > 2 ? std::atof(argv[2]) : 0.5;
  std::atomic<bool> stop{false};
  std::vector<long> fmas(threads);
  std::vector<float> sinks(threads);
  std::vector<std::thread> workers;
  auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { fmas[t] = Run(stop, &sinks[t]); });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& w : workers) w.join();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  long total = 0;
  for (long f : fmas) total += f;
  std::printf("%.1f %d\n", 2.0 * kLanes * total / elapsed / 1e9, kLanes);
  return sinks[0] == 12345.0f ? 1 : 0;
}
