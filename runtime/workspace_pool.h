// Workspace memory for compiled operators (TVMBackendAllocWorkspace): a pool per thread, blocks
// rounded up to 4 KiB pages and 64-byte aligned, freed blocks kept and reused best-fit. After the
// first run of a model, running it again allocates nothing from the system.
#pragma once

#include <cstddef>

namespace kiln::runtime {

// Throws Error when memory cannot be had.
void* AllocWorkspace(size_t nbytes);
// Throws Error when `pointer` was not allocated (or was already freed) by this thread's pool.
void FreeWorkspace(void* pointer);
// Bytes the calling thread's pool holds from the system (for tests and reports).
size_t WorkspacePoolBytes();

}  // namespace kiln::runtime
