// Detecting this machine: instruction set from cpuid, cores and caches from the system.
#include "target/target.h"

#include <algorithm>
#include <fstream>
#include <thread>

namespace kiln::target {
namespace {

int VectorFloats(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return 16;
    case Isa::kAvx2: return 8;
    case Isa::kBaseline: return 4;
  }
  return 4;
}

Isa HostIsa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return Isa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
#endif
  return Isa::kBaseline;
}

// "32K" / "512K" / "32M" as bytes; 0 when unreadable.
int64_t ParseSize(const std::string& text) {
  size_t digits = 0;
  int64_t value = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    value = value * 10 + (text[digits++] - '0');
  }
  if (digits == 0) return 0;
  char unit = digits < text.size() ? text[digits] : ' ';
  return unit == 'K' ? value << 10 : unit == 'M' ? value << 20 : unit == 'G' ? value << 30 : value;
}

std::string ReadLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

// Cache sizes of cpu0 from sysfs (index<k>/level, type, size).
void ReadCaches(Target* t) {
  for (int k = 0; k < 8; ++k) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(k) + "/";
    std::string level = ReadLine(dir + "level"), type = ReadLine(dir + "type");
    if (level.empty()) break;
    int64_t size = ParseSize(ReadLine(dir + "size"));
    if (level == "1" && type == "Data") t->l1d_bytes = size;
    if (level == "2") t->l2_bytes = size;
    if (level == "3") t->l3_bytes = size;
  }
}

std::string Bytes(int64_t bytes) {
  if (bytes == 0) return "unknown";
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % (1 << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kBaseline: return "baseline";
  }
  return "baseline";
}

std::string Target::ToString() const {
  return march + ": " + IsaName(isa) + ", " + std::to_string(vector_floats) + "-float vectors, " +
         std::to_string(cores) + (cores == 1 ? " core" : " cores") + ", L1d " + Bytes(l1d_bytes) + ", L2 " +
         Bytes(l2_bytes) + ", L3 " + Bytes(l3_bytes) + (dnnl ? ", oneDNN" : ", no oneDNN");
}

const Target& HostTarget() {
  static const Target host = [] {
    Target t;
    t.isa = HostIsa();
    t.vector_floats = VectorFloats(t.isa);
    t.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ReadCaches(&t);
    return t;
  }();
  return host;
}

Target TargetFor(const std::string& march, Isa isa) {
  Target t = HostTarget();
  t.march = march;
  t.isa = isa;
  t.vector_floats = VectorFloats(isa);
  return t;
}

}  // namespace kiln::target
