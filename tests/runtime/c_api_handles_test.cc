// Tests of the C runtime API's handles: arrays (alloc, copies, free), functions made from C
// callbacks (arguments of every kind, returns, ownership, finalizer), the global function table,
// modules loaded from files, and how every null or wrong handle is reported.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/c_runtime_api.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "test_util.h"

namespace {

using ::testing::HasSubstr;

// A unique global name per call, so tests also pass when repeated in one process.
std::string UniqueName(const std::string& base) {
  static int counter = 0;
  return "kiln_test.capi." + base + "." + std::to_string(++counter);
}

DLTensor* AllocFloats(std::vector<int64_t> shape) {
  DLTensor* array = nullptr;
  EXPECT_EQ(TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), kDLFloat, 32, 1, kDLCPU, 0,
                          &array),
            0)
      << TVMGetLastError();
  return array;
}

std::vector<float> ReadFloats(DLTensor* array, size_t count) {
  std::vector<float> values(count);
  EXPECT_EQ(TVMArrayCopyToBytes(array, values.data(), count * sizeof(float)), 0) << TVMGetLastError();
  return values;
}

void WriteFloats(DLTensor* array, std::vector<float> values) {
  EXPECT_EQ(TVMArrayCopyFromBytes(array, values.data(), values.size() * sizeof(float)), 0)
      << TVMGetLastError();
}

// Every test of the suite may load the operator library; it is freed after the test, and the
// thread count is reset.
class CApi : public ::testing::Test {
 protected:
  void TearDown() override {
    if (module_ != nullptr) {
      EXPECT_EQ(TVMModFree(module_), 0);
    }
    kiln::runtime::SetNumThreads(0);
  }
  TVMModuleHandle LoadTestOps() {
    std::string path = kiln::test::LibPath("kiln_test_ops");
    EXPECT_EQ(TVMModLoadFromFile(path.c_str(), "", &module_), 0) << TVMGetLastError();
    return module_;
  }
  TVMModuleHandle module_ = nullptr;
};

// ---- arrays --------------------------------------------------------------------------------

TEST_F(CApi, ArrayAllocFillsTheFieldsAndAlignsTheData) {
  int64_t shape[] = {2, 3, 5};
  DLTensor* array = nullptr;
  ASSERT_EQ(TVMArrayAlloc(shape, 3, kDLInt, 16, 1, kDLCPU, 0, &array), 0) << TVMGetLastError();
  ASSERT_NE(array, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(array->data) % 64, 0u);
  EXPECT_EQ(array->ndim, 3);
  ASSERT_NE(array->shape, shape);  // the array keeps its own copy of the shape
  EXPECT_EQ(std::vector<int64_t>(array->shape, array->shape + 3), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(array->dtype.code, kDLInt);
  EXPECT_EQ(array->dtype.bits, 16);
  EXPECT_EQ(array->dtype.lanes, 1);
  EXPECT_EQ(array->device.device_type, kDLCPU);
  EXPECT_EQ(array->device.device_id, 0);
  EXPECT_EQ(array->strides, nullptr);
  EXPECT_EQ(array->byte_offset, 0u);
  std::memset(array->data, 0x5a, 2 * 3 * 5 * 2);  // the whole size is usable (checked by ASan)
  EXPECT_EQ(TVMArrayFree(array), 0);
}

TEST_F(CApi, ArrayAllocOfAScalarAndOfVectorLanes) {
  DLTensor* scalar = nullptr;
  ASSERT_EQ(TVMArrayAlloc(nullptr, 0, kDLFloat, 64, 1, kDLCPU, 0, &scalar), 0) << TVMGetLastError();
  EXPECT_EQ(scalar->ndim, 0);
  double value = 2.5, back = 0;
  EXPECT_EQ(TVMArrayCopyFromBytes(scalar, &value, sizeof(value)), 0);
  EXPECT_EQ(TVMArrayCopyToBytes(scalar, &back, sizeof(back)), 0);
  EXPECT_EQ(back, 2.5);
  EXPECT_EQ(TVMArrayFree(scalar), 0);

  int64_t shape[] = {3};
  DLTensor* vectors = nullptr;
  ASSERT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 4, kDLCPU, 0, &vectors), 0);
  EXPECT_EQ(vectors->dtype.lanes, 4);
  std::vector<float> data(12, 1.0f);
  EXPECT_EQ(TVMArrayCopyFromBytes(vectors, data.data(), 12 * sizeof(float)), 0) << TVMGetLastError();
  EXPECT_EQ(TVMArrayFree(vectors), 0);
}

TEST_F(CApi, ArrayAllocRejectsBadRequests) {
  int64_t shape[] = {4};
  DLTensor* array = nullptr;
  TVMAPISetLastError("");
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCUDA, 0, &array), -1);
  EXPECT_STRNE(TVMGetLastError(), "");
  EXPECT_EQ(TVMArrayAlloc(shape, -1, kDLFloat, 32, 1, kDLCPU, 0, &array), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("negative ndim"));
  EXPECT_EQ(TVMArrayAlloc(nullptr, 2, kDLFloat, 32, 1, kDLCPU, 0, &array), -1);
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 0, 1, kDLCPU, 0, &array), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("out of range"));
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 0, kDLCPU, 0, &array), -1);
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, nullptr), -1);
  int64_t negative[] = {-3};
  EXPECT_EQ(TVMArrayAlloc(negative, 1, kDLFloat, 32, 1, kDLCPU, 0, &array), -1);
  EXPECT_STRNE(TVMGetLastError(), "");
}

TEST_F(CApi, CopyFromBytesAndToBytesRoundTrip) {
  DLTensor* array = AllocFloats({2, 3});
  std::vector<float> values = {1.5f, -2, 3, 4.25f, 0, 6};
  WriteFloats(array, values);
  EXPECT_EQ(static_cast<float*>(array->data)[3], 4.25f);
  EXPECT_EQ(ReadFloats(array, 6), values);
  EXPECT_EQ(TVMArrayFree(array), 0);
}

TEST_F(CApi, CopyBytesWithTheWrongSizeIsAnError) {
  DLTensor* array = AllocFloats({2, 3});
  WriteFloats(array, {1, 2, 3, 4, 5, 6});
  std::vector<float> buffer(7, 9.0f);
  TVMAPISetLastError("");
  EXPECT_EQ(TVMArrayCopyFromBytes(array, buffer.data(), 5 * sizeof(float)), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("holds 24 bytes, got 20"));
  EXPECT_EQ(TVMArrayCopyFromBytes(array, buffer.data(), 7 * sizeof(float)), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("holds 24 bytes, got 28"));
  EXPECT_EQ(TVMArrayCopyToBytes(array, buffer.data(), 5 * sizeof(float)), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("holds 24 bytes, got room for 20"));
  // Nothing was copied either way.
  EXPECT_EQ(ReadFloats(array, 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(buffer, std::vector<float>(7, 9.0f));
  EXPECT_EQ(TVMArrayFree(array), 0);
}

TEST_F(CApi, CopyFromToCopiesBetweenArrays) {
  DLTensor* from = AllocFloats({4});
  DLTensor* to = AllocFloats({4});
  WriteFloats(from, {1, 2, 3, 4});
  WriteFloats(to, {0, 0, 0, 0});
  ASSERT_EQ(TVMArrayCopyFromTo(from, to, nullptr), 0) << TVMGetLastError();
  EXPECT_EQ(ReadFloats(to, 4), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_NE(from->data, to->data);
  EXPECT_EQ(TVMArrayFree(from), 0);
  EXPECT_EQ(TVMArrayFree(to), 0);
}

TEST_F(CApi, CopyFromToWithAMismatchIsAnError) {
  DLTensor* from = AllocFloats({4});
  DLTensor* longer = AllocFloats({5});
  DLTensor* reshaped = AllocFloats({2, 2});
  int64_t shape[] = {4};
  DLTensor* ints = nullptr;
  ASSERT_EQ(TVMArrayAlloc(shape, 1, kDLInt, 32, 1, kDLCPU, 0, &ints), 0);
  WriteFloats(longer, {7, 7, 7, 7, 7});
  TVMAPISetLastError("");
  EXPECT_EQ(TVMArrayCopyFromTo(from, longer, nullptr), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("TVMArrayCopyFromTo"));
  EXPECT_THAT(TVMGetLastError(), HasSubstr("[5]"));
  EXPECT_EQ(ReadFloats(longer, 5), std::vector<float>(5, 7.0f));
  EXPECT_EQ(TVMArrayCopyFromTo(from, reshaped, nullptr), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("[2, 2]"));
  EXPECT_EQ(TVMArrayCopyFromTo(from, ints, nullptr), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("int32"));
  for (DLTensor* a : {from, longer, reshaped, ints}) EXPECT_EQ(TVMArrayFree(a), 0);
}

// ---- functions from C callbacks ------------------------------------------------------------

// What RecordArguments saw, one text per argument.
struct Recorded {
  std::vector<int> codes;
  std::vector<std::string> texts;
};

int RecordArguments(TVMValue* args, int* codes, int num_args, TVMRetValueHandle, void* resource) {
  auto* recorded = static_cast<Recorded*>(resource);
  for (int i = 0; i < num_args; ++i) {
    recorded->codes.push_back(codes[i]);
    std::string text;
    switch (codes[i]) {
      case kTVMArgInt: text = std::to_string(args[i].v_int64); break;
      case kTVMArgFloat: text = std::to_string(args[i].v_float64); break;
      case kTVMStr: text = args[i].v_str; break;
      case kTVMBytes: {
        auto* bytes = static_cast<TVMByteArray*>(args[i].v_handle);
        text = std::string(bytes->data, bytes->size);
        break;
      }
      case kTVMDLTensorHandle:
      case kTVMNDArrayHandle: {
        auto* tensor = static_cast<DLTensor*>(args[i].v_handle);
        text = "ndim " + std::to_string(tensor->ndim) + " first " +
               std::to_string(static_cast<float*>(tensor->data)[0]);
        break;
      }
      default: text = "?";
    }
    recorded->texts.push_back(text);
  }
  return 0;
}

TEST_F(CApi, CFunctionReceivesArgumentsOfEveryKind) {
  Recorded recorded;
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(RecordArguments, &recorded, nullptr, &f), 0) << TVMGetLastError();
  DLTensor* ndarray = AllocFloats({3});
  WriteFloats(ndarray, {8.5f, 0, 0});
  float raw_data[2] = {-1.5f, 2};
  int64_t raw_shape[] = {2};
  DLTensor raw{raw_data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, raw_shape, nullptr, 0};
  const char bytes_data[] = {'a', '\0', 'b'};
  TVMByteArray bytes{bytes_data, 3};

  TVMValue args[6];
  int codes[6] = {kTVMArgInt, kTVMArgFloat, kTVMStr, kTVMBytes, kTVMDLTensorHandle, kTVMNDArrayHandle};
  args[0].v_int64 = -42;
  args[1].v_float64 = 0.75;
  args[2].v_str = "hello";
  args[3].v_handle = &bytes;
  args[4].v_handle = &raw;
  args[5].v_handle = ndarray;
  TVMValue ret{};
  int ret_code = -1;
  ASSERT_EQ(TVMFuncCall(f, args, codes, 6, &ret, &ret_code), 0) << TVMGetLastError();
  EXPECT_EQ(ret_code, kTVMNullptr);
  EXPECT_EQ(recorded.codes, std::vector<int>(codes, codes + 6));
  EXPECT_EQ(recorded.texts, (std::vector<std::string>{"-42", "0.750000", "hello", std::string("a\0b", 3),
                                                       "ndim 1 first -1.500000",
                                                       "ndim 1 first 8.500000"}));
  EXPECT_EQ(TVMFuncFree(f), 0);
  // The function borrowed the array: the caller's handle is still the only reference.
  kiln::runtime::NDArray view = kiln::runtime::NDArray::FromHandle(ndarray);
  EXPECT_EQ(view.UseCount(), 2);
  EXPECT_EQ(TVMArrayFree(ndarray), 0);
  EXPECT_EQ(view.UseCount(), 1);
}

// Returns a value chosen by args[0]: 0 int, 1 float, 2 string, 3 a new array, 4 bytes.
int ReturnByKind(TVMValue* args, int*, int, TVMRetValueHandle ret, void*) {
  TVMValue value{};
  int code = kTVMNullptr;
  std::string text = "made by the C function";
  TVMByteArray bytes{"x\0y", 3};
  switch (args[0].v_int64) {
    case 0: value.v_int64 = 1234567890123; code = kTVMArgInt; break;
    case 1: value.v_float64 = -0.125; code = kTVMArgFloat; break;
    case 2: value.v_str = text.c_str(); code = kTVMStr; break;
    case 3: {
      int64_t shape[] = {3};
      DLTensor* array = nullptr;
      if (TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &array) != 0) return -1;
      float data[] = {1, 2, 3};
      TVMArrayCopyFromBytes(array, data, sizeof(data));
      value.v_handle = array;  // the reference moves into the return value
      code = kTVMNDArrayHandle;
      break;
    }
    case 4: value.v_handle = &bytes; code = kTVMBytes; break;
  }
  return TVMCFuncSetReturn(ret, &value, &code, 1);
}

// Calls ReturnByKind for `kind` and checks the type code of what came back.
TVMValue CallReturnByKind(int kind, int expected_code) {
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMFuncCreateFromCFunc(ReturnByKind, nullptr, nullptr, &f), 0);
  TVMValue arg;
  arg.v_int64 = kind;
  int arg_code = kTVMArgInt;
  TVMValue ret{};
  int ret_code = -1;
  EXPECT_EQ(TVMFuncCall(f, &arg, &arg_code, 1, &ret, &ret_code), 0) << TVMGetLastError();
  EXPECT_EQ(ret_code, expected_code);
  EXPECT_EQ(TVMFuncFree(f), 0);
  return ret;
}

TEST_F(CApi, CFunctionReturnsAnInt) { EXPECT_EQ(CallReturnByKind(0, kTVMArgInt).v_int64, 1234567890123); }

TEST_F(CApi, CFunctionReturnsAFloat) { EXPECT_EQ(CallReturnByKind(1, kTVMArgFloat).v_float64, -0.125); }

TEST_F(CApi, CFunctionReturnsACopyOfAString) {
  // The C function's own string is gone when it returns; the caller gets a copy.
  EXPECT_STREQ(CallReturnByKind(2, kTVMStr).v_str, "made by the C function");
}

TEST_F(CApi, CFunctionReturnsBytes) {
  auto* bytes = static_cast<TVMByteArray*>(CallReturnByKind(4, kTVMBytes).v_handle);
  ASSERT_NE(bytes, nullptr);
  EXPECT_EQ(std::string(bytes->data, bytes->size), std::string("x\0y", 3));
}

TEST_F(CApi, CFunctionReturnsAnNDArrayWhoseOwnershipMovesToTheCaller) {
  auto* array = static_cast<DLTensor*>(CallReturnByKind(3, kTVMNDArrayHandle).v_handle);
  ASSERT_NE(array, nullptr);
  EXPECT_EQ(ReadFloats(array, 3), (std::vector<float>{1, 2, 3}));
  // The caller holds exactly one reference: the one TVMArrayFree drops (a leak shows under ASan).
  kiln::runtime::NDArray view = kiln::runtime::NDArray::FromHandle(array);
  EXPECT_EQ(view.UseCount(), 2);
  EXPECT_EQ(TVMArrayFree(array), 0);
  EXPECT_EQ(view.UseCount(), 1);
}

int ReturnTwoValues(TVMValue*, int*, int, TVMRetValueHandle ret, void*) {
  TVMValue values[2];
  values[0].v_int64 = 1;
  values[1].v_int64 = 2;
  int codes[2] = {kTVMArgInt, kTVMArgInt};
  return TVMCFuncSetReturn(ret, values, codes, 2);
}

TEST_F(CApi, SetReturnRejectsANullHandleAndSeveralValues) {
  TVMValue value{};
  int code = kTVMArgInt;
  TVMAPISetLastError("");
  EXPECT_EQ(TVMCFuncSetReturn(nullptr, &value, &code, 1), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("return value handle is null"));
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(ReturnTwoValues, nullptr, nullptr, &f), 0);
  TVMValue ret;
  int ret_code;
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, &ret, &ret_code), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("exactly one return value"));
  EXPECT_EQ(TVMFuncFree(f), 0);
}

void CountFinalize(void* resource) { ++*static_cast<int*>(resource); }

int ReturnsNothing(TVMValue*, int*, int, TVMRetValueHandle, void*) { return 0; }

TEST_F(CApi, FinalizerRunsOnceWhenTheLastHandleIsFreed) {
  int finalized = 0;
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(ReturnsNothing, &finalized, CountFinalize, &f), 0);
  TVMValue ret;
  int ret_code;
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, &ret, &ret_code), 0);
  EXPECT_EQ(finalized, 0);
  EXPECT_EQ(TVMFuncFree(f), 0);
  EXPECT_EQ(finalized, 1);
}

TEST_F(CApi, FinalizerWaitsForTheGlobalTableToo) {
  int finalized = 0;
  std::string name = UniqueName("finalized");
  TVMFunctionHandle f = nullptr, from_table = nullptr, replacement = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(ReturnsNothing, &finalized, CountFinalize, &f), 0);
  ASSERT_EQ(TVMFuncRegisterGlobal(name.c_str(), f, 0), 0) << TVMGetLastError();
  ASSERT_EQ(TVMFuncGetGlobal(name.c_str(), &from_table), 0);
  ASSERT_NE(from_table, nullptr);
  EXPECT_EQ(TVMFuncFree(f), 0);
  EXPECT_EQ(TVMFuncFree(from_table), 0);
  EXPECT_EQ(finalized, 0);  // the table still holds it
  ASSERT_EQ(TVMFuncCreateFromCFunc(ReturnsNothing, nullptr, nullptr, &replacement), 0);
  ASSERT_EQ(TVMFuncRegisterGlobal(name.c_str(), replacement, 1), 0);
  EXPECT_EQ(finalized, 1);
  EXPECT_EQ(TVMFuncFree(replacement), 0);
  EXPECT_EQ(finalized, 1);
}

int ReturnResourceAsInt(TVMValue*, int*, int, TVMRetValueHandle ret, void* resource) {
  TVMValue value;
  value.v_int64 = reinterpret_cast<intptr_t>(resource);
  int code = kTVMArgInt;
  return TVMCFuncSetReturn(ret, &value, &code, 1);
}

int64_t CallGlobalForInt(const std::string& name) {
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMFuncGetGlobal(name.c_str(), &f), 0) << TVMGetLastError();
  if (f == nullptr) return -1;
  TVMValue ret{};
  int ret_code = -1;
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, &ret, &ret_code), 0) << TVMGetLastError();
  EXPECT_EQ(TVMFuncFree(f), 0);
  return ret.v_int64;
}

TEST_F(CApi, RegisterGlobalHonoursTheOverrideFlag) {
  std::string name = UniqueName("answer");
  TVMFunctionHandle first = nullptr, second = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(ReturnResourceAsInt, reinterpret_cast<void*>(41), nullptr, &first), 0);
  ASSERT_EQ(TVMFuncCreateFromCFunc(ReturnResourceAsInt, reinterpret_cast<void*>(42), nullptr, &second), 0);
  ASSERT_EQ(TVMFuncRegisterGlobal(name.c_str(), first, 0), 0) << TVMGetLastError();
  EXPECT_EQ(CallGlobalForInt(name), 41);
  TVMAPISetLastError("");
  EXPECT_EQ(TVMFuncRegisterGlobal(name.c_str(), second, 0), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("already registered"));
  EXPECT_EQ(CallGlobalForInt(name), 41);
  EXPECT_EQ(TVMFuncRegisterGlobal(name.c_str(), second, 1), 0) << TVMGetLastError();
  EXPECT_EQ(CallGlobalForInt(name), 42);
  EXPECT_EQ(TVMFuncFree(first), 0);
  EXPECT_EQ(TVMFuncFree(second), 0);
  // The table keeps its own reference.
  EXPECT_EQ(CallGlobalForInt(name), 42);
}

TEST_F(CApi, GetGlobalOfAnAbsentNameGivesNull) {
  TVMFunctionHandle f = reinterpret_cast<TVMFunctionHandle>(0x1);
  EXPECT_EQ(TVMFuncGetGlobal("kiln_test.capi.no_such_function", &f), 0);
  EXPECT_EQ(f, nullptr);
}

int FailWithMessage(TVMValue* args, int*, int, TVMRetValueHandle, void*) {
  std::string message = "bad input " + std::to_string(args[0].v_int64);
  TVMAPISetLastError(message.c_str());
  return -1;
}

TEST_F(CApi, ACFunctionsErrorComesBackThroughFuncCall) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(FailWithMessage, nullptr, nullptr, &f), 0);
  TVMValue arg;
  arg.v_int64 = 17;
  int code = kTVMArgInt;
  TVMValue ret;
  int ret_code;
  TVMAPISetLastError("");
  EXPECT_EQ(TVMFuncCall(f, &arg, &code, 1, &ret, &ret_code), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("bad input 17"));
  EXPECT_EQ(TVMFuncFree(f), 0);
}

TEST_F(CApi, CallsTheRuntimesOwnGlobals) {
  kiln::runtime::SetNumThreads(3);
  TVMFunctionHandle num_threads = nullptr, config = nullptr;
  ASSERT_EQ(TVMFuncGetGlobal("runtime.NumThreads", &num_threads), 0);
  ASSERT_EQ(TVMFuncGetGlobal("runtime.config_threadpool", &config), 0);
  ASSERT_NE(num_threads, nullptr);
  ASSERT_NE(config, nullptr);
  TVMValue ret{};
  int ret_code = -1;
  ASSERT_EQ(TVMFuncCall(num_threads, nullptr, nullptr, 0, &ret, &ret_code), 0) << TVMGetLastError();
  EXPECT_EQ(ret_code, kTVMArgInt);
  EXPECT_EQ(ret.v_int64, 3);

  TVMValue args[2];
  int codes[2] = {kTVMArgInt, kTVMArgInt};
  args[0].v_int64 = 0;
  args[1].v_int64 = 2;
  ASSERT_EQ(TVMFuncCall(config, args, codes, 2, &ret, &ret_code), 0) << TVMGetLastError();
  EXPECT_EQ(kiln::runtime::NumThreads(), 2);
  ASSERT_EQ(TVMFuncCall(num_threads, nullptr, nullptr, 0, &ret, &ret_code), 0);
  EXPECT_EQ(ret.v_int64, 2);
  // A wrong call of a runtime global is an error, not a crash.
  EXPECT_EQ(TVMFuncCall(config, args, codes, 1, &ret, &ret_code), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("runtime.config_threadpool"));
  kiln::runtime::SetNumThreads(0);
  EXPECT_EQ(TVMFuncFree(num_threads), 0);
  EXPECT_EQ(TVMFuncFree(config), 0);
}

// ---- modules -------------------------------------------------------------------------------

TEST_F(CApi, GetFunctionOfAMissingNameGivesNull) {
  TVMModuleHandle module = LoadTestOps();
  TVMFunctionHandle f = reinterpret_cast<TVMFunctionHandle>(0x1);
  EXPECT_EQ(TVMModGetFunction(module, "no_such_operator", 1, &f), 0) << TVMGetLastError();
  EXPECT_EQ(f, nullptr);
}

TEST_F(CApi, CallsACompiledOperatorWithTensors) {
  TVMModuleHandle module = LoadTestOps();
  TVMFunctionHandle add = nullptr;
  ASSERT_EQ(TVMModGetFunction(module, "test_add", 0, &add), 0) << TVMGetLastError();
  ASSERT_NE(add, nullptr);
  DLTensor* a = AllocFloats({2, 2});
  DLTensor* b = AllocFloats({2, 2});
  DLTensor* out = AllocFloats({2, 2});
  WriteFloats(a, {1, 2, 3, 4});
  WriteFloats(b, {10, 20, 30, 40.5f});
  TVMValue args[3];
  args[0].v_handle = a;
  args[1].v_handle = b;
  args[2].v_handle = out;
  // A DLTensor and NDArray handles may be mixed: both point at a DLTensor.
  int codes[3] = {kTVMDLTensorHandle, kTVMNDArrayHandle, kTVMDLTensorHandle};
  TVMValue ret{};
  int ret_code = -1;
  ASSERT_EQ(TVMFuncCall(add, args, codes, 3, &ret, &ret_code), 0) << TVMGetLastError();
  EXPECT_EQ(ReadFloats(out, 4), (std::vector<float>{11, 22, 33, 44.5f}));
  EXPECT_EQ(ret_code, kTVMNullptr);
  for (DLTensor* t : {a, b, out}) EXPECT_EQ(TVMArrayFree(t), 0);
  EXPECT_EQ(TVMFuncFree(add), 0);
}

TEST_F(CApi, AnOperatorsArgumentCheckComesBackAsAnError) {
  TVMModuleHandle module = LoadTestOps();
  TVMFunctionHandle add = nullptr;
  ASSERT_EQ(TVMModGetFunction(module, "test_add", 0, &add), 0);
  ASSERT_NE(add, nullptr);
  DLTensor* a = AllocFloats({4});
  DLTensor* shorter = AllocFloats({3});
  TVMValue args[3];
  args[0].v_handle = a;
  args[1].v_handle = a;
  args[2].v_handle = shorter;
  int codes[3] = {kTVMDLTensorHandle, kTVMDLTensorHandle, kTVMDLTensorHandle};
  TVMValue ret;
  int ret_code;
  TVMAPISetLastError("");
  EXPECT_EQ(TVMFuncCall(add, args, codes, 2, &ret, &ret_code), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("test_add: expected 3 arguments, got 2"));
  EXPECT_EQ(TVMFuncCall(add, args, codes, 3, &ret, &ret_code), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("test_add: argument 2 has a different size"));
  codes[1] = kTVMArgInt;
  args[1].v_int64 = 5;
  EXPECT_EQ(TVMFuncCall(add, args, codes, 3, &ret, &ret_code), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("test_add: argument 1 is not a tensor"));
  EXPECT_EQ(TVMArrayFree(a), 0);
  EXPECT_EQ(TVMArrayFree(shorter), 0);
  EXPECT_EQ(TVMFuncFree(add), 0);
}

TEST_F(CApi, LoadingAMissingFileIsAnErrorNamingIt) {
  TVMModuleHandle module = reinterpret_cast<TVMModuleHandle>(0x1);
  TVMAPISetLastError("");
  EXPECT_EQ(TVMModLoadFromFile("/nonexistent/dir/libmissing_model.so", "", &module), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("cannot load library '/nonexistent/dir/libmissing_model.so'"));
}

TEST_F(CApi, LoadingAFileThatIsNotALibraryIsAnError) {
  std::string json = kiln::test::DataPath("test_model.json");
  TVMModuleHandle module = nullptr;
  TVMAPISetLastError("");
  EXPECT_EQ(TVMModLoadFromFile(json.c_str(), "", &module), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("format 'json'"));
  EXPECT_THAT(TVMGetLastError(), HasSubstr("expected a .so file"));
  TVMAPISetLastError("");
  EXPECT_EQ(TVMModLoadFromFile(json.c_str(), "params", &module), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("format 'params'"));
  // A .so extension on a file that is not a shared library: dlopen's reason is passed on.
  std::string fake = std::string(KILN_TEST_BIN_DIR) + "/kiln_capi_not_a_library.so";
  FILE* file = std::fopen(fake.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs("not an ELF file\n", file);
  std::fclose(file);
  TVMAPISetLastError("");
  EXPECT_EQ(TVMModLoadFromFile(fake.c_str(), "", &module), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("cannot load library"));
  std::remove(fake.c_str());
}

TEST_F(CApi, NullHandlesAreErrorsWithAMessage) {
  TVMValue value{};
  int code = 0;
  TVMFunctionHandle f = nullptr;
  TVMModuleHandle module = nullptr;
  char buffer[4];
  struct Case {
    const char* what;
    int status;
  };
  std::vector<Case> cases = {
      {"TVMFuncCall", TVMFuncCall(nullptr, nullptr, nullptr, 0, &value, &code)},
      {"TVMModGetFunction", TVMModGetFunction(nullptr, "test_add", 0, &f)},
      {"TVMModImport", TVMModImport(nullptr, nullptr)},
      {"TVMFuncRegisterGlobal", TVMFuncRegisterGlobal("kiln_test.capi.null", nullptr, 1)},
      {"TVMCFuncSetReturn", TVMCFuncSetReturn(nullptr, &value, &code, 1)},
      {"TVMFuncGetGlobal", TVMFuncGetGlobal(nullptr, &f)},
      {"TVMModLoadFromFile", TVMModLoadFromFile(nullptr, "so", &module)},
      {"TVMFuncCreateFromCFunc", TVMFuncCreateFromCFunc(nullptr, nullptr, nullptr, &f)},
      {"TVMArrayCopyFromBytes", TVMArrayCopyFromBytes(nullptr, buffer, 4)},
      {"TVMArrayCopyToBytes", TVMArrayCopyToBytes(nullptr, buffer, 4)},
      {"TVMArrayCopyFromTo", TVMArrayCopyFromTo(nullptr, nullptr, nullptr)},
  };
  for (const Case& c : cases) EXPECT_EQ(c.status, -1) << c.what;
  // Each message names the function it came from.
  TVMAPISetLastError("");
  EXPECT_EQ(TVMFuncCall(nullptr, nullptr, nullptr, 0, &value, &code), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("TVMFuncCall: the function handle is null"));
  EXPECT_EQ(TVMModGetFunction(nullptr, "test_add", 0, &f), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("TVMModGetFunction: the module handle is null"));
  EXPECT_EQ(TVMArrayCopyFromBytes(nullptr, buffer, 4), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("TVMArrayCopyFromBytes: the array handle is null"));
  EXPECT_EQ(TVMFuncRegisterGlobal("kiln_test.capi.null", nullptr, 1), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("TVMFuncRegisterGlobal: the function handle is null"));
  // The name was not registered by the failed call.
  EXPECT_EQ(TVMFuncGetGlobal("kiln_test.capi.null", &f), 0);
  EXPECT_EQ(f, nullptr);
}

TEST_F(CApi, FuncCallWithNullArgumentArraysIsAnError) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(ReturnsNothing, nullptr, nullptr, &f), 0);
  TVMValue ret;
  int ret_code;
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 2, &ret, &ret_code), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("TVMFuncCall: null arguments"));
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, nullptr, nullptr), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("null return slots"));
  EXPECT_EQ(TVMFuncFree(f), 0);
}

}  // namespace
