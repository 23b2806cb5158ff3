// Command-line arguments: positionals and --options with values, checked against what a command
// accepts (an unknown option is an error that lists the known ones).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln::tools {

struct OptionSpec {
  std::string name;     // "--inputs"; a short alias may follow in `alias` ("-i")
  std::string alias;
  bool takes_value;
  std::string help;
};

class CliArgs {
 public:
  // Throws Error for unknown options, missing values, and repeated options that take one value.
  CliArgs(const std::vector<std::string>& argv, const std::vector<OptionSpec>& specs);

  const std::vector<std::string>& positionals() const { return positionals_; }
  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> GetAll(const std::string& name) const;
  int GetInt(const std::string& name, int fallback) const;

 private:
  std::vector<std::string> positionals_;
  std::map<std::string, std::vector<std::string>> values_;
};

std::string Usage(const std::string& command, const std::string& synopsis, const std::vector<OptionSpec>& specs);

}  // namespace kiln::tools
