// Operator attributes: named values of a few kinds, checked against the op's schema (kinds,
// defaults, required names) when a call is made.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kiln::ir {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

enum class AttrKind { kInt, kFloat, kString, kInts, kFloats };
const char* AttrKindName(AttrKind kind);

struct AttrSchema {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> default_value;  // absent: required
  std::string doc;
};

class Attrs {
 public:
  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  // Each throws Error naming the attribute when it is absent or of another kind.
  int64_t GetInt(const std::string& name) const;
  double GetFloat(const std::string& name) const;
  const std::string& GetString(const std::string& name) const;
  const std::vector<int64_t>& GetInts(const std::string& name) const;
  const std::vector<double>& GetFloats(const std::string& name) const;

  void Set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  const std::map<std::string, AttrValue>& values() const { return values_; }
  bool operator==(const Attrs& other) const { return values_ == other.values_; }
  bool operator!=(const Attrs& other) const { return !(*this == other); }

  // Checks against `schema` (unknown names and wrong kinds are errors that list what is known;
  // ints are accepted where floats are expected) and fills in defaults. `owner` names the op in
  // messages.
  Attrs Normalize(const std::vector<AttrSchema>& schema, const std::string& owner) const;

 private:
  std::map<std::string, AttrValue> values_;
};

// "[1, 2]", "1.5", "\"NCHW\"" as the IR text writes them.
std::string AttrValueText(const AttrValue& value);

}  // namespace kiln::ir
