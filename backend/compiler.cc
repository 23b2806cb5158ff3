// Compiling and linking with the system compiler through posix_spawn (no shell).
#include "backend/compiler.h"

#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "backend/blob_object.h"
#include "backend/kernel_sources.h"
#include "runtime/error.h"
#include "runtime/library_file.h"
#include "runtime/params.h"

extern char** environ;

namespace kiln::backend {
namespace fs = std::filesystem;

namespace {

std::string CacheDir(const CompilerOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  if (const char* dir = std::getenv("KILN_CACHE_DIR"); dir != nullptr && *dir != '\0') return dir;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/kiln/objects";
}

// The tree generated code is compiled against. An installation carries one beside the binary that
// holds this code: the Python extension (<package>/_ffi*.so, tree in <package>/share), the
// package's command line (<package>/bin/kiln, tree in <package>/share) or `cmake --install`'s
// (<prefix>/bin/kiln, tree in <prefix>/share/kiln). A build tree uses the sources it came from.
std::string InstalledOrSourceDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&InstalledOrSourceDir), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code error;
    fs::path binary = fs::canonical(info.dli_fname, error);
    if (!error) {
      fs::path dir = binary.parent_path();
      for (const fs::path& tree : {dir / "share", dir.parent_path() / "share", dir.parent_path() / "share" / "kiln"}) {
        if (fs::is_regular_file(tree / "kernels" / "kernels.h", error)) return tree.string();
      }
    }
  }
  return KILN_SOURCE_DIR;
}

std::string SourceDir(const CompilerOptions& options) {
  return options.source_dir.empty() ? KernelSourceDir() : options.source_dir;
}

// The compiler as a path: `cxx` itself when it names a file, else the first match on PATH; throws
// Error saying how to get one when there is none.
std::string FindCompiler(const std::string& cxx) {
  auto runnable = [](const std::string& path) { return access(path.c_str(), X_OK) == 0 && !fs::is_directory(path); };
  if (cxx.find('/') != std::string::npos) {
    if (runnable(cxx)) return cxx;
  } else {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path != nullptr ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
      std::string candidate = (dir.empty() ? "." : dir) + "/" + cxx;
      if (runnable(candidate)) return candidate;
    }
  }
  runtime::Fail("no C++ compiler found: kiln compiles the code it generates with the system's C++ compiler, and '",
                cxx, "' is not installed or not on PATH. Install one (Debian and Ubuntu: apt-get install g++; "
                "Fedora: dnf install gcc-c++) or set CXX to a compiler's path");
}

// The C++ compiler to run: options.cxx, else $CXX, else c++; throws Error when it is not installed.
std::string Compiler(const CompilerOptions& options) {
  if (!options.cxx.empty()) return FindCompiler(options.cxx);
  const char* cxx = std::getenv("CXX");
  return FindCompiler(cxx != nullptr && *cxx != '\0' ? cxx : "c++");
}

// The flags that choose the instructions generated code may use.
std::vector<std::string> TargetFlags(const CompilerOptions& options) {
  std::vector<std::string> flags;
  if (!options.march.empty()) flags.push_back("-march=" + options.march);
  if (!options.mcpu.empty()) flags.push_back("-mcpu=" + options.mcpu);
  flags.insert(flags.end(), options.flags.begin(), options.flags.end());
  return flags;
}

std::vector<std::string> CompileFlags(const CompilerOptions& options) {
  std::string source = SourceDir(options);
  // Operators neither read floating-point exception flags nor errno, so GCC may if-convert and
  // vectorize loops with clamps, divisions and square roots; results are the same.
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-fno-trapping-math", "-fno-math-errno", "-fPIC",
                                    "-fvisibility=hidden", "-w", "-I" + source, "-I" + source + "/include",
                                    "-I" KILN_DLPACK_INCLUDE_DIR};
  std::vector<std::string> target = TargetFlags(options);
  flags.insert(flags.end(), target.begin(), target.end());
  return flags;
}

struct Process {
  pid_t pid;
  std::string log;
  std::string what;
};

Process Spawn(const std::vector<std::string>& argv, const std::string& log, const std::string& what) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int status = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  runtime::Check(status == 0, "cannot run the compiler '", argv[0], "': ", std::strerror(status));
  return {pid, log, what};
}

// Throws Error with the head of the process's log when its wait status says it failed.
void CheckExit(const Process& p, int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string log;
  try {
    log = runtime::ReadFile(p.log);
  } catch (const runtime::Error&) {
  }
  if (log.size() > 4000) log = log.substr(0, 4000) + "\n...";
  throw runtime::InternalError("compiling " + p.what + " failed:\n" + log);
}

// Waits for the process; throws Error with the head of its log when it failed.
void Wait(const Process& p) {
  int status = 0;
  waitpid(p.pid, &status, 0);
  CheckExit(p, status);
}

// A private directory (mkdtemp) named <parent>/<prefix>XXXXXX; removed by the caller.
std::string MakePrivateDir(const fs::path& parent, const std::string& prefix) {
  std::string path = (parent / (prefix + "XXXXXX")).string();
  runtime::Check(mkdtemp(path.data()) != nullptr, "cannot create a directory in '", parent.string(), "': ",
                 std::strerror(errno));
  return path;
}

// The compiler's --version text, once per compiler and process.
std::string Version(const std::string& cxx) {
  static std::mutex* mutex = new std::mutex();
  static std::map<std::string, std::string>* cache = new std::map<std::string, std::string>();
  std::lock_guard<std::mutex> lock(*mutex);
  auto it = cache->find(cxx);
  if (it != cache->end()) return it->second;
  std::string dir = MakePrivateDir(fs::temp_directory_path(), "kiln-cxx-version-");
  std::string version;
  try {
    Wait(Spawn({cxx, "--version"}, dir + "/version.log", cxx + " --version"));
    version = runtime::ReadFile(dir + "/version.log");
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
  return (*cache)[cxx] = version;
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  runtime::Check(out.good(), "cannot write '", path, "'");
}

// A cache entry is <key>.o with <key>.o.sum beside it, holding the object's size and checksum;
// an object whose .sum is missing or does not match (cut short, damaged, left by a killed
// compile) is compiled again, never linked.
std::string ObjectSum(const std::string& object_bytes) {
  return std::to_string(object_bytes.size()) + " " + ContentHash(object_bytes) + "\n";
}

bool IsTrustedObject(const std::string& object) {
  std::error_code error;
  if (!fs::is_regular_file(object, error) || !fs::is_regular_file(object + ".sum", error)) return false;
  try {
    return runtime::ReadFile(object + ".sum") == ObjectSum(runtime::ReadFile(object));
  } catch (const runtime::Error&) {
    return false;  // removed or unreadable meanwhile
  }
}

// Moves a finished object from a private directory into the cache, its .sum first: a reader that
// sees the new .sum with an old object finds them unequal and compiles again.
void PublishObject(const std::string& finished, const std::string& object) {
  WriteFile(finished + ".sum", ObjectSum(runtime::ReadFile(finished)));
  fs::rename(finished + ".sum", object + ".sum");
  fs::rename(finished, object);
}

// Private directories of compiles killed long ago (a day; compiles take minutes).
void RemoveStaleWorkDirs(const std::string& cache_dir) {
  std::error_code error;
  auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(cache_dir, error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename().string().rfind("tmp-", 0) != 0) continue;
    auto modified = fs::last_write_time(it->path(), error);
    if (!error && now - modified > std::chrono::hours(24)) fs::remove_all(it->path(), error);
  }
}

}  // namespace

std::string MakeTempFile(const std::string& directory, const std::string& prefix, const std::string& suffix) {
  std::string path = (fs::path(directory) / (prefix + "XXXXXX" + suffix)).string();
  int fd = mkstemps(path.data(), static_cast<int>(suffix.size()));
  runtime::Check(fd >= 0, "cannot create a file in '", directory, "': ", std::strerror(errno));
  close(fd);
  return path;
}

std::string KernelSourceDir() {
  static const std::string* dir = new std::string(InstalledOrSourceDir());
  return *dir;
}

std::string CompilerDescription() {
  try {
    return Compiler(CompilerOptions());
  } catch (const runtime::Error& e) {
    return e.what();
  }
}

namespace {

// What the compiler predefines for code built with `target_flags` (-march, -mcpu and the extra
// flags: -mno-avx512f and the like count), asked once per compiler and flags in a process.
const std::string& TargetMacros(const std::string& cxx, const std::vector<std::string>& target_flags) {
  static std::mutex* mutex = new std::mutex();
  static std::map<std::string, std::string>* cache = new std::map<std::string, std::string>();
  std::lock_guard<std::mutex> lock(*mutex);
  std::vector<std::string> argv = {cxx};
  argv.insert(argv.end(), target_flags.begin(), target_flags.end());
  argv.insert(argv.end(), {"-dM", "-E", "-x", "c++", "/dev/null"});
  std::string key;
  for (const std::string& a : argv) key += a + "\n";
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  std::string dir = MakePrivateDir(fs::temp_directory_path(), "kiln-cxx-isa-");
  std::string macros;
  int status = 0;
  try {
    Process p = Spawn(argv, dir + "/macros.log", "");
    waitpid(p.pid, &status, 0);
    macros = runtime::ReadFile(p.log);
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string flags;
    for (const std::string& f : target_flags) flags += " " + f;
    if (macros.size() > 2000) macros = macros.substr(0, 2000) + "\n...";
    runtime::Fail("target", flags, ": the compiler ", cxx, " does not take it:\n", macros);
  }
  return (*cache)[key] = macros;
}

bool Defines(const std::string& macros, const char* macro) {
  return macros.find(std::string("#define ") + macro + " ") != std::string::npos;
}

// The extensions (runtime::RecordableCpuFeatures) that code compiled with `options` may use.
std::vector<std::string> CpuFeatures(const std::string& cxx, const CompilerOptions& options) {
  const std::string& macros = TargetMacros(cxx, TargetFlags(options));
  std::vector<std::string> features;
  for (const runtime::CpuFeature& feature : runtime::RecordableCpuFeatures()) {
    if (Defines(macros, feature.macro)) features.push_back(feature.name);
  }
  return features;
}

}  // namespace

target::Isa CompilerIsa(const std::string& march, const CompilerOptions& options) {
  CompilerOptions target = options;
  target.march = march;
  const std::string& macros = TargetMacros(Compiler(options), TargetFlags(target));
  return Defines(macros, "__AVX512F__")                                ? target::Isa::kAvx512
         : Defines(macros, "__AVX2__") && Defines(macros, "__FMA__") ? target::Isa::kAvx2
                                                                        : target::Isa::kBaseline;
}

std::string MarchForTarget(const std::string& target) {
  if (target.empty() || target == "native" || target == "llvm" || target == "cpu") return "native";
  size_t mcpu = target.find("-mcpu=");
  if (mcpu != std::string::npos) {
    std::string kind = target.substr(0, target.find(' '));
    runtime::Check(kind == "cpu" || kind == "llvm", "target '", target, "': only cpu and llvm take -mcpu");
    std::string cpu = target.substr(mcpu + 6);
    cpu = cpu.substr(0, cpu.find(' '));
    runtime::Check(!cpu.empty(), "target '", target, "': -mcpu= needs a CPU name");
    return cpu;
  }
  runtime::Check(target.find(' ') == std::string::npos && target[0] != '-', "target '", target,
                 "' is not understood (try cpu, \"cpu -mcpu=NAME\" or an -march name such as x86-64-v3)");
  return target;
}

std::string ContentHash(const std::string& data) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(XXH3_64bits(data.data(), data.size())));
  return text;
}

namespace {

// One compiler run of CompileObjects: a source to an object, or the prelude to a precompiled header.
struct Command {
  std::vector<std::string> argv;
  std::string log, what;
  bool after_prelude = false;  // starts once the precompiled prelude is built
};

// Runs `commands` in order, `jobs` at a time (the next one starts when any finishes); a command
// after_prelude waits for commands[prelude] when that is one of them. Throws Error with the
// compiler's message when one fails, after the others have stopped.
void RunCommands(const std::vector<Command>& commands, int jobs, std::optional<size_t> prelude) {
  std::vector<std::pair<size_t, Process>> running;
  bool prelude_built = !prelude.has_value();
  // Waits for one running command (commands[only] when given) to finish, and checks it.
  auto finish = [&](std::optional<size_t> only) {
    for (;;) {
      for (size_t r = 0; r < running.size(); ++r) {
        if (only && running[r].first != *only) continue;
        int status = 0;
        pid_t done = waitpid(running[r].second.pid, &status, WNOHANG);
        if (done == 0 || (done < 0 && errno == EINTR)) continue;
        runtime::Check(done == running[r].second.pid, "cannot wait for the compiler (", running[r].second.what,
                       "): ", std::strerror(errno));
        auto [index, process] = running[r];
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(r));
        if (prelude && index == *prelude) prelude_built = true;
        CheckExit(process, status);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  };
  try {
    for (size_t i = 0; i < commands.size(); ++i) {
      if (commands[i].after_prelude && !prelude_built) finish(prelude);
      if (static_cast<int>(running.size()) >= jobs) finish(std::nullopt);
      running.emplace_back(i, Spawn(commands[i].argv, commands[i].log, commands[i].what));
    }
    while (!running.empty()) finish(std::nullopt);
  } catch (...) {
    for (const auto& r : running) {  // the others' results are not needed any more
      kill(r.second.pid, SIGTERM);
      waitpid(r.second.pid, nullptr, 0);
    }
    throw;
  }
}

}  // namespace

std::vector<std::string> CompileObjects(const std::vector<SourceFile>& code, const std::string& prelude,
                                        const CompilerOptions& options, CompileReport* report) {
  std::string cxx = Compiler(options);
  std::string root = SourceDir(options);
  KernelList kernels = ReadKernelList(root);
  std::vector<SourceFile> all = code;
  for (SourceFile& file : all) file.text = prelude + file.text;  // what the kernel selection reads
  std::vector<SourceFile> needed = KernelSourcesFor(all, kernels, root);
  all.insert(all.end(), needed.begin(), needed.end());
  std::string headers;
  for (const std::string& header : kernels.headers) headers += runtime::ReadFile(root + "/" + header);
  std::vector<std::string> flags = CompileFlags(options);
  std::string flag_text;
  for (const std::string& f : flags) flag_text += f + " ";
  // "-march=native" names no instruction set: the key holds what the compiler resolves it to on
  // this machine, so that a cache carried to a CPU of another kind compiles afresh.
  flag_text += ContentHash(TargetMacros(cxx, TargetFlags(options)));
  std::string key_suffix = headers + flag_text + Version(cxx);
  std::string dir = CacheDir(options);
  fs::create_directories(dir);

  RemoveStaleWorkDirs(dir);

  // The prelude that `code` shares is compiled once into a precompiled header (<key>.h.gch beside
  // <key>.h, which GCC reads in its place): parsing the standard headers took most of the time
  // of each small operator source.
  std::string prelude_header = dir + "/" + ContentHash(prelude + key_suffix) + ".h";
  bool prelude_cached = prelude.empty() || IsTrustedObject(prelude_header + ".gch");
  std::vector<std::string> objects;
  std::vector<std::pair<size_t, std::string>> todo;  // (source index, object path)
  for (size_t i = 0; i < all.size(); ++i) {
    std::string defines;
    for (const std::string& d : all[i].defines) defines += " -D" + d;
    std::string object = dir + "/" + ContentHash(all[i].text + defines + key_suffix) + ".o";
    objects.push_back(object);
    if (IsTrustedObject(object)) {
      if (report != nullptr) ++report->cached;
    } else {
      todo.emplace_back(i, object);
    }
  }
  if (todo.empty()) return objects;
  // The kernel sources, longest to compile, go first. Sources, logs and objects of this compile
  // live in a private directory of the cache (so renames into the cache stay on one file system)
  // until each object is published.
  std::stable_partition(todo.begin(), todo.end(), [&](const auto& t) { return t.first >= code.size(); });
  bool build_prelude = !prelude_cached && std::any_of(todo.begin(), todo.end(), [&](const auto& t) {
    return t.first < code.size();
  });
  std::string work = MakePrivateDir(dir, "tmp-");
  int jobs = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Command> commands;
  if (build_prelude) {
    WriteFile(work + "/prelude.h", prelude);
    std::vector<std::string> argv = {cxx};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-x", "c++-header", work + "/prelude.h", "-o", work + "/prelude.h.gch"});
    commands.push_back({argv, work + "/prelude.log", "the operators' prelude", false});
  }
  for (size_t n = 0; n < todo.size(); ++n) {
    const SourceFile& source = all[todo[n].first];
    bool uses_prelude = todo[n].first < code.size() && !prelude.empty();
    std::string base = work + "/" + std::to_string(n);
    WriteFile(base + ".cc", uses_prelude ? source.text.substr(prelude.size()) : source.text);
    std::vector<std::string> argv = {cxx};
    argv.insert(argv.end(), flags.begin(), flags.end());
    for (const std::string& d : source.defines) argv.push_back("-D" + d);
    if (uses_prelude) argv.insert(argv.end(), {"-include", build_prelude ? work + "/prelude.h" : prelude_header});
    argv.insert(argv.end(), {"-c", base + ".cc", "-o", base + ".o"});
    commands.push_back({argv, base + ".log", source.name, uses_prelude});
  }
  try {
    RunCommands(commands, jobs, build_prelude ? std::optional<size_t>(0) : std::nullopt);
    if (build_prelude) {  // the header first: a trusted .gch always has its header beside it
      fs::rename(work + "/prelude.h", prelude_header);
      PublishObject(work + "/prelude.h.gch", prelude_header + ".gch");
    }
    for (size_t n = 0; n < todo.size(); ++n) PublishObject(work + "/" + std::to_string(n) + ".o", todo[n].second);
  } catch (...) {
    fs::remove_all(work);
    throw;
  }
  fs::remove_all(work);
  if (report != nullptr) report->compiled += static_cast<int>(todo.size());
  return objects;
}

void LinkSharedLibrary(const std::vector<std::string>& objects, const std::string& import_blob,
                       const BlobBytes& linked_params, const std::string& output, const CompilerOptions& options) {
  std::string cxx = Compiler(options);
  for (const std::string& object : objects) {
    runtime::Check(IsTrustedObject(object), "the cached object '", object,
                   "' was damaged or removed after it was compiled; build the model again");
  }
  std::string work = MakePrivateDir(fs::temp_directory_path(), "kiln-link-");
  // The library is linked beside `output` under a name of this process and call, then renamed
  // onto it, so `output` is never half written. (The linker creates the file: it gets the usual
  // permissions, which a mkstemp file would not.)
  static std::atomic<uint64_t> counter{0};
  fs::path target = fs::absolute(output);
  std::string linked = (target.parent_path() / ("." + target.filename().string() + "." + std::to_string(getpid()) +
                                                "." + std::to_string(counter++) + ".tmp")).string();
  try {
    // Every symbol resolved now: a kernel missing from the objects (kernel_sources.h) fails here.
    std::vector<std::string> argv = {cxx, "-shared", "-fPIC", "-Wl,--no-undefined", "-o", linked};
    argv.insert(argv.end(), objects.begin(), objects.end());
    // Blobs go in as an object of their own (blob_object.h). The import blob is read-only and a
    // dynamic symbol (loaders look it up). The linked parameters are hidden (only the library's
    // own _lookup_linked_param reads them) and writable data: pages of the file, shared by every
    // process until one writes them. kiln's executor never does; TVM's set_input on a linked
    // parameter does, and then gets its own copy of the page instead of a fault (tvmc run fills
    // every input TVM's get_input_info lists, linked parameters included).
    uint64_t import_size = import_blob.size();
    std::string sized_import = std::string(reinterpret_cast<const char*>(&import_size), sizeof(import_size)) + import_blob;
    std::vector<Blob> blobs;
    if (!import_blob.empty()) blobs.push_back({"__tvm_dev_mblob", BlobBytes::Of(sized_import), false});
    if (linked_params.size > 0) blobs.push_back({"__kiln_linked_params", linked_params, true});
    if (!blobs.empty()) {
      runtime::CheckInternal(!objects.empty(), "LinkSharedLibrary: blobs without compiled code");
      WriteBlobObject(work + "/blobs.o", blobs, objects.front());
      argv.push_back(work + "/blobs.o");
    }
    Wait(Spawn(argv, work + "/link.log", "the library " + output));
    runtime::AppendLibraryIsa(linked, CpuFeatures(cxx, options));
    runtime::AppendLibraryChecksum(linked);
    fs::rename(linked, target);
  } catch (...) {
    std::error_code ignored;
    fs::remove(linked, ignored);
    fs::remove_all(work, ignored);
    throw;
  }
  fs::remove_all(work);
}

}  // namespace kiln::backend
