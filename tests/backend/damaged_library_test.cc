// Damaged library files: a library kiln exported, cut short at many offsets and with bytes changed
// all over, never reaches the dynamic loader; the same library without kiln's checksum trailer (as
// a library built by TVM has none) gets the structural checks. A library that records instructions
// this CPU lacks is refused the same way. Every case is an Error naming the
// file and the problem, through LoadModuleFromFile and the C API; none is a signal.
#include <elf.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "backend/build.h"
#include "kiln/c_runtime_api.h"
#include "ir/text.h"
#include "runtime/error.h"
#include "runtime/graph_executor_module.h"
#include "runtime/library_file.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "tests/float_arrays.h"

namespace kiln::backend {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

const char* kAddRelu = R"(fn (%x: Tensor[(2, 3), float32]) {
  %0 = const(Tensor[(3), float32], [1, -2, 0.5]);
  %1 = add(%x, %0);
  nn.relu(%1)
})";

class DamagedLibraryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::path(::testing::TempDir()) / ("kiln_damaged_library_" + std::to_string(getpid())));
    fs::create_directories(*dir_);
    BuildOptions options;  // the default object cache: these tests are not about it
    std::string path = (*dir_ / "model.so").string();
    Build(ir::ParseFunction(kAddRelu), options).ExportLibrary(path);
    std::ifstream in(path, std::ios::binary);
    library_ = new std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete library_;
  }

  // Writes `bytes` to a new file (dlopen must never take it for one loaded before).
  std::string Write(const std::string& bytes) {
    std::string path = (*dir_ / ("damaged" + std::to_string(counter_++) + ".so")).string();
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  // The error loading `bytes` gives ("(loaded)" when it loads).
  std::string LoadError(const std::string& bytes) {
    std::string path = Write(bytes);
    std::string error = "(loaded)";
    try {
      runtime::LoadModuleFromFile(path);
    } catch (const runtime::Error& e) {
      error = e.what();
      EXPECT_THAT(error, HasSubstr("cannot load library '" + path + "': ")) << "the error names the file";
    }
    fs::remove(path);
    return error;
  }

  // The bytes of the instruction-set record before the checksum trailer: the names, their length
  // (8 bytes) and the magic.
  static size_t IsaRecordSize() {
    size_t end = library_->size() - runtime::kLibraryChecksumTrailerSize;
    EXPECT_EQ(library_->compare(end - 8, 8, runtime::kLibraryIsaMagic), 0);
    uint64_t length = 0;
    std::memcpy(&length, library_->data() + end - 16, 8);
    return length + 16;
  }
  // The instruction-set names the library records.
  static std::string RecordedIsa() {
    size_t end = library_->size() - runtime::kLibraryChecksumTrailerSize;
    return library_->substr(end - IsaRecordSize(), IsaRecordSize() - 16);
  }
  // The ELF contents alone, as a library TVM built is.
  static std::string WithoutTrailer() {
    return library_->substr(0, library_->size() - runtime::kLibraryChecksumTrailerSize - IsaRecordSize());
  }

  // The library's output for x = [0, 1, 2, -3, 4, -5]: relu(x + [1, -2, 0.5]).
  static std::vector<float> Run(const runtime::Module& lib) {
    auto exec = runtime::GetGraphExecutor(lib.GetFunction("default")(runtime::kCPU).AsModule());
    exec->SetInput(0, *test::FloatArray({2, 3}, {0, 1, 2, -3, 4, -5}).get());
    exec->Run();
    return test::ToVector(exec->GetOutput(0));
  }

  // Offsets spread over [0, size) and every offset near the start and the end.
  static std::vector<size_t> Offsets(size_t size, size_t spread) {
    std::vector<size_t> offsets;
    for (size_t o = 0; o < std::min<size_t>(size, 80); ++o) offsets.push_back(o);
    for (size_t o = 80; o < size; o += size / spread + 1) offsets.push_back(o);
    for (size_t o = size > 80 ? size - 80 : 0; o < size; ++o) offsets.push_back(o);
    return offsets;
  }

  static inline fs::path* dir_ = nullptr;
  static inline std::string* library_ = nullptr;
  int counter_ = 0;
};

const auto kDamaged = AnyOf(HasSubstr("damaged"), HasSubstr("cut short"), HasSubstr("not an ELF"));

TEST_F(DamagedLibraryTest, TheExportedLibraryCarriesItsChecksumAndLoads) {
  ASSERT_GT(library_->size(), runtime::kLibraryChecksumTrailerSize);
  EXPECT_EQ(library_->compare(library_->size() - runtime::kLibraryChecksumTrailerSize, 8,
                              runtime::kLibraryChecksumMagic),
            0);
  std::string path = Write(*library_);
  EXPECT_EQ(Run(runtime::LoadModuleFromFile(path)), (std::vector<float>{1, 0, 2.5, 0, 2, 0}));
}

TEST_F(DamagedLibraryTest, EveryCutIsAnError) {
  size_t whole_elf = WithoutTrailer().size();
  for (size_t cut : Offsets(library_->size(), 300)) {
    if (cut == whole_elf) continue;  // the ELF whole, its trailer gone: see the next test
    EXPECT_THAT(LoadError(library_->substr(0, cut)), kDamaged) << "cut at " << cut;
  }
  EXPECT_THAT(LoadError(""), HasSubstr("the file is empty"));
}

// Built for this machine (-march=native), the library records the extensions its code may use:
// those the compiler enables here, AVX2 and FMA on every x86-64 machine kiln's kernels are tuned
// for, AVX-512F where the CPU has it.
TEST_F(DamagedLibraryTest, TheExportedLibraryRecordsItsInstructionSet) {
  std::string recorded = "," + RecordedIsa() + ",";
#if defined(__x86_64__)
  __builtin_cpu_init();
  EXPECT_EQ(recorded.find(",avx2,") != std::string::npos, __builtin_cpu_supports("avx2") != 0) << recorded;
  EXPECT_EQ(recorded.find(",avx512f,") != std::string::npos, __builtin_cpu_supports("avx512f") != 0) << recorded;
#endif
  // Every recorded name is one kiln knows.
  for (size_t begin = 1; begin < recorded.size();) {
    size_t end = recorded.find(',', begin);
    std::string name = recorded.substr(begin, end - begin);
    bool known = false;
    for (const runtime::CpuFeature& feature : runtime::RecordableCpuFeatures()) known = known || name == feature.name;
    EXPECT_TRUE(known || name.empty()) << name;
    begin = end + 1;
  }
}

// A library whose record names an extension this CPU lacks (or one this kiln does not know)
// is refused before the dynamic loader runs any of its code, naming what is missing.
TEST_F(DamagedLibraryTest, ALibraryForInstructionsThisCpuLacksIsRefused) {
  auto with_record = [&](const std::vector<std::string>& features) {
    std::string path = Write(WithoutTrailer());
    runtime::AppendLibraryIsa(path, features);
    runtime::AppendLibraryChecksum(path);
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fs::remove(path);
    return bytes;
  };
  EXPECT_THAT(LoadError(with_record({"avx2", "frobnicate"})),
              HasSubstr("it was compiled for instructions this CPU does not have: frobnicate (not known to this "
                        "kiln); compile it on this machine, or for a target this CPU has"));
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    EXPECT_THAT(LoadError(with_record({"avx512f", "avx512bw"})),
                HasSubstr("does not have: avx512f, avx512bw;"));
  } else {
    std::printf("note: this CPU has AVX-512F; a known missing extension is checked on CPUs without it\n");
  }
#endif
  EXPECT_EQ(Run(runtime::LoadModuleFromFile(Write(with_record({})))), (std::vector<float>{1, 0, 2.5, 0, 2, 0}));
  // A record whose length reaches into the ELF contents, under a checksum that matches it.
  uint64_t length = 5000;
  std::string path = Write(WithoutTrailer() + "avx2" + std::string(reinterpret_cast<const char*>(&length), 8) +
                           runtime::kLibraryIsaMagic);
  runtime::AppendLibraryChecksum(path);
  std::ifstream in(path, std::ios::binary);
  std::string overlong((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(LoadError(overlong), HasSubstr("the file is damaged: its instruction-set record is cut short"));
}

TEST_F(DamagedLibraryTest, WithoutItsTrailerTheLibraryLoadsAsOneTvmBuilt) {
  std::string path = Write(WithoutTrailer());
  EXPECT_EQ(Run(runtime::LoadModuleFromFile(path)), (std::vector<float>{1, 0, 2.5, 0, 2, 0}));
}

TEST_F(DamagedLibraryTest, EveryChangedByteIsAnError) {
  std::vector<size_t> positions;
  for (size_t o = 0; o < 4096; o += 2) positions.push_back(o);  // headers, symbols, relocations
  std::mt19937 random(7);
  for (int i = 0; i < 600; ++i) positions.push_back(random() % library_->size());
  for (size_t o = library_->size() - 64; o < library_->size(); ++o) positions.push_back(o);  // trailer
  for (size_t o : positions) {
    std::string damaged = *library_;
    damaged[o] = static_cast<char>(damaged[o] ^ (1 << (o % 8)));
    EXPECT_THAT(LoadError(damaged), kDamaged) << "byte " << o << " changed";
  }
}

TEST_F(DamagedLibraryTest, WithoutATrailerEveryCutIsStillAnError) {
  // The section headers come last, so any cut takes some of them.
  std::string elf = WithoutTrailer();
  for (size_t cut : Offsets(elf.size(), 300)) {
    EXPECT_THAT(LoadError(elf.substr(0, cut)), kDamaged) << "cut at " << cut;
  }
  // Bytes after the ELF contents that are not a whole trailer: a trailer cut short or damaged.
  EXPECT_THAT(LoadError(library_->substr(0, elf.size() + 10)), HasSubstr("10 bytes follow its ELF contents"));
  std::string bad_magic = *library_;
  bad_magic[library_->size() - runtime::kLibraryChecksumTrailerSize] = 'X';
  EXPECT_THAT(LoadError(bad_magic), HasSubstr(std::to_string(runtime::kLibraryChecksumTrailerSize + IsaRecordSize()) +
                                              " bytes follow its ELF contents and they are not kiln's"));
}

// Without a trailer, a changed byte in what the loader reads first (ELF header, program headers,
// dynamic section, section headers) is an error or leaves a library that loads; never a signal.
// (Changed code or data in such a library cannot be seen; a kiln export's checksum sees it.)
TEST_F(DamagedLibraryTest, WithoutATrailerChangedHeadersAreErrorsOrLoad) {
  const std::string elf = WithoutTrailer();
  Elf64_Ehdr header;
  std::memcpy(&header, elf.data(), sizeof(header));
  std::vector<std::pair<size_t, size_t>> regions = {{0, header.e_phoff + header.e_phnum * sizeof(Elf64_Phdr)},
                                                    {header.e_shoff, elf.size()}};
  for (size_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr p;
    std::memcpy(&p, elf.data() + header.e_phoff + i * sizeof(p), sizeof(p));
    if (p.p_type == PT_DYNAMIC) regions.emplace_back(p.p_offset, p.p_offset + p.p_filesz);
  }
  int errors = 0;
  for (auto [begin, end] : regions) {
    for (size_t o = begin; o < end; ++o) {
      std::string damaged = elf;
      damaged[o] = static_cast<char>(damaged[o] ^ (1 << (o % 8)));
      errors += LoadError(damaged) != "(loaded)";
    }
  }
  EXPECT_GT(errors, 100);  // most such changes are caught
}

// Header fields the loader trusts, each damaged in a library without a trailer: the structural
// checks alone name the problem.
TEST_F(DamagedLibraryTest, StructuralChecksNameTheProblem) {
  const std::string elf = WithoutTrailer();
  Elf64_Ehdr header;
  std::memcpy(&header, elf.data(), sizeof(header));
  auto with = [&](size_t offset, const void* value, size_t n) {
    std::string damaged = elf;
    std::memcpy(&damaged[offset], value, n);
    return LoadError(damaged);
  };
  auto with16 = [&](size_t offset, uint16_t v) { return with(offset, &v, 2); };
  auto with64 = [&](size_t offset, uint64_t v) { return with(offset, &v, 8); };
  uint8_t one = ELFCLASS32, big = ELFDATA2MSB;
  EXPECT_THAT(with(EI_CLASS, &one, 1), HasSubstr("not a 64-bit ELF file"));
  EXPECT_THAT(with(EI_DATA, &big, 1), HasSubstr("not a little-endian ELF file"));
  EXPECT_THAT(with16(offsetof(Elf64_Ehdr, e_machine), EM_AARCH64),
              HasSubstr("built for AArch64, but this process runs on x86-64"));
  EXPECT_THAT(with16(offsetof(Elf64_Ehdr, e_type), ET_EXEC), HasSubstr("an ELF executable, not a shared library"));
  EXPECT_THAT(with16(offsetof(Elf64_Ehdr, e_type), ET_REL), HasSubstr("an ELF object file, not a shared library"));
  EXPECT_THAT(with64(offsetof(Elf64_Ehdr, e_phoff), elf.size() - 8), HasSubstr("its program headers"));
  EXPECT_THAT(with64(offsetof(Elf64_Ehdr, e_shoff), uint64_t{1} << 62), HasSubstr("its section headers"));
  EXPECT_THAT(with16(offsetof(Elf64_Ehdr, e_phentsize), 32), HasSubstr("program header size 32"));
  EXPECT_THAT(LoadError("\x7f" "ELF"), HasSubstr("fewer than an ELF header"));
  EXPECT_THAT(LoadError("MZ this is not a library"), HasSubstr("not an ELF shared library"));

  // The first loadable segment claims more file than there is; the dynamic segment moves away;
  // the read-only-after-relocation segment moves into the code (whose pages would lose their
  // execute permission).
  size_t load = 0, dynamic = 0, relro = 0;
  uint64_t code = 0;
  for (size_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr p;
    std::memcpy(&p, elf.data() + header.e_phoff + i * sizeof(p), sizeof(p));
    size_t at = header.e_phoff + i * sizeof(p);
    if (p.p_type == PT_LOAD && load == 0) load = at;
    if (p.p_type == PT_LOAD && (p.p_flags & PF_X) != 0) code = p.p_vaddr;
    if (p.p_type == PT_DYNAMIC) dynamic = at;
    if (p.p_type == PT_GNU_RELRO) relro = at;
  }
  ASSERT_NE(load, 0u);
  ASSERT_NE(dynamic, 0u);
  ASSERT_NE(relro, 0u);
  ASSERT_NE(code, 0u);
  EXPECT_THAT(with64(relro + offsetof(Elf64_Phdr, p_vaddr), code + 0xcf0),
              HasSubstr("its read-only-after-relocation segment lies outside the library's writable data"));
  std::string long_segment = elf;
  uint64_t sizes[2] = {elf.size() + 4096, elf.size() + 4096};  // p_filesz, p_memsz
  std::memcpy(&long_segment[load + offsetof(Elf64_Phdr, p_filesz)], sizes, sizeof(sizes));
  EXPECT_THAT(LoadError(long_segment), HasSubstr("its segment contents"));
  EXPECT_THAT(with64(dynamic + offsetof(Elf64_Phdr, p_vaddr), uint64_t{1} << 40), HasSubstr("its dynamic section"));

  // A relocation that writes outside the library.
  Elf64_Phdr dyn;
  std::memcpy(&dyn, elf.data() + dynamic, sizeof(dyn));
  uint64_t rela = 0;
  for (uint64_t at = dyn.p_offset; at + sizeof(Elf64_Dyn) <= dyn.p_offset + dyn.p_filesz; at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn d;
    std::memcpy(&d, elf.data() + at, sizeof(d));
    if (d.d_tag == DT_RELA) rela = d.d_un.d_ptr;  // in the first segment, where address = offset
  }
  ASSERT_NE(rela, 0u);
  EXPECT_THAT(with64(rela + offsetof(Elf64_Rela, r_offset), uint64_t{1} << 40), HasSubstr("relocation 0"));

  // Not a regular file.
  fs::create_directories(*dir_ / "directory.so");
  try {
    runtime::LoadModuleFromFile((*dir_ / "directory.so").string());
    ADD_FAILURE() << "a directory loaded";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("it is not a regular file"));
  }
}

TEST_F(DamagedLibraryTest, TheCApiReturnsMinusOneWithTheReason) {
  std::string path = Write(library_->substr(0, library_->size() / 2));
  TVMModuleHandle module = nullptr;
  EXPECT_EQ(TVMModLoadFromFile(path.c_str(), "so", &module), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("cannot load library '" + path + "': the file is cut short"));
  EXPECT_EQ(module, nullptr);
}

}  // namespace
}  // namespace kiln::backend
