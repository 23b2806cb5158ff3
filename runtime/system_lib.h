// The system library (operators linked statically and registered by name); see system_lib.cc.
#pragma once

#include <string>

#include "runtime/module.h"

namespace kiln::runtime {

// Behind TVMBackendRegisterSystemLibSymbol. Throws Error when a name is registered twice with
// different addresses.
void RegisterSystemLibSymbol(const char* name, void* pointer);
// The module over the registered symbols starting with `prefix` (one module per prefix, created
// on first use).
Module GetSystemLib(const std::string& prefix = "");

}  // namespace kiln::runtime
