// Writing blobs as an ELF relocatable object (blob_object.h).
#include "backend/blob_object.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "runtime/error.h"

namespace kiln::backend {
namespace {

constexpr uint64_t kBlobAlignment = 64;

uint64_t AlignUp(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// Appends `name` and its terminating zero to a string table; returns its offset.
uint32_t AddName(std::string& table, const std::string& name) {
  uint32_t offset = static_cast<uint32_t>(table.size());
  table += name;
  table += '\0';
  return offset;
}

template <typename T>
std::string BytesOf(const std::vector<T>& items) {
  return std::string(reinterpret_cast<const char*>(items.data()), items.size() * sizeof(T));
}

}  // namespace

void WriteBlobObject(const std::string& path, const std::vector<Blob>& blobs, const std::string& model_object) {
  Elf64_Ehdr model{};
  {
    std::ifstream in(model_object, std::ios::binary);
    in.read(reinterpret_cast<char*>(&model), sizeof(model));
    runtime::Check(in.good() && std::memcmp(model.e_ident, ELFMAG, SELFMAG) == 0 &&
                       model.e_ident[EI_CLASS] == ELFCLASS64 && model.e_ident[EI_DATA] == ELFDATA2LSB,
                   "embedding data in a library needs a 64-bit little-endian ELF target; the compiler's object '",
                   model_object, "' is not one");
  }
  // Sections: the null one, one per blob, .note.GNU-stack (no executable stack), the symbol
  // table, its names, the section names.
  const uint16_t first_blob = 1, note = static_cast<uint16_t>(first_blob + blobs.size());
  const uint16_t symtab = note + 1, strtab = note + 2, shstrtab = note + 3, count = note + 4;
  std::string section_names(1, '\0'), symbol_names(1, '\0');
  std::vector<Elf64_Shdr> sections(count);
  std::vector<Elf64_Sym> symbols(1);
  uint64_t offset = sizeof(Elf64_Ehdr);
  for (size_t b = 0; b < blobs.size(); ++b) {
    const Blob& blob = blobs[b];
    Elf64_Shdr& s = sections[first_blob + b];
    s.sh_name = AddName(section_names, (blob.hidden_writable ? ".data." : ".rodata.") + blob.symbol);
    s.sh_type = SHT_PROGBITS;
    s.sh_flags = SHF_ALLOC | (blob.hidden_writable ? SHF_WRITE : 0);
    offset = AlignUp(offset, kBlobAlignment);
    s.sh_offset = offset;
    s.sh_size = blob.bytes.size;
    s.sh_addralign = kBlobAlignment;
    offset += blob.bytes.size;
    Elf64_Sym symbol{};
    symbol.st_name = AddName(symbol_names, blob.symbol);
    symbol.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
    symbol.st_other = blob.hidden_writable ? STV_HIDDEN : STV_DEFAULT;
    symbol.st_shndx = static_cast<uint16_t>(first_blob + b);
    symbol.st_size = blob.bytes.size;
    symbols.push_back(symbol);
  }
  sections[note].sh_name = AddName(section_names, ".note.GNU-stack");
  sections[note].sh_type = SHT_PROGBITS;
  sections[note].sh_offset = offset;
  sections[note].sh_addralign = 1;
  std::string symbol_table = BytesOf(symbols);
  offset = AlignUp(offset, 8);
  Elf64_Shdr& st = sections[symtab];
  st.sh_name = AddName(section_names, ".symtab");
  st.sh_type = SHT_SYMTAB;
  st.sh_offset = offset;
  st.sh_size = symbol_table.size();
  st.sh_link = strtab;
  st.sh_info = 1;  // the first global symbol: only the null symbol is local
  st.sh_addralign = 8;
  st.sh_entsize = sizeof(Elf64_Sym);
  offset += symbol_table.size();
  sections[strtab].sh_name = AddName(section_names, ".strtab");
  sections[shstrtab].sh_name = AddName(section_names, ".shstrtab");
  for (uint16_t table : {strtab, shstrtab}) {
    sections[table].sh_type = SHT_STRTAB;
    sections[table].sh_offset = offset;
    sections[table].sh_size = (table == strtab ? symbol_names : section_names).size();
    sections[table].sh_addralign = 1;
    offset += sections[table].sh_size;
  }
  offset = AlignUp(offset, 8);

  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, model.e_ident, EI_NIDENT);
  header.e_type = ET_REL;
  header.e_machine = model.e_machine;
  header.e_version = EV_CURRENT;
  header.e_shoff = offset;
  header.e_flags = model.e_flags;
  header.e_ehsize = sizeof(Elf64_Ehdr);
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = count;
  header.e_shstrndx = shstrtab;

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint64_t written = 0;
  auto write = [&](const char* data, uint64_t size) {
    out.write(data, static_cast<std::streamsize>(size));
    written += size;
  };
  auto pad_to = [&](uint64_t position) {
    static const char zeros[4096] = {};
    while (written < position) write(zeros, std::min<uint64_t>(sizeof(zeros), position - written));
  };
  write(reinterpret_cast<const char*>(&header), sizeof(header));
  for (size_t b = 0; b < blobs.size(); ++b) {
    const uint64_t start = sections[first_blob + b].sh_offset;
    for (const auto& [at, piece] : blobs[b].bytes.pieces) {
      runtime::CheckInternal(start + at >= written && at + piece.size() <= blobs[b].bytes.size,
                             "WriteBlobObject: the pieces of ", blobs[b].symbol, " overlap or lie outside it");
      pad_to(start + at);
      write(piece.data(), piece.size());
    }
    pad_to(start + blobs[b].bytes.size);
  }
  pad_to(st.sh_offset);
  write(symbol_table.data(), symbol_table.size());
  write(symbol_names.data(), symbol_names.size());
  write(section_names.data(), section_names.size());
  pad_to(header.e_shoff);
  std::string headers = BytesOf(sections);
  write(headers.data(), headers.size());
  out.close();
  runtime::Check(out.good(), "cannot write '", path, "'");
}

}  // namespace kiln::backend
