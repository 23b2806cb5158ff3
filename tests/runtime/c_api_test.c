/*
 * A C program that uses only TVM's C runtime API, as a deployment written for TVM does: load an
 * exported model library, create the executor from its factory, set the input, run, read the
 * outputs, and check them against the model's reference computed here with plain loops.
 * Usage: c_api_test path/to/model.so
 */
#include <stdio.h>
#include <string.h>

#include "kiln/c_runtime_api.h"

static int passed = 0, failed = 0;

static void check(int condition, const char* what) {
  if (condition) {
    ++passed;
  } else {
    ++failed;
    fprintf(stderr, "FAILED: %s (last error: %s)\n", what, TVMGetLastError());
  }
}

/* The test model (tests/runtime/test_model.h): t = relu(x + w), w[i] = (i % 7) * 0.25 - 0.5;
 * out0[i] = (6 t[7 - i])^2, out1[i] = t[i] + 1. */
static void reference(const float* x, float* out0, float* out1) {
  float t[8];
  for (int i = 0; i < 8; ++i) {
    float v = x[i] + (float)(i % 7) * 0.25f - 0.5f;
    t[i] = v > 0 ? v : 0;
  }
  for (int i = 0; i < 8; ++i) {
    out0[i] = (6 * t[7 - i]) * (6 * t[7 - i]);
    out1[i] = t[i] + 1;
  }
}

static TVMFunctionHandle get(TVMModuleHandle mod, const char* name) {
  TVMFunctionHandle f = NULL;
  check(TVMModGetFunction(mod, name, 0, &f) == 0 && f != NULL, name);
  return f;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s model.so\n", argv[0]);
    return 2;
  }
  TVMModuleHandle lib = NULL;
  if (TVMModLoadFromFile(argv[1], "so", &lib) != 0) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], TVMGetLastError());
    return 1;
  }

  /* gmod = lib["default"](cpu) */
  TVMValue arg, ret;
  int code, ret_code;
  arg.v_device.device_type = kDLCPU;
  arg.v_device.device_id = 0;
  code = kDLDevice;
  TVMFunctionHandle create = get(lib, "default");
  check(TVMFuncCall(create, &arg, &code, 1, &ret, &ret_code) == 0 && ret_code == kTVMModuleHandle,
        "default(cpu) returns a module");
  TVMModuleHandle gmod = ret.v_handle;
  TVMFunctionHandle set_input = get(gmod, "set_input"), run = get(gmod, "run");
  TVMFunctionHandle get_output = get(gmod, "get_output"), num_outputs = get(gmod, "get_num_outputs");

  check(TVMFuncCall(num_outputs, NULL, NULL, 0, &ret, &ret_code) == 0 && ret_code == kTVMArgInt &&
            ret.v_int64 == 2,
        "get_num_outputs() == 2");

  int64_t in_shape[2] = {1, 8}, out_shape[2] = {2, 4};
  TVMArrayHandle x = NULL, out1 = NULL;
  check(TVMArrayAlloc(in_shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &x) == 0, "TVMArrayAlloc x");
  check(TVMArrayAlloc(out_shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &out1) == 0, "TVMArrayAlloc out1");

  for (int round = 0; round < 3; ++round) {
    float input[8], want0[8], want1[8], got1[8];
    for (int i = 0; i < 8; ++i) input[i] = (float)(round + 1) * (float)(i - 3) * 0.5f + 0.125f;
    reference(input, want0, want1);
    check(TVMArrayCopyFromBytes(x, input, sizeof(input)) == 0, "copy input");

    TVMValue args[2];
    int codes[2] = {kTVMStr, kTVMDLTensorHandle};
    args[0].v_str = "x";
    args[1].v_handle = x;
    check(TVMFuncCall(set_input, args, codes, 2, &ret, &ret_code) == 0, "set_input(\"x\", x)");
    check(TVMFuncCall(run, NULL, NULL, 0, &ret, &ret_code) == 0, "run()");

    /* get_output(0) returns an NDArray handle the caller frees. */
    args[0].v_int64 = 0;
    codes[0] = kTVMArgInt;
    check(TVMFuncCall(get_output, args, codes, 1, &ret, &ret_code) == 0 && ret_code == kTVMNDArrayHandle,
          "get_output(0) returns an array");
    DLTensor* out0 = (DLTensor*)ret.v_handle;
    check(out0->ndim == 2 && out0->shape[0] == 2 && out0->shape[1] == 4, "output 0 shape [2, 4]");
    int same = 1;
    for (int i = 0; i < 8; ++i) same &= ((float*)out0->data)[i] == want0[i];
    check(same, "output 0 matches the reference");
    check(TVMArrayFree(out0) == 0, "free output 0");

    /* get_output(1, out1) copies into the caller's array. */
    args[0].v_int64 = 1;
    args[1].v_handle = out1;
    codes[1] = kTVMDLTensorHandle;
    check(TVMFuncCall(get_output, args, codes, 2, &ret, &ret_code) == 0, "get_output(1, out1)");
    check(TVMArrayCopyToBytes(out1, got1, sizeof(got1)) == 0, "copy output 1");
    check(memcmp(got1, want1, sizeof(got1)) == 0, "output 1 matches the reference");
  }

  /* Errors are -1 with a message, and leave everything usable. */
  TVMValue args[2];
  int codes[2] = {kTVMStr, kTVMDLTensorHandle};
  args[0].v_str = "nope";
  args[1].v_handle = x;
  check(TVMFuncCall(set_input, args, codes, 2, &ret, &ret_code) == -1, "set_input of an unknown name fails");
  check(strstr(TVMGetLastError(), "no input named 'nope'") != NULL, "the message names the input");
  check(TVMFuncCall(run, NULL, NULL, 0, &ret, &ret_code) == 0, "run() still works");
  TVMModuleHandle missing = NULL;
  check(TVMModLoadFromFile("/nonexistent.so", "so", &missing) == -1 &&
            strstr(TVMGetLastError(), "/nonexistent.so") != NULL,
        "loading a missing file fails with its name");

  TVMArrayFree(x);
  TVMArrayFree(out1);
  TVMFuncFree(set_input);
  TVMFuncFree(run);
  TVMFuncFree(get_output);
  TVMFuncFree(num_outputs);
  TVMFuncFree(create);
  TVMModFree(gmod);
  TVMModFree(lib);
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
