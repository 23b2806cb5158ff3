// kiln's version, set in one place (project() in CMakeLists.txt) and compiled into the runtime,
// where the command line, the Python package and programs using the C++ API read it.
#pragma once

namespace kiln::runtime {

const char* Version();

}  // namespace kiln::runtime
