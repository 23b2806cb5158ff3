// How far apart two cores are, measured: a thread on core A writes a buffer of 1 MiB, then a thread
// on core A and one on core B each read it back; prints the median of B's read time over the median
// of A's (about 1: B reads what A wrote as fast as A does; about 3 on the project's shared machine
// when its two cores are far apart, which slows every engine's two-thread runs).
//   g++ -O2 -pthread core_distance.cc -o core_distance && ./core_distance [CORE_A CORE_B]
// Without arguments, A and B are the first two cores this process may run on.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr size_t kFloats = (1 << 20) / sizeof(float);
constexpr int kRounds = 25;

void PinTo(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// Runs f on a thread of its own on `core` and returns its seconds.
template <typename F>
double OnCore(int core, F f) {
  double seconds = 0;
  std::thread t([&] {
    PinTo(core);
    auto start = std::chrono::steady_clock::now();
    f();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  t.join();
  return seconds;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int a = 0, b = 1;
  if (argc > 2) {
    a = std::atoi(argv[1]);
    b = std::atoi(argv[2]);
  } else {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2) {
      std::fprintf(stderr, "core_distance: this process may run on fewer than two cores\n");
      return 1;
    }
    std::vector<int> cores;
    for (int c = 0; c < CPU_SETSIZE && cores.size() < 2; ++c) {
      if (CPU_ISSET(c, &allowed)) cores.push_back(c);
    }
    a = cores[0];
    b = cores[1];
  }
  std::vector<float> buffer(kFloats);
  volatile float sink = 0;
  auto write = [&](float value) { std::fill(buffer.begin(), buffer.end(), value); };
  auto read = [&] {  // one float per cache line
    float sum = 0;
    for (size_t i = 0; i < kFloats; i += 16) sum += buffer[i];
    sink = sink + sum;
  };
  std::vector<double> local, remote;
  for (int round = 0; round < kRounds; ++round) {
    OnCore(a, [&] { write(static_cast<float>(round)); });
    local.push_back(OnCore(a, read));
    OnCore(a, [&] { write(static_cast<float>(round) + 0.5f); });
    remote.push_back(OnCore(b, read));
  }
  std::printf("%.2f\n", Median(remote) / Median(local));
  return 0;
}
