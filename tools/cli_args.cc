// Parsing command-line arguments.
#include "tools/cli_args.h"

#include "runtime/error.h"

namespace kiln::tools {

using runtime::Fail;

CliArgs::CliArgs(const std::vector<std::string>& argv, const std::vector<OptionSpec>& specs) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-' || (arg[1] >= '0' && arg[1] <= '9')) {
      positionals_.push_back(arg);
      continue;
    }
    std::string name = arg, value;
    bool inline_value = false;
    if (size_t eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : specs) {
      if (s.name == name || (!s.alias.empty() && s.alias == name)) spec = &s;
    }
    // A short option with its value attached, as compilers take it: -O3.
    for (const OptionSpec& s : specs) {
      if (spec == nullptr && s.takes_value && s.alias.size() == 2 && arg.rfind(s.alias, 0) == 0 && arg[1] != '-') {
        spec = &s;
        value = arg.substr(2);
        inline_value = true;
      }
    }
    if (spec == nullptr) {
      std::string known;
      for (const OptionSpec& s : specs) known += (known.empty() ? "" : ", ") + s.name;
      Fail("unknown option '", name, "' (options: ", known, ")");
    }
    if (spec->takes_value && !inline_value) {
      if (i + 1 >= argv.size()) Fail("option ", spec->name, " needs a value");
      value = argv[++i];
    }
    if (!spec->takes_value && inline_value) Fail("option ", spec->name, " takes no value");
    values_[spec->name].push_back(spec->takes_value ? value : "1");
  }
}

std::string CliArgs::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> CliArgs::GetAll(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

int CliArgs::GetInt(const std::string& name, int fallback) const {
  if (!Has(name)) return fallback;
  std::string text = Get(name);
  try {
    size_t used = 0;
    int value = std::stoi(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  Fail("option ", name, " needs a whole number, got '", text, "'");
}

std::string Usage(const std::string& command, const std::string& synopsis, const std::vector<OptionSpec>& specs) {
  std::string text = "usage: kiln " + command + " " + synopsis + "\n";
  for (const OptionSpec& s : specs) {
    std::string flag = s.name + (s.alias.empty() ? "" : ", " + s.alias) + (s.takes_value ? " VALUE" : "");
    text += "  " + flag + std::string(flag.size() < 28 ? 28 - flag.size() : 1, ' ') + s.help + "\n";
  }
  return text;
}

}  // namespace kiln::tools
