// kiln's version; KILN_VERSION is defined for this file alone by CMakeLists.txt.
#include "runtime/version.h"

namespace kiln::runtime {

const char* Version() { return KILN_VERSION; }

}  // namespace kiln::runtime
