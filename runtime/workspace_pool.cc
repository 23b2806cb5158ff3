// The per-thread workspace pool.
#include "runtime/workspace_pool.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace kiln::runtime {
namespace {

constexpr size_t kPageBytes = 4096;

class WorkspacePool {
 public:
  ~WorkspacePool() {
    for (const Block& b : free_) std::free(b.pointer);
    for (const Block& b : in_use_) std::free(b.pointer);
  }

  void* Alloc(size_t nbytes) {
    size_t size = (std::max<size_t>(nbytes, 1) + kPageBytes - 1) / kPageBytes * kPageBytes;
    Check(size >= nbytes, "workspace request of ", nbytes, " bytes is too large");
    // Best fit: the smallest free block that is large enough (free_ is sorted by size).
    auto it = std::lower_bound(free_.begin(), free_.end(), size,
                               [](const Block& b, size_t s) { return b.size < s; });
    Block block;
    if (it != free_.end()) {
      block = *it;
      free_.erase(it);
    } else {
      block.pointer = std::aligned_alloc(kAllocAlignment, size);
      Check(block.pointer != nullptr, "cannot allocate a workspace of ", nbytes,
            " bytes (out of memory)");
      block.size = size;
      total_bytes_ += size;
    }
    in_use_.push_back(block);
    return block.pointer;
  }

  void Free(void* pointer) {
    // Frees are usually in reverse order of allocation, so search from the back.
    auto it = std::find_if(in_use_.rbegin(), in_use_.rend(),
                           [pointer](const Block& b) { return b.pointer == pointer; });
    Check(it != in_use_.rend(), "TVMBackendFreeWorkspace: ", pointer,
          " is not a workspace of this thread (freed twice, or allocated by another thread?)");
    Block block = *it;
    in_use_.erase(std::next(it).base());
    auto position = std::lower_bound(free_.begin(), free_.end(), block.size,
                                     [](const Block& b, size_t s) { return b.size < s; });
    free_.insert(position, block);
  }

  size_t total_bytes() const { return total_bytes_; }

 private:
  struct Block {
    void* pointer = nullptr;
    size_t size = 0;
  };
  std::vector<Block> free_;    // sorted by size
  std::vector<Block> in_use_;  // in allocation order
  size_t total_bytes_ = 0;
};

WorkspacePool& ThisThreadsPool() {
  thread_local WorkspacePool pool;
  return pool;
}

}  // namespace

void* AllocWorkspace(size_t nbytes) { return ThisThreadsPool().Alloc(nbytes); }
void FreeWorkspace(void* pointer) { ThisThreadsPool().Free(pointer); }
size_t WorkspacePoolBytes() { return ThisThreadsPool().total_bytes(); }

}  // namespace kiln::runtime
