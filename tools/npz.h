// NumPy's .npy and .npz files for the command line's inputs and outputs: arrays by name, as
// numpy.savez writes them (a zip of .npy files, stored without compression; compressed files
// give a clear error). Little-endian, C order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/ndarray.h"

namespace kiln::tools {

using NamedArrayList = std::vector<std::pair<std::string, runtime::NDArray>>;

// Throws Error naming the file and what is wrong with it.
NamedArrayList ReadNpz(const std::string& path);
// The arrays of .npz bytes; `what` names them in errors (ReadNpz passes the path).
NamedArrayList ParseNpz(const std::string& bytes, const std::string& what);
void WriteNpz(const std::string& path, const NamedArrayList& arrays);

// One .npy payload.
runtime::NDArray ParseNpy(const std::string& bytes, const std::string& what);
std::string FormatNpy(const runtime::NDArray& array);

}  // namespace kiln::tools
