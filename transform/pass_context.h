// PassContext: which passes run (opt level, required and disabled passes), typed configuration
// keys, and instrumentation (print the IR after passes, time them, verify between them).
//
// Config keys are declared in pass_context.cc with a type, default and description; an unknown
// key, or a value of the wrong type, is an Error that lists the known keys.
#pragma once

#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "ir/expr.h"

namespace kiln::transform {

struct ConfigKey {
  std::string name;
  enum class Kind { kInt, kBool, kString } kind;
  std::string default_value;
  std::string doc;
};
// Every key the passes read.
const std::vector<ConfigKey>& ConfigKeys();

class PassContext {
 public:
  int opt_level = 3;
  std::set<std::string> required_passes;
  std::set<std::string> disabled_passes;
  std::set<std::string> print_ir_after;  // pass names, or "all"
  bool print_pass_times = false;
  bool verify = false;                   // check the IR after every pass (on in debug builds)

  // Sets a config value from text ("relay.FuseOps.max_depth", "8"); throws Error for unknown keys
  // and values that do not parse as the key's type.
  void SetConfig(const std::string& key, const std::string& value);
  int64_t GetInt(const std::string& key) const;
  bool GetBool(const std::string& key) const;
  std::string GetString(const std::string& key) const;

  // Checks that required and disabled passes name known passes (listing them otherwise).
  void CheckPassNames(const std::vector<std::string>& known) const;

 private:
  const ConfigKey& Key(const std::string& name) const;
  std::map<std::string, std::string> config_;
};

}  // namespace kiln::transform
