// The part of Triton Inference Server's C API that the kiln backend uses, declared here from
// Triton's documented interface for Triton 2.51.0 (release r24.10): `tritonserver.h` (server API
// 1.34) and `tritonbackend.h` (backend API 1.19) of triton-inference-server/core. Only what the
// backend calls or exports is declared; enum values are Triton's, in Triton's order.
//
// The TRITONSERVER_* and TRITONBACKEND_* functions below are defined by the server process that
// loads the backend, so libtriton_kiln is linked without -ltritonserver and these symbols stay
// undefined until Triton dlopens it. The TRITONBACKEND_* entry points at the end are the ones
// this backend defines and Triton looks up.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// ---- tritonserver.h ---------------------------------------------------------------------------

struct TRITONSERVER_Error;
struct TRITONSERVER_Message;

typedef enum TRITONSERVER_datatype_enum {
  TRITONSERVER_TYPE_INVALID,
  TRITONSERVER_TYPE_BOOL,
  TRITONSERVER_TYPE_UINT8,
  TRITONSERVER_TYPE_UINT16,
  TRITONSERVER_TYPE_UINT32,
  TRITONSERVER_TYPE_UINT64,
  TRITONSERVER_TYPE_INT8,
  TRITONSERVER_TYPE_INT16,
  TRITONSERVER_TYPE_INT32,
  TRITONSERVER_TYPE_INT64,
  TRITONSERVER_TYPE_FP16,
  TRITONSERVER_TYPE_FP32,
  TRITONSERVER_TYPE_FP64,
  TRITONSERVER_TYPE_BYTES,
  TRITONSERVER_TYPE_BF16
} TRITONSERVER_DataType;

typedef enum TRITONSERVER_memorytype_enum {
  TRITONSERVER_MEMORY_CPU,
  TRITONSERVER_MEMORY_CPU_PINNED,
  TRITONSERVER_MEMORY_GPU
} TRITONSERVER_MemoryType;

typedef enum TRITONSERVER_instancegroupkind_enum {
  TRITONSERVER_INSTANCEGROUPKIND_AUTO,
  TRITONSERVER_INSTANCEGROUPKIND_CPU,
  TRITONSERVER_INSTANCEGROUPKIND_GPU,
  TRITONSERVER_INSTANCEGROUPKIND_MODEL
} TRITONSERVER_InstanceGroupKind;

typedef enum TRITONSERVER_loglevel_enum {
  TRITONSERVER_LOG_INFO,
  TRITONSERVER_LOG_WARN,
  TRITONSERVER_LOG_ERROR,
  TRITONSERVER_LOG_VERBOSE
} TRITONSERVER_LogLevel;

typedef enum TRITONSERVER_errorcode_enum {
  TRITONSERVER_ERROR_UNKNOWN,
  TRITONSERVER_ERROR_INTERNAL,
  TRITONSERVER_ERROR_NOT_FOUND,
  TRITONSERVER_ERROR_INVALID_ARG,
  TRITONSERVER_ERROR_UNAVAILABLE,
  TRITONSERVER_ERROR_UNSUPPORTED,
  TRITONSERVER_ERROR_ALREADY_EXISTS,
  TRITONSERVER_ERROR_CANCELLED
} TRITONSERVER_Error_Code;

typedef enum tritonserver_requestreleaseflag_enum {
  TRITONSERVER_REQUEST_RELEASE_ALL = 1,
  TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2
} TRITONSERVER_RequestReleaseFlag;

typedef enum tritonserver_responsecompleteflag_enum {
  TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
} TRITONSERVER_ResponseCompleteFlag;

TRITONSERVER_Error* TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char* msg);
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error);
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error* error);
const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error);

TRITONSERVER_Error* TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message** message,
                                                              const char* base, size_t byte_size);
TRITONSERVER_Error* TRITONSERVER_MessageDelete(TRITONSERVER_Message* message);
TRITONSERVER_Error* TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message* message,
                                                        const char** base, size_t* byte_size);

bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel level);
TRITONSERVER_Error* TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char* filename,
                                            const int line, const char* msg);

// ---- tritonbackend.h --------------------------------------------------------------------------

#define KILN_TRITONBACKEND_API_VERSION_MAJOR 1
#define KILN_TRITONBACKEND_API_VERSION_MINOR 19

struct TRITONBACKEND_Backend;
struct TRITONBACKEND_Model;
struct TRITONBACKEND_ModelInstance;
struct TRITONBACKEND_Request;
struct TRITONBACKEND_Response;
struct TRITONBACKEND_Input;
struct TRITONBACKEND_Output;
struct TRITONBACKEND_BackendAttribute;

typedef enum TRITONBACKEND_artifacttype_enum {
  TRITONBACKEND_ARTIFACT_FILESYSTEM
} TRITONBACKEND_ArtifactType;

TRITONSERVER_Error* TRITONBACKEND_ApiVersion(uint32_t* major, uint32_t* minor);

TRITONSERVER_Error* TRITONBACKEND_ModelName(TRITONBACKEND_Model* model, const char** name);
TRITONSERVER_Error* TRITONBACKEND_ModelVersion(TRITONBACKEND_Model* model, uint64_t* version);
TRITONSERVER_Error* TRITONBACKEND_ModelRepository(TRITONBACKEND_Model* model,
                                                  TRITONBACKEND_ArtifactType* artifact_type,
                                                  const char** location);
// The message returned is the caller's to delete.
TRITONSERVER_Error* TRITONBACKEND_ModelConfig(TRITONBACKEND_Model* model, const uint32_t config_version,
                                              TRITONSERVER_Message** model_config);
TRITONSERVER_Error* TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model* model,
                                                          bool* auto_complete_config);
// Only from TRITONBACKEND_ModelInitialize; does not take the message.
TRITONSERVER_Error* TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model* model, const uint32_t config_version,
                                                 TRITONSERVER_Message* model_config);
TRITONSERVER_Error* TRITONBACKEND_ModelState(TRITONBACKEND_Model* model, void** state);
TRITONSERVER_Error* TRITONBACKEND_ModelSetState(TRITONBACKEND_Model* model, void* state);

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance* instance, const char** name);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance* instance,
                                                    TRITONSERVER_InstanceGroupKind* kind);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance* instance,
                                                     TRITONBACKEND_Model** model);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance* instance, void** state);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance* instance, void* state);
// Timestamps in nanoseconds of std::chrono::steady_clock; reported before the request is released.
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request* request, const bool success,
    const uint64_t exec_start_ns, const uint64_t compute_start_ns, const uint64_t compute_end_ns,
    const uint64_t exec_end_ns);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance* instance, const uint64_t batch_size, const uint64_t exec_start_ns,
    const uint64_t compute_start_ns, const uint64_t compute_end_ns, const uint64_t exec_end_ns);

TRITONSERVER_Error* TRITONBACKEND_RequestInput(TRITONBACKEND_Request* request, const char* name,
                                               TRITONBACKEND_Input** input);
TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request* request, uint32_t* count);
TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request* request, const uint32_t index,
                                                    const char** output_name);
TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, uint32_t release_flags);

// byte_size is the data the request carries, which need not match its shape and datatype.
TRITONSERVER_Error* TRITONBACKEND_InputProperties(TRITONBACKEND_Input* input, const char** name,
                                                  TRITONSERVER_DataType* datatype, const int64_t** shape,
                                                  uint32_t* dims_count, uint64_t* byte_size,
                                                  uint32_t* buffer_count);
// memory_type and memory_type_id: the preferred ones in, the actual ones out.
TRITONSERVER_Error* TRITONBACKEND_InputBuffer(TRITONBACKEND_Input* input, const uint32_t index,
                                              const void** buffer, uint64_t* buffer_byte_size,
                                              TRITONSERVER_MemoryType* memory_type,
                                              int64_t* memory_type_id);

TRITONSERVER_Error* TRITONBACKEND_ResponseNew(TRITONBACKEND_Response** response, TRITONBACKEND_Request* request);
TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response* response, TRITONBACKEND_Output** output,
                                                 const char* name, const TRITONSERVER_DataType datatype,
                                                 const int64_t* shape, const uint32_t dims_count);
TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output* output, void** buffer,
                                               const uint64_t buffer_byte_size,
                                               TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id);
// Takes the response; the error (null for success) stays the caller's.
TRITONSERVER_Error* TRITONBACKEND_ResponseSend(TRITONBACKEND_Response* response, const uint32_t send_flags,
                                               TRITONSERVER_Error* error);

// count 0 and device_ids null: Triton's defaults.
TRITONSERVER_Error* TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
    TRITONBACKEND_BackendAttribute* backend_attributes, const TRITONSERVER_InstanceGroupKind kind,
    const uint64_t count, const uint64_t* device_ids, const uint64_t id_count);
TRITONSERVER_Error* TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(
    TRITONBACKEND_BackendAttribute* backend_attributes, bool enabled);

// ---- entry points this backend defines ---------------------------------------------------------

#define KILN_TRITON_EXPORT __attribute__((__visibility__("default")))

KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend);
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_GetBackendAttribute(
    TRITONBACKEND_Backend* backend, TRITONBACKEND_BackendAttribute* backend_attributes);
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model);
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model);
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance);
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance);
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                                          TRITONBACKEND_Request** requests,
                                                                          const uint32_t request_count);

}  // extern "C"
