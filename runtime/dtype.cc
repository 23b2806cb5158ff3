// Dtype strings as TVM writes them in graph JSON and params files.
#include "runtime/dtype.h"

#include <charconv>

#include "runtime/error.h"

namespace kiln::runtime {
namespace {

struct Float8Name {
  std::string_view name;
  uint8_t code;
};
constexpr Float8Name kFloat8Names[] = {{"float8_e4m3fn", kDLFloat8E4M3FN},
                                       {"float8_e4m3fnuz", kDLFloat8E4M3FNUZ},
                                       {"float8_e5m2", kDLFloat8E5M2},
                                       {"float8_e5m2fnuz", kDLFloat8E5M2FNUZ}};

// Parses a decimal number filling all of `text`; returns -1 when it is not one.
int64_t ParseCount(std::string_view text) {
  int64_t value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return -1;
  return value;
}

}  // namespace

DLDataType ParseDType(std::string_view text) {
  auto fail = [&]() { Fail("'", text, "' is not a dtype (expected e.g. float32, int8, uint1, bool, bfloat16 or float32x4)"); };
  if (text == "bool") return DLDataType{kDLUInt, 1, 1};
  if (text == "handle") return DLDataType{3 /* kTVMOpaqueHandle */, 64, 1};
  for (const Float8Name& f : kFloat8Names) {
    if (text == f.name) return DLDataType{f.code, 8, 1};
  }

  DLDataType dtype{kDLFloat, 32, 1};
  std::string_view rest;
  struct Prefix { std::string_view name; uint8_t code; uint8_t default_bits; };
  // "uint" must precede "int" and "bfloat" precede "float" so the longer prefix wins.
  static constexpr Prefix kPrefixes[] = {{"uint", kDLUInt, 32}, {"int", kDLInt, 32},
                                         {"bfloat", kDLBfloat, 16}, {"float", kDLFloat, 32}};
  bool matched = false;
  for (const Prefix& p : kPrefixes) {
    if (text.substr(0, p.name.size()) == p.name) {
      dtype.code = p.code;
      dtype.bits = p.default_bits;
      rest = text.substr(p.name.size());
      matched = true;
      break;
    }
  }
  if (!matched) fail();

  std::string_view bits_text = rest, lanes_text;
  if (size_t x = rest.find('x'); x != std::string_view::npos) {
    bits_text = rest.substr(0, x);
    lanes_text = rest.substr(x + 1);
  }
  if (!bits_text.empty()) {
    int64_t bits = ParseCount(bits_text);
    if (bits <= 0 || bits > 255) fail();
    dtype.bits = static_cast<uint8_t>(bits);
  }
  if (rest.find('x') != std::string_view::npos) {
    int64_t lanes = ParseCount(lanes_text);
    if (lanes <= 0 || lanes > 65535) fail();
    dtype.lanes = static_cast<uint16_t>(lanes);
  }
  if (dtype.code == kDLFloat && dtype.bits != 16 && dtype.bits != 32 && dtype.bits != 64) fail();
  if (dtype.code == kDLBfloat && dtype.bits != 16) fail();
  return dtype;
}

std::string DTypeToString(DLDataType dtype) {
  if (dtype.code == kDLUInt && dtype.bits == 1 && dtype.lanes == 1) return "bool";
  for (const Float8Name& f : kFloat8Names) {
    if (dtype.code == f.code && dtype.bits == 8 && dtype.lanes == 1) return std::string(f.name);
  }
  std::string name;
  switch (dtype.code) {
    case kDLInt: name = "int"; break;
    case kDLUInt: name = "uint"; break;
    case kDLFloat: name = "float"; break;
    case kDLBfloat: name = "bfloat"; break;
    case 3: return "handle";
    default: return StrCat("unknown(code=", int{dtype.code}, ")", int{dtype.bits});
  }
  name += std::to_string(dtype.bits);
  if (dtype.lanes != 1) name += "x" + std::to_string(dtype.lanes);
  return name;
}

}  // namespace kiln::runtime
