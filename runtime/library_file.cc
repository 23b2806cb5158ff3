// Checks of a library file before dlopen (see library_file.h): the ELF structures the dynamic
// loader and the runtime read are checked against the file and its mapped segments, and kiln's
// checksum trailer against the bytes it covers. The file is read with pread, never mapped, so a
// file cut short while being checked gives an error, not SIGBUS.
#include "runtime/library_file.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cerrno>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <optional>
#include <vector>

#include "runtime/error.h"
#include "runtime/text.h"

namespace kiln::runtime {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#elif defined(__powerpc64__)
constexpr uint16_t kHostMachine = EM_PPC64;
#elif defined(__riscv)
constexpr uint16_t kHostMachine = EM_RISCV;
#else
#error "library_file.cc: add this architecture's ELF machine number"
#endif

std::string MachineName(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "32-bit x86";
    case EM_AARCH64: return "AArch64";
    case EM_ARM: return "32-bit ARM";
    case EM_PPC64: return "PowerPC 64";
    case EM_RISCV: return "RISC-V";
    case EM_S390: return "IBM Z";
    default: return "ELF machine " + std::to_string(machine);
  }
}

constexpr uint64_t kChunkBytes = 1 << 20;

// A library file read by offset. Each read is checked against the file's size, and every problem
// is an Error naming the file.
class LibraryFile {
 public:
  explicit LibraryFile(const std::string& path) : path_(path) {
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) Fail("cannot load library '", path, "': ", std::strerror(errno));
    struct stat info;
    if (fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
      close(fd_);
      Fail("cannot load library '", path, "': it is not a regular file");
    }
    size_ = static_cast<uint64_t>(info.st_size);
  }
  ~LibraryFile() { close(fd_); }
  LibraryFile(const LibraryFile&) = delete;
  LibraryFile& operator=(const LibraryFile&) = delete;

  uint64_t size() const { return size_; }

  template <typename... Args>
  [[noreturn]] void Bad(const Args&... args) const {
    Fail("cannot load library '", path_, "': ", args...);
  }

  // Throws unless bytes [offset, offset + count) lie in the file.
  void RequireInFile(uint64_t offset, uint64_t count, const char* what) const {
    if (offset <= size_ && count <= size_ - offset) return;
    Bad("the file is cut short or damaged: its ", what, " (", count, " bytes at offset ", offset,
        ") reaches past the end of the file (", size_, " bytes)");
  }

  std::string Read(uint64_t offset, uint64_t count, const char* what) const {
    std::string bytes(count, '\0');
    ReadInto(offset, count, bytes.data(), what);
    return bytes;
  }

  void ReadInto(uint64_t offset, uint64_t count, char* bytes, const char* what) const {
    RequireInFile(offset, count, what);
    for (uint64_t done = 0; done < count;) {
      ssize_t n = pread(fd_, bytes + done, count - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) Bad("cannot read its ", what, ": ", n < 0 ? std::strerror(errno) : "the file shrank while read");
      done += static_cast<uint64_t>(n);
    }
  }

  template <typename T>
  std::vector<T> ReadArray(uint64_t offset, uint64_t count, const char* what) const {
    if (count > size_ / sizeof(T)) {
      Bad("the file is cut short or damaged: its ", what, " (", count, " entries at offset ", offset,
          ") are more than the file holds (", size_, " bytes)");
    }
    std::string bytes = Read(offset, count * sizeof(T), what);
    std::vector<T> items(count);
    if (count != 0) std::memcpy(items.data(), bytes.data(), bytes.size());  // an empty vector's data() may be null
    return items;
  }

  template <typename T>
  T ReadOne(uint64_t offset, const char* what) const {
    return ReadArray<T>(offset, 1, what)[0];
  }

  // XXH3-64 of bytes [0, count).
  uint64_t Hash(uint64_t count) const {
    XXH3_state_t state;  // a complete type with XXH_INLINE_ALL
    XXH3_64bits_reset(&state);
    std::string chunk(std::min(kChunkBytes, count), '\0');  // one buffer for every chunk
    for (uint64_t offset = 0; offset < count; offset += kChunkBytes) {
      uint64_t bytes = std::min(kChunkBytes, count - offset);
      ReadInto(offset, bytes, chunk.data(), "contents");
      XXH3_64bits_update(&state, chunk.data(), bytes);
    }
    return XXH3_64bits_digest(&state);
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The NUL-terminated string at `offset` of a string table, if there is one.
std::optional<std::string> StringAt(const std::string& table, uint64_t offset) {
  if (offset >= table.size()) return std::nullopt;
  size_t end = table.find('\0', offset);
  if (end == std::string::npos) return std::nullopt;
  return table.substr(offset, end - offset);
}

// The ELF file's headers, read and checked, and the address space its PT_LOAD segments make.
class ElfLibrary {
 public:
  explicit ElfLibrary(const LibraryFile& file) : file_(file) {
    CheckHeader();
    CheckSegments();
    CheckSections();
    ReadDynamic();
  }

  // The loadable segment holding addresses [address, address + count): in its bytes from the file
  // (`from_file`) or anywhere in its memory; null when none does.
  const Elf64_Phdr* SegmentOf(uint64_t address, uint64_t count, bool from_file) const {
    for (const Elf64_Phdr& p : loads_) {
      uint64_t size = from_file ? p.p_filesz : p.p_memsz;
      if (address >= p.p_vaddr && address - p.p_vaddr <= size && count <= size - (address - p.p_vaddr)) return &p;
    }
    return nullptr;
  }
  bool Mapped(uint64_t address, uint64_t count) const { return SegmentOf(address, count, false) != nullptr; }
  bool RelroIsData(const Elf64_Phdr& relro) const;
  bool Writable(uint64_t address, uint64_t count) const {
    const Elf64_Phdr* segment = SegmentOf(address, count, false);
    return segment != nullptr && (segment->p_flags & PF_W) != 0;
  }
  // The file offset of addresses [address, address + count) when a segment loads them from the file.
  std::optional<uint64_t> FileOffset(uint64_t address, uint64_t count) const {
    const Elf64_Phdr* segment = SegmentOf(address, count, true);
    if (segment == nullptr) return std::nullopt;
    return segment->p_offset + (address - segment->p_vaddr);
  }

  // The bytes at addresses [address, address + count), which must come from the file.
  uint64_t RequireFileBacked(uint64_t address, uint64_t count, const char* what) const {
    std::optional<uint64_t> offset = FileOffset(address, count);
    if (!offset) file_.Bad("the file is damaged: its ", what, " (", count, " bytes at address ", address,
                           ") is not inside the contents its segments load");
    return *offset;
  }

  void CheckDynamic() const;
  void CheckDynamicTables() const;
  void CheckRelocations() const;
  void CheckSymbols() const;
  void CheckVersions(const std::string& strings, std::optional<uint64_t> versym, std::optional<uint64_t> verneed,
                     uint64_t verneed_count, std::optional<uint64_t> verdef, uint64_t verdef_count,
                     const std::vector<std::string>& needed) const;

  // The end of the last byte any header, segment or section of the file covers.
  uint64_t Extent() const { return extent_; }
  bool HasSectionHeaders() const { return !sections_.empty(); }

 private:
  void CheckHeader();
  void CheckSegments();
  void CheckSections();
  void ReadDynamic();
  // The value of the first dynamic entry with `tag`.
  std::optional<uint64_t> Dynamic(int64_t tag) const;
  void Cover(uint64_t offset, uint64_t count) { extent_ = std::max(extent_, offset + count); }
  // The dynamic symbol table: from its section header, or nothing when the file has none.
  std::optional<Elf64_Shdr> DynamicSymbols() const;
  std::optional<Elf64_Shdr> SectionOfType(uint32_t type) const;
  std::optional<uint64_t> SectionAddress(const std::string& name) const;

  const LibraryFile& file_;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Phdr> loads_;
  std::optional<Elf64_Phdr> dynamic_;
  std::optional<Elf64_Phdr> relro_;
  std::vector<Elf64_Dyn> dynamic_entries_;  // up to DT_NULL
  std::vector<Elf64_Shdr> sections_;
  uint64_t extent_ = 0;
};

void ElfLibrary::CheckHeader() {
  uint64_t size = file_.size();
  if (size == 0) file_.Bad("the file is empty (0 bytes)");
  std::string ident = file_.Read(0, std::min<uint64_t>(size, EI_NIDENT), "identification");
  if (ident.compare(0, SELFMAG, ELFMAG, std::min<size_t>(ident.size(), SELFMAG)) != 0) {
    file_.Bad("the file is not an ELF shared library (it does not start with the ELF magic bytes)");
  }
  if (size < sizeof(Elf64_Ehdr)) {
    file_.Bad("the file is cut short: ", size, " bytes, fewer than an ELF header (", sizeof(Elf64_Ehdr), ")");
  }
  if (ident[EI_CLASS] != ELFCLASS64) file_.Bad("the file is not a 64-bit ELF file (ELF class ", int{ident[EI_CLASS]}, ")");
  if (ident[EI_DATA] != ELFDATA2LSB) file_.Bad("the file is not a little-endian ELF file");
  if (ident[EI_VERSION] != EV_CURRENT) file_.Bad("the file is damaged: ELF version ", int{ident[EI_VERSION]});
  header_ = file_.ReadOne<Elf64_Ehdr>(0, "ELF header");
  if (header_.e_type != ET_DYN) {
    file_.Bad("the file is an ELF ", header_.e_type == ET_EXEC ? "executable" : header_.e_type == ET_REL ? "object file"
                                                                                                          : "file",
              ", not a shared library (e_type ", header_.e_type, ")");
  }
  if (header_.e_machine != kHostMachine) {
    file_.Bad("the library is built for ", MachineName(header_.e_machine), ", but this process runs on ",
              MachineName(kHostMachine));
  }
  if (header_.e_ehsize != sizeof(Elf64_Ehdr) || header_.e_phentsize != sizeof(Elf64_Phdr) || header_.e_phnum == 0 ||
      header_.e_phnum == PN_XNUM) {
    file_.Bad("the file is damaged: its ELF header is not one of a 64-bit shared library (header size ",
              header_.e_ehsize, ", program header size ", header_.e_phentsize, ", ", header_.e_phnum,
              " program headers)");
  }
  Cover(0, sizeof(Elf64_Ehdr));
}

// Whether the loader may make `relro`'s pages read-only after relocation: it lies in a writable
// loadable segment, and the whole pages it covers (which the loader protects, rounding both ends
// down) hold no other loadable segment's bytes. Otherwise code could lose its execute permission
// (a flipped address bit moved it into the text segment: _init then faulted).
bool ElfLibrary::RelroIsData(const Elf64_Phdr& relro) const {
  const Elf64_Phdr* segment = SegmentOf(relro.p_vaddr, relro.p_memsz, false);
  if (segment == nullptr || (segment->p_flags & PF_W) == 0) return false;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t first = relro.p_vaddr / page * page, end = (relro.p_vaddr + relro.p_memsz) / page * page;
  for (const Elf64_Phdr& p : loads_) {
    if (&p != segment && p.p_memsz > 0 && p.p_vaddr < end && p.p_vaddr + p.p_memsz > first) return false;
  }
  return true;
}

void ElfLibrary::CheckSegments() {
  std::vector<Elf64_Phdr> segments = file_.ReadArray<Elf64_Phdr>(header_.e_phoff, header_.e_phnum, "program headers");
  Cover(header_.e_phoff, header_.e_phnum * sizeof(Elf64_Phdr));
  for (const Elf64_Phdr& p : segments) {
    file_.RequireInFile(p.p_offset, p.p_filesz, "segment contents");
    Cover(p.p_offset, p.p_filesz);
    if (p.p_type == PT_LOAD) {
      bool aligned = p.p_align <= 1 || ((p.p_align & (p.p_align - 1)) == 0 && p.p_offset % p.p_align == p.p_vaddr % p.p_align);
      if (p.p_filesz > p.p_memsz || !aligned || p.p_vaddr + p.p_memsz < p.p_vaddr) {
        file_.Bad("the file is damaged: a loadable segment at offset ", p.p_offset, " has inconsistent sizes or alignment");
      }
      loads_.push_back(p);
    } else if (p.p_type == PT_GNU_RELRO) {
      relro_ = p;  // made read-only after relocation: checked once all loadable segments are known
    } else if (p.p_type == PT_DYNAMIC) {
      if (dynamic_) file_.Bad("the file is damaged: it has two dynamic segments");
      dynamic_ = p;
    }
  }
  if (loads_.empty()) file_.Bad("the file is damaged: it has no loadable segment");
  // The loader maps the segments in one span, in address order; overlapping ones overwrite each other.
  for (size_t i = 1; i < loads_.size(); ++i) {
    if (loads_[i].p_vaddr < loads_[i - 1].p_vaddr + loads_[i - 1].p_memsz) {
      file_.Bad("the file is damaged: its loadable segments overlap or are out of order");
    }
  }
  if (relro_ && !RelroIsData(*relro_)) {
    file_.Bad("the file is damaged: its read-only-after-relocation segment lies outside the library's writable "
              "data");
  }
  if (!dynamic_) file_.Bad("the file is damaged: it has no dynamic segment (a shared library has one)");
}

void ElfLibrary::CheckSections() {
  if (header_.e_shoff == 0 && header_.e_shnum == 0) return;  // stripped of section headers: allowed
  if (header_.e_shentsize != sizeof(Elf64_Shdr) || header_.e_shnum == 0 ||
      (header_.e_shstrndx != SHN_UNDEF && header_.e_shstrndx >= header_.e_shnum)) {
    file_.Bad("the file is damaged: its ELF header describes impossible section headers (size ", header_.e_shentsize,
              ", count ", header_.e_shnum, ", names in section ", header_.e_shstrndx, ")");
  }
  sections_ = file_.ReadArray<Elf64_Shdr>(header_.e_shoff, header_.e_shnum, "section headers");
  Cover(header_.e_shoff, header_.e_shnum * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& s : sections_) {
    if (s.sh_type == SHT_NOBITS) continue;
    file_.RequireInFile(s.sh_offset, s.sh_size, "section contents");
    Cover(s.sh_offset, s.sh_size);
    if (s.sh_link >= sections_.size()) file_.Bad("the file is damaged: a section links to section ", s.sh_link);
  }
  // Sections and segments are two views of one layout: a section the loader maps lies in a
  // segment, at the same place in the file as in memory.
  for (const Elf64_Shdr& s : sections_) {
    bool nobits = s.sh_type == SHT_NOBITS;
    if ((s.sh_flags & SHF_ALLOC) == 0 || s.sh_size == 0 || (nobits && (s.sh_flags & SHF_TLS) != 0)) continue;
    const Elf64_Phdr* segment = SegmentOf(s.sh_addr, s.sh_size, /*from_file=*/!nobits);
    if (segment == nullptr || (!nobits && s.sh_offset - segment->p_offset != s.sh_addr - segment->p_vaddr)) {
      file_.Bad("the file is damaged: its section headers and program headers disagree (a section at address ",
                s.sh_addr, " is not where a segment loads it)");
    }
  }
}

// The section of `type` (the first), if the file has section headers and one of that type.
std::optional<Elf64_Shdr> ElfLibrary::SectionOfType(uint32_t type) const {
  for (const Elf64_Shdr& s : sections_) {
    if (s.sh_type == type) return s;
  }
  return std::nullopt;
}

// The address of the section named `name`, if the file has one.
std::optional<uint64_t> ElfLibrary::SectionAddress(const std::string& name) const {
  if (sections_.empty() || header_.e_shstrndx == SHN_UNDEF) return std::nullopt;
  const Elf64_Shdr& names = sections_[header_.e_shstrndx];
  std::string table = file_.Read(names.sh_offset, names.sh_size, "section names");
  for (const Elf64_Shdr& s : sections_) {
    if (StringAt(table, s.sh_name) == name) return s.sh_addr;
  }
  return std::nullopt;
}

std::optional<Elf64_Shdr> ElfLibrary::DynamicSymbols() const { return SectionOfType(SHT_DYNSYM); }

// The symbol versions the loader checks: each library a version is needed from is a DT_NEEDED
// entry, every name is in the string table, and every symbol's version index is one defined here.
// The loader follows each chain until its `next` is 0, so a chain must end exactly at its count.
void ElfLibrary::CheckVersions(const std::string& strings, std::optional<uint64_t> versym,
                               std::optional<uint64_t> verneed, uint64_t verneed_count, std::optional<uint64_t> verdef,
                               uint64_t verdef_count, const std::vector<std::string>& needed) const {
  std::vector<bool> defined(2, true);  // 0: local, 1: global
  auto define = [&](uint16_t index) {
    index &= 0x7fff;
    if (index >= defined.size()) defined.resize(index + 1, false);
    defined[index] = true;
  };
  auto bad = [&](const char* what) { file_.Bad("the file is damaged: its symbol versions are broken (", what, ")"); };
  auto read = [&](uint64_t address, auto record) {
    return file_.ReadOne<decltype(record)>(RequireFileBacked(address, sizeof(record), "symbol versions"),
                                           "symbol versions");
  };
  uint64_t address = verneed.value_or(0);
  for (uint64_t i = 0; verneed && i < verneed_count; ++i) {
    Elf64_Verneed need = read(address, Elf64_Verneed{});
    std::optional<std::string> file = StringAt(strings, need.vn_file);
    if (need.vn_version != VER_NEED_CURRENT || !file || std::find(needed.begin(), needed.end(), *file) == needed.end()) {
      bad("a needed version names no needed library");
    }
    if (need.vn_cnt == 0) bad("a needed library lists no versions");
    uint64_t aux = address + need.vn_aux;
    for (uint16_t j = 0; j < need.vn_cnt; ++j) {
      Elf64_Vernaux version = read(aux, Elf64_Vernaux{});
      if (!StringAt(strings, version.vna_name)) bad("a version name lies outside the string table");
      if ((version.vna_next == 0) != (j + 1 == need.vn_cnt)) bad("a chain of needed versions does not end at its count");
      define(version.vna_other);
      aux += version.vna_next;
    }
    if ((need.vn_next == 0) != (i + 1 == verneed_count)) bad("the chain of needed libraries does not end at its count");
    address += need.vn_next;
  }
  address = verdef.value_or(0);
  for (uint64_t i = 0; verdef && i < verdef_count; ++i) {
    Elf64_Verdef def = read(address, Elf64_Verdef{});
    if (def.vd_version != VER_DEF_CURRENT || def.vd_cnt == 0) bad("a version definition is malformed");
    Elf64_Verdaux name = read(address + def.vd_aux, Elf64_Verdaux{});
    if (!StringAt(strings, name.vda_name)) bad("a version name lies outside the string table");
    if ((def.vd_next == 0) != (i + 1 == verdef_count)) bad("the chain of version definitions does not end at its count");
    define(def.vd_ndx);
    address += def.vd_next;
  }
  std::optional<Elf64_Shdr> symbols = DynamicSymbols();
  if (!versym || !symbols) return;
  uint64_t count = symbols->sh_size / sizeof(Elf64_Sym);
  std::vector<uint16_t> versions = file_.ReadArray<uint16_t>(
      RequireFileBacked(*versym, count * sizeof(uint16_t), "symbol versions"), count, "symbol versions");
  for (uint16_t v : versions) {
    if ((v & 0x7fff) >= defined.size() || !defined[v & 0x7fff]) bad("a symbol has a version that is not defined");
  }
}

void ElfLibrary::ReadDynamic() {
  // The dynamic loader reads the dynamic section where it is mapped, not at its file offset.
  uint64_t count = dynamic_->p_filesz / sizeof(Elf64_Dyn);
  uint64_t offset = RequireFileBacked(dynamic_->p_vaddr, count * sizeof(Elf64_Dyn), "dynamic section");
  dynamic_entries_ = file_.ReadArray<Elf64_Dyn>(offset, count, "dynamic section");
  auto end = std::find_if(dynamic_entries_.begin(), dynamic_entries_.end(),
                          [](const Elf64_Dyn& d) { return d.d_tag == DT_NULL; });
  if (end == dynamic_entries_.end()) file_.Bad("the file is damaged: its dynamic section has no end marker");
  dynamic_entries_.erase(end, dynamic_entries_.end());
}

std::optional<uint64_t> ElfLibrary::Dynamic(int64_t tag) const {
  for (const Elf64_Dyn& d : dynamic_entries_) {
    if (d.d_tag == tag) return d.d_un.d_val;
  }
  return std::nullopt;
}

// The tables and code the dynamic section names. The loader trusts it: a table without its size
// or entry size is a null pointer to the loader, a missing relocation table leaves pointers
// unrelocated, a wrong size runs or reads what is not there.
void ElfLibrary::CheckDynamicTables() const {
  auto bad = [&](int64_t tag, const char* what) {
    file_.Bad("the file is damaged: its dynamic section ", what, " (tag ", tag, ")");
  };
  // Tables the loader reads whole, with their sizes: each file-backed and, with section headers,
  // the section at that address, of that size.
  struct Table { int64_t address, size; const char* what; };
  for (const Table& t : {Table{DT_STRTAB, DT_STRSZ, "dynamic string table"},
                         Table{DT_RELA, DT_RELASZ, "relocation table"},
                         Table{DT_REL, DT_RELSZ, "relocation table"},
                         Table{DT_JMPREL, DT_PLTRELSZ, "PLT relocation table"},
                         Table{DT_INIT_ARRAY, DT_INIT_ARRAYSZ, "initializer array"},
                         Table{DT_FINI_ARRAY, DT_FINI_ARRAYSZ, "finalizer array"},
                         Table{DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ, "pre-initializer array"}}) {
    std::optional<uint64_t> address = Dynamic(t.address), size = Dynamic(t.size);
    if (address.has_value() != size.has_value()) bad(address ? t.address : t.size, "gives a table without its size");
    if (!address) continue;
    RequireFileBacked(*address, *size, t.what);
    if (sections_.empty()) continue;
    auto section = std::find_if(sections_.begin(), sections_.end(), [&](const Elf64_Shdr& s) {
      return (s.sh_flags & SHF_ALLOC) != 0 && s.sh_addr == *address && s.sh_type != SHT_NOBITS;
    });
    if (section == sections_.end() || section->sh_size != *size) bad(t.address, "and section headers disagree");
  }
  if (Dynamic(DT_RELA) && Dynamic(DT_RELAENT) != sizeof(Elf64_Rela)) bad(DT_RELAENT, "gives no or a wrong entry size");
  if (Dynamic(DT_REL) && Dynamic(DT_RELENT) != sizeof(Elf64_Rel)) bad(DT_RELENT, "gives no or a wrong entry size");
  if (Dynamic(DT_JMPREL) && Dynamic(DT_PLTREL) != DT_RELA && Dynamic(DT_PLTREL) != DT_REL) {
    bad(DT_PLTREL, "gives no or a wrong PLT relocation kind");
  }
  if (Dynamic(DT_SYMENT).value_or(sizeof(Elf64_Sym)) != sizeof(Elf64_Sym)) bad(DT_SYMENT, "gives a wrong entry size");
  if (!Dynamic(DT_STRTAB) || !Dynamic(DT_SYMTAB)) bad(DT_SYMTAB, "has no symbol table");
  if (!sections_.empty()) {
    // The tables of each kind the file has are those the dynamic section names, and the reverse;
    // the code it names (DT_INIT, DT_FINI) starts the .init and .fini sections.
    auto address_of = [&](uint32_t type) -> std::optional<uint64_t> {
      std::optional<Elf64_Shdr> section = SectionOfType(type);
      return section ? std::optional<uint64_t>(section->sh_addr) : std::nullopt;
    };
    struct Agreement { int64_t tag; std::optional<uint64_t> section; };
    for (const Agreement& a : {Agreement{DT_SYMTAB, address_of(SHT_DYNSYM)}, Agreement{DT_GNU_HASH, address_of(SHT_GNU_HASH)},
                               Agreement{DT_HASH, address_of(SHT_HASH)}, Agreement{DT_VERSYM, address_of(SHT_GNU_versym)},
                               Agreement{DT_VERNEED, address_of(SHT_GNU_verneed)},
                               Agreement{DT_VERDEF, address_of(SHT_GNU_verdef)},
                               Agreement{DT_INIT_ARRAY, address_of(SHT_INIT_ARRAY)},
                               Agreement{DT_FINI_ARRAY, address_of(SHT_FINI_ARRAY)},
                               Agreement{DT_INIT, SectionAddress(".init")}, Agreement{DT_FINI, SectionAddress(".fini")}}) {
      if (Dynamic(a.tag) != a.section) bad(a.tag, "and section headers disagree");
    }
    for (const Elf64_Shdr& s : sections_) {
      bool relocations = (s.sh_type == SHT_RELA || s.sh_type == SHT_REL) && (s.sh_flags & SHF_ALLOC) != 0;
      if (relocations && s.sh_size != 0 && Dynamic(DT_RELA) != s.sh_addr && Dynamic(DT_REL) != s.sh_addr &&
          Dynamic(DT_JMPREL) != s.sh_addr) {
        bad(DT_RELA, "leaves out a relocation section");
      }
    }
  }
  for (int64_t tag : {DT_INIT, DT_FINI}) {
    std::optional<uint64_t> code = Dynamic(tag);
    const Elf64_Phdr* segment = code ? SegmentOf(*code, 1, true) : nullptr;
    if (code && (segment == nullptr || (segment->p_flags & PF_X) == 0)) bad(tag, "names code outside the executable segments");
  }
  // Tables and code the loader only points at: each must be mapped.
  for (int64_t tag : {DT_SYMTAB, DT_HASH, DT_GNU_HASH, DT_VERSYM, DT_VERNEED, DT_VERDEF, DT_PLTGOT}) {
    std::optional<uint64_t> address = Dynamic(tag);
    if (address && !Mapped(*address, 1)) bad(tag, "points outside the library");
  }
}

void ElfLibrary::CheckDynamic() const {
  CheckDynamicTables();
  uint64_t strsz = Dynamic(DT_STRSZ).value_or(0);
  std::string strings = file_.Read(*FileOffset(*Dynamic(DT_STRTAB), strsz), strsz, "dynamic string table");
  std::vector<std::string> needed;
  for (auto it = dynamic_entries_.begin(); it != dynamic_entries_.end(); ++it) {
    bool names = it->d_tag == DT_NEEDED || it->d_tag == DT_SONAME || it->d_tag == DT_RPATH || it->d_tag == DT_RUNPATH;
    if (names) {
      std::optional<std::string> name = StringAt(strings, it->d_un.d_val);
      if (!name) file_.Bad("the file is damaged: a library name in its dynamic section lies outside its string table");
      if (it->d_tag == DT_NEEDED) needed.push_back(*name);
    }
  }
  CheckVersions(strings, Dynamic(DT_VERSYM), Dynamic(DT_VERNEED), Dynamic(DT_VERNEEDNUM).value_or(0), Dynamic(DT_VERDEF),
                Dynamic(DT_VERDEFNUM).value_or(0), needed);
  // The GNU hash table: its header, Bloom filter and buckets, as the loader's symbol lookup reads them.
  if (std::optional<uint64_t> address = Dynamic(DT_GNU_HASH)) {
    uint64_t at = RequireFileBacked(*address, 16, "symbol hash table");
    std::vector<uint32_t> head = file_.ReadArray<uint32_t>(at, 4, "symbol hash table");
    uint64_t table_bytes = 16 + uint64_t{head[2]} * 8 + uint64_t{head[0]} * 4;  // bloom words, buckets
    RequireFileBacked(*address, table_bytes, "symbol hash table");
  }
  CheckRelocations();
}

#if defined(__x86_64__)
// The relocation types of x86-64 shared libraries. The loader applies the first DT_RELACOUNT
// relocations as R_X86_64_RELATIVE without looking and aborts the process when one is not.
bool KnownRelocation(uint32_t type) {
  switch (type) {
    case R_X86_64_NONE: case R_X86_64_64: case R_X86_64_GLOB_DAT: case R_X86_64_JUMP_SLOT: case R_X86_64_RELATIVE:
    case R_X86_64_DTPMOD64: case R_X86_64_DTPOFF64: case R_X86_64_TPOFF64: case R_X86_64_IRELATIVE:
      return true;
    default:
      return false;
  }
}
constexpr uint32_t kRelativeRelocation = R_X86_64_RELATIVE, kIndirectRelocation = R_X86_64_IRELATIVE;
#else
bool KnownRelocation(uint32_t) { return true; }  // types not checked on this architecture
constexpr uint32_t kRelativeRelocation = UINT32_MAX, kIndirectRelocation = UINT32_MAX;
#endif

// Relocations write where they point: into writable parts of the library (or any part, for a
// library with text relocations), about symbols it has; relative ones store addresses inside it.
void ElfLibrary::CheckRelocations() const {
  std::optional<Elf64_Shdr> symbols = DynamicSymbols();
  uint64_t symbol_count = symbols ? symbols->sh_size / sizeof(Elf64_Sym) : UINT64_MAX;
  bool text_relocations = Dynamic(DT_TEXTREL) || (Dynamic(DT_FLAGS).value_or(0) & DF_TEXTREL) != 0;
  bool plt_rela = Dynamic(DT_PLTREL).value_or(DT_RELA) == DT_RELA;
  uint64_t relative_count = Dynamic(DT_RELACOUNT).value_or(0);
  struct Relocations { int64_t address, size; bool rela; };
  for (const Relocations& r : {Relocations{DT_RELA, DT_RELASZ, true}, Relocations{DT_REL, DT_RELSZ, false},
                               Relocations{DT_JMPREL, DT_PLTRELSZ, plt_rela}}) {
    std::optional<uint64_t> address = Dynamic(r.address);
    if (!address) continue;
    uint64_t entry = r.rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
    uint64_t n = Dynamic(r.size).value_or(0) / entry;
    std::string table = file_.Read(*FileOffset(*address, n * entry), n * entry, "relocation table");
    for (uint64_t i = 0; i < n; ++i) {
      Elf64_Rela rel{};  // r_offset and r_info lead both kinds
      std::memcpy(&rel, table.data() + i * entry, entry);
      uint32_t type = ELF64_R_TYPE(rel.r_info);
      bool relative = type == kRelativeRelocation || type == kIndirectRelocation;
      bool target_ok = text_relocations ? Mapped(rel.r_offset, sizeof(uint64_t)) : Writable(rel.r_offset, sizeof(uint64_t));
      bool value_ok = !r.rela || !relative || Mapped(static_cast<uint64_t>(rel.r_addend), 0);
      bool kind_ok = KnownRelocation(type) && !(r.address == DT_RELA && i < relative_count && type != kRelativeRelocation);
      if (!target_ok || !value_ok || !kind_ok || ELF64_R_SYM(rel.r_info) >= symbol_count) {
        file_.Bad("the file is damaged: relocation ", i, " (type ", type, ", address ", rel.r_offset, ", symbol ",
                  ELF64_R_SYM(rel.r_info), ") is not one a library can have");
      }
    }
  }
}

// Every symbol the library defines lies in it, and `__tvm_dev_mblob` holds an 8-byte length and
// that many bytes, all of them in the file.
void ElfLibrary::CheckSymbols() const {
  std::optional<Elf64_Shdr> symbols = DynamicSymbols();
  if (!symbols) return;  // no section headers: the runtime checks the blob against its symbol size
  const Elf64_Shdr& names = sections_[symbols->sh_link];
  std::string strings = file_.Read(names.sh_offset, names.sh_size, "dynamic symbol names");
  std::vector<Elf64_Sym> table =
      file_.ReadArray<Elf64_Sym>(symbols->sh_offset, symbols->sh_size / sizeof(Elf64_Sym), "dynamic symbols");
  static constexpr char kBlob[] = "__tvm_dev_mblob";
  for (const Elf64_Sym& s : table) {
    if (s.st_name >= strings.size()) file_.Bad("the file is damaged: a dynamic symbol's name lies outside its table");
    // C++ of TVM's runtime API (tvm::runtime::...), as the code TVM's ccompiler codegen writes calls:
    // kiln implements TVM's C API, not its C++ one.
    const char* name = strings.c_str() + s.st_name;
    bool tvm_cpp = std::strncmp(name, "_ZN3tvm7runtime", 15) == 0 || std::strncmp(name, "_ZNK3tvm7runtime", 16) == 0;
    if (s.st_shndx == SHN_UNDEF && tvm_cpp) {
      int status = 0;
      char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
      std::string readable = status == 0 && demangled != nullptr ? demangled : name;
      std::free(demangled);
      file_.Bad("its code needs TVM's C++ runtime library (libtvm_runtime), which kiln does not provide: it calls ",
                EscapeForDisplay(readable.c_str()),
                ". TVM builds such code for its ccompiler codegen; run the library with TVM's runtime, or build the "
                "model with kiln (kiln compile --byoc ccompiler)");
    }
    bool in_library = s.st_shndx != SHN_UNDEF && s.st_shndx != SHN_ABS && ELF64_ST_TYPE(s.st_info) != STT_TLS;
    if (in_library && !Mapped(s.st_value, s.st_size)) {
      file_.Bad("the file is damaged: the dynamic symbol ", EscapeForDisplay(strings.c_str() + s.st_name),
                " lies outside the library");
    }
  }
  for (const Elf64_Sym& s : table) {
    if (s.st_shndx == SHN_UNDEF || strings.compare(s.st_name, sizeof(kBlob), kBlob, sizeof(kBlob)) != 0) continue;
    if (s.st_size != 0 && s.st_size < sizeof(uint64_t)) {
      file_.Bad("the file is damaged: __tvm_dev_mblob is too small to hold its length");
    }
    uint64_t offset = RequireFileBacked(s.st_value, sizeof(uint64_t), "import blob __tvm_dev_mblob");
    uint64_t length = file_.ReadOne<uint64_t>(offset, "import blob length");
    if (s.st_size != 0 && length > s.st_size - sizeof(uint64_t)) {
      file_.Bad("the file is damaged: __tvm_dev_mblob claims ", length, " bytes but holds ", s.st_size - sizeof(uint64_t));
    }
    RequireFileBacked(s.st_value + sizeof(uint64_t), length, "import blob __tvm_dev_mblob");
    return;
  }
}

// Appends `bytes` to the file at `path`; `what` says what in an error.
void AppendBytes(const std::string& path, const std::string& bytes, const char* what) {
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  Check(fd >= 0, "cannot add the ", what, " to '", path, "': ", std::strerror(errno));
  ssize_t written = write(fd, bytes.data(), bytes.size());
  int saved = errno;
  bool closed = close(fd) == 0;
  Check(written == static_cast<ssize_t>(bytes.size()) && closed, "cannot add the ", what, " to '", path, "': ",
        std::strerror(written < 0 ? saved : errno));
}

// Whether this CPU has the extension `name` (one of RecordableCpuFeatures()).
bool CpuHas(const std::string& name) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (name == "avx") return __builtin_cpu_supports("avx");
  if (name == "avx2") return __builtin_cpu_supports("avx2");
  if (name == "fma") return __builtin_cpu_supports("fma");
  if (name == "bmi") return __builtin_cpu_supports("bmi");
  if (name == "bmi2") return __builtin_cpu_supports("bmi2");
  if (name == "avx512f") return __builtin_cpu_supports("avx512f");
  if (name == "avx512vl") return __builtin_cpu_supports("avx512vl");
  if (name == "avx512bw") return __builtin_cpu_supports("avx512bw");
  if (name == "avx512dq") return __builtin_cpu_supports("avx512dq");
  if (name == "avx512cd") return __builtin_cpu_supports("avx512cd");
  if (name == "avx512vnni") return __builtin_cpu_supports("avx512vnni");
  if (name == "avx512bf16") return __builtin_cpu_supports("avx512bf16");
#endif
  (void)name;
  return false;
}

// The record of instruction-set extensions in [elf_end, covered) (the bytes before the checksum
// trailer), checked against this CPU.
void CheckIsaRecord(const LibraryFile& file, uint64_t elf_end, uint64_t covered) {
  if (covered < elf_end + 16 || file.Read(covered - 8, 8, "instruction-set record") != kLibraryIsaMagic) return;
  uint64_t length = 0;
  std::memcpy(&length, file.Read(covered - 16, 8, "instruction-set record").data(), 8);
  if (length > 4096 || length > covered - 16 - elf_end) {
    file.Bad("the file is damaged: its instruction-set record is cut short");
  }
  std::string text = file.Read(covered - 16 - length, length, "instruction-set record");
  std::vector<std::string> missing;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = std::min(text.find(',', begin), text.size());
    std::string name = text.substr(begin, end - begin);
    bool known = false;
    for (const CpuFeature& feature : RecordableCpuFeatures()) known = known || name == feature.name;
    if (!known || !CpuHas(name)) missing.push_back(known ? name : name + " (not known to this kiln)");
    begin = end + 1;
  }
  if (missing.empty()) return;
  std::string list;
  for (const std::string& name : missing) list += (list.empty() ? "" : ", ") + name;
  file.Bad("it was compiled for instructions this CPU does not have: ", ValidUtf8(list),
           "; compile it on this machine, or for a target this CPU has (kiln compile --target, e.g. x86-64-v3)");
}

}  // namespace

const std::vector<CpuFeature>& RecordableCpuFeatures() {
  static const std::vector<CpuFeature> features = {
#if defined(__x86_64__)
      {"avx", "__AVX__"},           {"avx2", "__AVX2__"},         {"fma", "__FMA__"},
      {"bmi", "__BMI__"},           {"bmi2", "__BMI2__"},         {"avx512f", "__AVX512F__"},
      {"avx512vl", "__AVX512VL__"}, {"avx512bw", "__AVX512BW__"}, {"avx512dq", "__AVX512DQ__"},
      {"avx512cd", "__AVX512CD__"}, {"avx512vnni", "__AVX512VNNI__"}, {"avx512bf16", "__AVX512BF16__"},
#endif
  };
  return features;
}

void AppendLibraryIsa(const std::string& path, const std::vector<std::string>& features) {
  std::string text;
  for (const std::string& name : features) text += (text.empty() ? "" : ",") + name;
  uint64_t length = text.size();
  AppendBytes(path, text + std::string(reinterpret_cast<const char*>(&length), 8) + kLibraryIsaMagic,
              "instruction-set record");
}

void AppendLibraryChecksum(const std::string& path) {
  uint64_t size = 0, hash = 0;
  {
    LibraryFile file(path);
    size = file.size();
    hash = file.Hash(size);
  }
  char trailer[kLibraryChecksumTrailerSize];
  std::memcpy(trailer, kLibraryChecksumMagic, 8);
  std::memcpy(trailer + 8, &size, 8);
  std::memcpy(trailer + 16, &hash, 8);
  AppendBytes(path, std::string(trailer, sizeof(trailer)), "checksum");
}

void CheckLibraryFile(const std::string& path) {
  LibraryFile file(path);
  ElfLibrary elf(file);
  elf.CheckDynamic();
  elf.CheckSymbols();
  // A trailer is the last bytes of the file; without one (a library built by TVM) the checks above
  // are all. Section headers mark where the ELF contents end; bytes after them that are not a
  // trailer are a damaged or cut trailer. (A file without section headers may hold sections no
  // header describes; its end is unknown.)
  uint64_t elf_end = elf.Extent();
  std::string trailer;
  if (file.size() >= elf_end + kLibraryChecksumTrailerSize) {
    trailer = file.Read(file.size() - kLibraryChecksumTrailerSize, kLibraryChecksumTrailerSize, "checksum");
  }
  if (trailer.compare(0, 8, kLibraryChecksumMagic) != 0) {
    if (elf.HasSectionHeaders() && file.size() != elf_end) {
      file.Bad("the file is damaged: ", file.size() - elf_end, " bytes follow its ELF contents and they are not kiln's ",
               kLibraryChecksumTrailerSize, "-byte checksum");
    }
    return;
  }
  uint64_t covered = file.size() - kLibraryChecksumTrailerSize;
  uint64_t claimed_size = 0, claimed_hash = 0;
  std::memcpy(&claimed_size, trailer.data() + 8, 8);
  std::memcpy(&claimed_hash, trailer.data() + 16, 8);
  if (claimed_size != covered || claimed_hash != file.Hash(covered)) {
    file.Bad("the file is damaged: its contents do not match the checksum kiln wrote when exporting it");
  }
  CheckIsaRecord(file, elf_end, covered);
}

}  // namespace kiln::runtime
