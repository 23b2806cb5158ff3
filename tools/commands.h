// The subcommands of the `kiln` command line; each takes its arguments (after the subcommand
// name) and returns the exit code. Errors are thrown as runtime::Error and reported by main.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace kiln::tools {

int CompileCommand(const std::vector<std::string>& args);
int RunCommand(const std::vector<std::string>& args);
int InspectCommand(const std::vector<std::string>& args);

// Reports a step on stderr when it took more than a second (progress for slow steps).
class ProgressStep {
 public:
  explicit ProgressStep(std::string what);
  ~ProgressStep();
  double Seconds() const;

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln::tools
