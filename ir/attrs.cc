// Attribute access and schema checking.
#include "ir/attrs.h"

#include <cmath>
#include <cstdio>

#include "runtime/error.h"

namespace kiln::ir {

using runtime::Fail;
using runtime::StrCat;

namespace {

template <typename T>
const T& Get(const std::map<std::string, AttrValue>& values, const std::string& name, const char* kind) {
  auto it = values.find(name);
  if (it == values.end()) Fail("attribute '", name, "' is missing");
  const T* value = std::get_if<T>(&it->second);
  if (value == nullptr) Fail("attribute '", name, "' is not ", kind, " (it is ", AttrValueText(it->second), ")");
  return *value;
}

bool KindMatches(const AttrValue& value, AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt: return std::holds_alternative<int64_t>(value);
    case AttrKind::kFloat: return std::holds_alternative<double>(value);
    case AttrKind::kString: return std::holds_alternative<std::string>(value);
    case AttrKind::kInts: return std::holds_alternative<std::vector<int64_t>>(value);
    case AttrKind::kFloats: return std::holds_alternative<std::vector<double>>(value);
  }
  return false;
}

// Ints stand for floats where floats are expected ("alpha=1" means 1.0).
std::optional<AttrValue> Coerce(const AttrValue& value, AttrKind kind) {
  if (kind == AttrKind::kFloat && std::holds_alternative<int64_t>(value)) {
    return AttrValue(static_cast<double>(std::get<int64_t>(value)));
  }
  if (kind == AttrKind::kFloats && std::holds_alternative<std::vector<int64_t>>(value)) {
    const auto& ints = std::get<std::vector<int64_t>>(value);
    return AttrValue(std::vector<double>(ints.begin(), ints.end()));
  }
  return std::nullopt;
}

std::string FloatText(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%.17g", v);
  std::string text = buffer;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";  // keep it a float
  return text;
}

}  // namespace

const char* AttrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt: return "an int";
    case AttrKind::kFloat: return "a float";
    case AttrKind::kString: return "a string";
    case AttrKind::kInts: return "a list of ints";
    case AttrKind::kFloats: return "a list of floats";
  }
  return "?";
}

int64_t Attrs::GetInt(const std::string& name) const { return Get<int64_t>(values_, name, "an int"); }
double Attrs::GetFloat(const std::string& name) const { return Get<double>(values_, name, "a float"); }
const std::string& Attrs::GetString(const std::string& name) const {
  return Get<std::string>(values_, name, "a string");
}
const std::vector<int64_t>& Attrs::GetInts(const std::string& name) const {
  return Get<std::vector<int64_t>>(values_, name, "a list of ints");
}
const std::vector<double>& Attrs::GetFloats(const std::string& name) const {
  return Get<std::vector<double>>(values_, name, "a list of floats");
}

Attrs Attrs::Normalize(const std::vector<AttrSchema>& schema, const std::string& owner) const {
  Attrs normalized;
  for (const auto& [name, value] : values_) {
    const AttrSchema* entry = nullptr;
    for (const AttrSchema& s : schema) {
      if (s.name == name) entry = &s;
    }
    if (entry == nullptr) {
      std::string known;
      for (const AttrSchema& s : schema) known += (known.empty() ? "" : ", ") + s.name;
      Fail(owner, ": unknown attribute '", name, "' (known: ", known.empty() ? "none" : known, ")");
    }
    if (KindMatches(value, entry->kind)) {
      normalized.values_[name] = value;
    } else if (auto coerced = Coerce(value, entry->kind)) {
      normalized.values_[name] = *coerced;
    } else {
      Fail(owner, ": attribute '", name, "' must be ", AttrKindName(entry->kind), ", got ", AttrValueText(value));
    }
  }
  for (const AttrSchema& s : schema) {
    if (normalized.Has(s.name)) continue;
    if (!s.default_value) Fail(owner, ": attribute '", s.name, "' is required");
    normalized.values_[s.name] = *s.default_value;
  }
  return normalized;
}

std::string AttrValueText(const AttrValue& value) {
  struct Printer {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return FloatText(v); }
    std::string operator()(const std::string& v) const {
      std::string text = "\"";
      for (char c : v) {
        if (c == '"' || c == '\\') text += '\\';
        text += c;
      }
      return text + "\"";
    }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string text = "[";
      for (size_t i = 0; i < v.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(v[i]);
      return text + "]";
    }
    std::string operator()(const std::vector<double>& v) const {
      std::string text = "[";
      for (size_t i = 0; i < v.size(); ++i) text += (i > 0 ? ", " : "") + FloatText(v[i]);
      return text + "]";
    }
  };
  return std::visit(Printer{}, value);
}

}  // namespace kiln::ir
