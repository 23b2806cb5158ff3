/* Load an exported model library and run it from C, with TVM's C runtime API only. */
#include <stdio.h>

#include "kiln/c_runtime_api.h"

#define CHECK(call) \
  if ((call) != 0) return fprintf(stderr, "error: %s\n", TVMGetLastError()), 1

int main(int argc, char** argv) {
  if (argc != 2) return fprintf(stderr, "usage: %s model.so\n", argv[0]), 2;
  TVMModuleHandle lib, gmod;
  TVMFunctionHandle create, set_input, run, get_output;
  TVMValue args[2], ret;
  int codes[2], ret_code;

  CHECK(TVMModLoadFromFile(argv[1], "so", &lib));
  CHECK(TVMModGetFunction(lib, "default", 0, &create));       /* gmod = lib["default"](cpu) */
  args[0].v_device.device_type = kDLCPU;
  args[0].v_device.device_id = 0;
  codes[0] = kDLDevice;
  CHECK(TVMFuncCall(create, args, codes, 1, &ret, &ret_code));
  gmod = ret.v_handle;
  CHECK(TVMModGetFunction(gmod, "set_input", 0, &set_input));
  CHECK(TVMModGetFunction(gmod, "run", 0, &run));
  CHECK(TVMModGetFunction(gmod, "get_output", 0, &get_output));

  int64_t shape[2] = {1, 8};                                   /* the test model's input "x" */
  float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  TVMArrayHandle x;
  CHECK(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &x));
  CHECK(TVMArrayCopyFromBytes(x, data, sizeof(data)));
  args[0].v_str = "x";
  codes[0] = kTVMStr;
  args[1].v_handle = x;
  codes[1] = kTVMDLTensorHandle;
  CHECK(TVMFuncCall(set_input, args, codes, 2, &ret, &ret_code));
  CHECK(TVMFuncCall(run, NULL, NULL, 0, &ret, &ret_code));

  args[0].v_int64 = 0;
  codes[0] = kTVMArgInt;
  CHECK(TVMFuncCall(get_output, args, codes, 1, &ret, &ret_code));  /* an NDArray handle */
  DLTensor* y = (DLTensor*)ret.v_handle;
  printf("output 0: %d dimensions, first value %g\n", y->ndim, ((float*)y->data)[0]);

  TVMArrayFree(y);
  TVMArrayFree(x);
  TVMFuncFree(get_output);
  TVMFuncFree(run);
  TVMFuncFree(set_input);
  TVMFuncFree(create);
  TVMModFree(gmod);
  TVMModFree(lib);
  return 0;
}
