// `_lookup_linked_param`, TVM's packed function of a library built with link-params: given a
// storage id, the address of the parameter stored for it in the library, or null when it has none
// (the executor then allocates that storage). TVM v0.19's graph executor and kiln's call it.
#include "kernels/linked_params.h"

#include "kernels/backend_api.h"

extern "C" {
// Defined by the export's assembly; weak and hidden, so a library linked without parameters sees
// null and no other library's image can stand in for it.
extern __attribute__((weak, visibility("hidden"))) const unsigned char __kiln_linked_params[];

TVM_DLL int32_t _lookup_linked_param(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                                     int* out_ret_tcode, void* /*resource_handle*/) {
  if (num_args != 1 || type_codes[0] != kTVMArgInt) {
    return kiln::kernels::Fail("_lookup_linked_param: expected one argument, an integer storage id");
  }
  int64_t storage_id = args[0].v_int64;
  out_ret_value->v_handle = nullptr;
  *out_ret_tcode = kTVMNullptr;
  const unsigned char* image = __kiln_linked_params;
  if (image == nullptr) return 0;
  uint64_t count = *reinterpret_cast<const uint64_t*>(image);
  const auto* entries = reinterpret_cast<const kiln::kernels::LinkedParam*>(image + sizeof(uint64_t));
  uint64_t low = 0, high = count;  // binary search over the sorted storage ids
  while (low < high) {
    uint64_t middle = low + (high - low) / 2;
    if (entries[middle].storage_id < storage_id) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  if (low < count && entries[low].storage_id == storage_id) {
    out_ret_value->v_handle = const_cast<unsigned char*>(image + entries[low].offset);
    *out_ret_tcode = kTVMOpaqueHandle;
  }
  return 0;
}
}
