// Which kernel sources a model library's code needs (kernel_sources.h).
#include "backend/kernel_sources.h"

#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "runtime/error.h"
#include "runtime/params.h"

namespace kiln::backend {
namespace {

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// The positions just past each occurrence of `name` in `text` as a whole identifier.
std::vector<size_t> NameEnds(const std::string& text, const std::string& name) {
  std::vector<size_t> ends;
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    size_t end = at + name.size();
    if ((at == 0 || !IsIdentifierChar(text[at - 1])) && (end == text.size() || !IsIdentifierChar(text[end]))) {
      ends.push_back(end);
    }
  }
  return ends;
}

size_t SkipSpaces(const std::string& text, size_t at) {
  while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at])) != 0) ++at;
  return at;
}

// Whether `text` calls the function `name`.
bool Calls(const std::string& text, const std::string& name) {
  for (size_t end : NameEnds(text, name)) {
    size_t next = SkipSpaces(text, end);
    if (next < text.size() && text[next] == '(') return true;
  }
  return false;
}

// The instances of the template `name` that `text` names with integer arguments, as their
// arguments without spaces ("16,0,16,1,16").
std::set<std::string> Instances(const std::string& text, const std::string& name) {
  std::set<std::string> instances;
  for (size_t end : NameEnds(text, name)) {
    size_t open = SkipSpaces(text, end);
    if (open >= text.size() || text[open] != '<') continue;
    size_t close = text.find('>', open);
    if (close == std::string::npos) continue;
    std::string arguments;
    bool integers = close > open + 1;
    for (size_t i = open + 1; i < close && integers; ++i) {
      char c = text[i];
      if (std::isspace(static_cast<unsigned char>(c)) != 0) continue;
      integers = std::isdigit(static_cast<unsigned char>(c)) != 0 || c == ',' || c == '-';
      arguments += c;
    }
    if (integers) instances.insert(arguments);
  }
  return instances;
}

}  // namespace

KernelList ReadKernelList(const std::string& root) {
  std::string path = root + "/kernels/sources.txt";
  KernelList list;
  list.headers = {"include/kiln/c_backend_api.h", "include/kiln/c_runtime_api.h", "include/kiln/tvm_objects.h"};
  std::istringstream lines(runtime::ReadFile(path));
  for (std::string line; std::getline(lines, line);) {
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line[0] == '#') continue;
    size_t colon = line.find(':');
    std::string file = line.substr(0, colon);
    bool source = file.size() > 3 && file.compare(file.size() - 3, 3, ".cc") == 0;
    runtime::Check(source || colon == std::string::npos, path, ": only a source (.cc) lists kernels: ", line);
    if (!source) {
      list.headers.push_back(file);
      continue;
    }
    KernelList::Source entry{file, {}, {}};
    std::istringstream names(colon == std::string::npos ? "" : line.substr(colon + 1));
    for (std::string name; names >> name;) {
      bool is_template = name.size() > 2 && name.compare(name.size() - 2, 2, "<>") == 0;
      (is_template ? entry.templates : entry.kernels).push_back(is_template ? name.substr(0, name.size() - 2) : name);
    }
    list.sources.push_back(entry);
  }
  runtime::Check(!list.sources.empty(), path, " lists no kernel sources");
  return list;
}

std::vector<SourceFile> KernelSourcesFor(const std::vector<SourceFile>& code, const KernelList& list,
                                         const std::string& root) {
  std::vector<SourceFile> needed;
  std::map<size_t, std::string> texts;
  auto text_of = [&](size_t i) -> const std::string& {
    auto it = texts.find(i);
    if (it == texts.end()) it = texts.emplace(i, runtime::ReadFile(root + "/" + list.sources[i].path)).first;
    return it->second;
  };
  std::set<size_t> chosen, scanned;
  std::set<std::pair<size_t, std::string>> instances;
  std::function<void(const std::string&, size_t)> scan;
  auto choose = [&](size_t i) {
    if (!chosen.insert(i).second) return;
    needed.push_back({list.sources[i].path, text_of(i), {}});
    if (scanned.insert(i).second) scan(text_of(i), i);
  };
  // What `text` (kernel source `self`, or generated code when self is past the list) calls.
  scan = [&](const std::string& text, size_t self) {
    for (size_t j = 0; j < list.sources.size(); ++j) {
      if (j == self) continue;
      const KernelList::Source& source = list.sources[j];
      for (const std::string& kernel : source.kernels) {
        if (Calls(text, kernel)) choose(j);
      }
      for (const std::string& name : source.templates) {
        for (const std::string& arguments : Instances(text, name)) {
          const std::string instance = name + "<" + arguments + ">";
          if (!instances.insert({j, instance}).second) continue;
          needed.push_back({source.path + " " + instance, text_of(j),
                            {"KILN_INSTANTIATE=" + arguments, "KILN_INSTANTIATE_" + name}});
          if (scanned.insert(j).second) scan(text_of(j), j);
        }
      }
    }
  };
  for (size_t i = 0; i < list.sources.size(); ++i) {
    if (list.sources[i].kernels.empty() && list.sources[i].templates.empty()) choose(i);
  }
  for (const SourceFile& file : code) scan(file.text, list.sources.size());
  return needed;
}

}  // namespace kiln::backend
