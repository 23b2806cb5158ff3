// Config keys and their typed access.
#include "transform/pass_context.h"

#include "ir/evaluate.h"
#include "runtime/error.h"

namespace kiln::transform {

using runtime::Fail;

const std::vector<ConfigKey>& ConfigKeys() {
  static const std::vector<ConfigKey> keys = {
      {"relay.FuseOps.max_depth", ConfigKey::Kind::kInt, "256", "the most ops fused into one primitive function"},
      {"kiln.FoldConstant.max_elements", ConfigKey::Kind::kInt, std::to_string(ir::kDefaultMaxFoldedElements),
       "constant results larger than this many elements are not folded"},
      {"kiln.AlterOpLayout.block", ConfigKey::Kind::kInt, "-1",
       "channel block of the NCHW[x]c layout of convolutions (8 or 16; 0 turns AlterOpLayout off; -1: the "
       "target's choice)"},
      {"tir.disable_vectorize", ConfigKey::Kind::kBool, "false", "accepted for TVM compatibility; no effect"},
  };
  return keys;
}

const ConfigKey& PassContext::Key(const std::string& name) const {
  for (const ConfigKey& key : ConfigKeys()) {
    if (key.name == name) return key;
  }
  std::string known;
  for (const ConfigKey& key : ConfigKeys()) known += (known.empty() ? "" : ", ") + key.name;
  Fail("unknown pass config key '", name, "' (known keys: ", known, ")");
}

void PassContext::SetConfig(const std::string& key, const std::string& value) {
  const ConfigKey& k = Key(key);
  if (k.kind == ConfigKey::Kind::kInt) {
    bool digits = !value.empty() && value.find_first_not_of("-0123456789") == std::string::npos;
    if (!digits) Fail("pass config '", key, "' needs an integer, got '", value, "'");
  }
  if (k.kind == ConfigKey::Kind::kBool && value != "true" && value != "false" && value != "1" && value != "0") {
    Fail("pass config '", key, "' needs true or false, got '", value, "'");
  }
  config_[key] = value;
}

int64_t PassContext::GetInt(const std::string& key) const {
  const ConfigKey& k = Key(key);
  auto it = config_.find(key);
  return std::stoll(it == config_.end() ? k.default_value : it->second);
}

bool PassContext::GetBool(const std::string& key) const {
  const ConfigKey& k = Key(key);
  auto it = config_.find(key);
  std::string v = it == config_.end() ? k.default_value : it->second;
  return v == "true" || v == "1";
}

std::string PassContext::GetString(const std::string& key) const {
  const ConfigKey& k = Key(key);
  auto it = config_.find(key);
  return it == config_.end() ? k.default_value : it->second;
}

void PassContext::CheckPassNames(const std::vector<std::string>& known) const {
  for (const std::set<std::string>* names : {&required_passes, &disabled_passes, &print_ir_after}) {
    for (const std::string& name : *names) {
      if (name == "all" && names == &print_ir_after) continue;
      bool found = false;
      for (const std::string& k : known) found = found || k == name;
      if (found) continue;
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      Fail("unknown pass '", name, "' (passes: ", list, ")");
    }
  }
}

}  // namespace kiln::transform
