// The table of external codegens. An entry whose functions are null is a codegen this build was
// configured without (oneDNN's behind KILN_USE_DNNL); ccompiler needs nothing and is always there.
#include "backend/external_codegen.h"

#include "backend/contrib/ccompiler/ccompiler.h"
#include "backend/contrib/dnnl/dnnl_codegen.h"

#include "runtime/error.h"

namespace kiln::backend {

const std::vector<ExternalCodegen>& ExternalCodegens() {
  static const std::vector<ExternalCodegen> table = {
#ifdef KILN_USE_DNNL
      {"dnnl", DnnlSupports, DnnlGenerate, DnnlPatterns, DnnlDenseOn2D},
#else
      {"dnnl", nullptr, nullptr, nullptr, nullptr},
#endif
      {"ccompiler", CCompilerSupports, CCompilerGenerate, nullptr, nullptr},
  };
  return table;
}

const ExternalCodegen& FindExternalCodegen(const std::string& name, const std::vector<ExternalCodegen>& table) {
  std::string known;
  for (const ExternalCodegen& codegen : table) {
    if (codegen.name == name) {
      runtime::Check(codegen.enabled(), "the external codegen '", name, "' is not enabled in this build");
      return codegen;
    }
    known += (known.empty() ? "" : ", ") + codegen.name;
  }
  runtime::Fail("there is no external codegen '", name, "' (known: ", known.empty() ? "none" : known, ")");
}

}  // namespace kiln::backend
