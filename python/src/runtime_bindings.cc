// Runtime bindings: NDArray with numpy and DLPack exchange, Device, Module, PackedFunc (Python
// values <-> packed arguments), params files, and the benchmark / profile of a graph executor.
// The GIL is released around calls into the library that may run a model.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "python/src/bindings.h"
#include "runtime/graph_executor_module.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/packed_func.h"
#include "runtime/params.h"
#include "runtime/profiler.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

using runtime::Module;
using runtime::NDArray;
using runtime::PackedFunc;

const char* const kCapsuleName = "dltensor";
const char* const kUsedCapsuleName = "used_dltensor";

std::string TypeName(const py::handle& value) { return py::str(py::type::of(value).attr("__name__")); }

// numpy's name of a kiln dtype; throws Error for dtypes numpy does not have.
std::string NumpyDTypeName(DLDataType dtype) {
  std::string name = runtime::DTypeToString(dtype);
  bool plain = dtype.lanes == 1 && (dtype.code == kDLInt || dtype.code == kDLUInt || dtype.code == kDLFloat) &&
               (dtype.bits == 8 || dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64);
  runtime::Check(name == "bool" || (plain && !(dtype.code == kDLFloat && dtype.bits == 8)), "dtype ", name,
                 " has no numpy equivalent");
  return name;
}

py::array ToNumpy(const NDArray& array) {
  py::array out(py::dtype(NumpyDTypeName(array.dtype())), array.shape());
  array.CopyToBytes(out.mutable_data(), static_cast<size_t>(out.nbytes()));
  return out;
}

// A copy of anything numpy turns into an array; non-contiguous arrays are made contiguous by numpy
// first, so they are copied, never misread.
NDArray FromNumpy(const py::object& value, DLDevice device) {
  py::array source = py::module_::import("numpy").attr("asarray")(value, py::arg("order") = "C");
  DLDataType dtype = runtime::ParseDType(std::string(py::str(source.dtype())));
  std::vector<int64_t> shape(source.shape(), source.shape() + source.ndim());
  NDArray array = NDArray::Empty(shape, dtype, device);
  array.CopyFromBytes(source.data(), static_cast<size_t>(source.nbytes()));
  return array;
}

void DeleteUnconsumedCapsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kUsedCapsuleName)) return;  // a consumer took ownership
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed == nullptr) {
    PyErr_Clear();
    return;
  }
  if (managed->deleter != nullptr) managed->deleter(managed);
}

py::capsule ToDLPackCapsule(const NDArray& array) {
  DLManagedTensor* managed = array.ToDLPack();
  PyObject* capsule = PyCapsule_New(managed, kCapsuleName, DeleteUnconsumedCapsule);
  if (capsule == nullptr) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

// Zero-copy: the NDArray uses the producer's memory and keeps it alive. The library rejects
// non-CPU and non-compact tensors before taking ownership (the capsule then still owns them).
NDArray FromDLPack(const py::object& value) {
  py::object capsule = value;
  if (py::hasattr(value, "__dlpack__")) capsule = value.attr("__dlpack__")();
  if (!PyCapsule_CheckExact(capsule.ptr())) {
    throw py::type_error("from_dlpack expects an object with __dlpack__ (numpy array, torch tensor, ...) or a "
                         "DLPack capsule, got " + TypeName(value));
  }
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsuleName)) {
    throw py::value_error("from_dlpack: the DLPack capsule was already consumed");
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  NDArray array = NDArray::FromDLPack(managed);
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
  return array;
}

std::string ArrayRepr(const NDArray& array) {
  return "<kiln.nd.NDArray " + runtime::DTypeToString(array.dtype()) + runtime::ShapeToString(array.shape()) + ">";
}

// Python values as packed arguments; the converted values borrow from `args`, which outlives the call.
py::object CallPacked(const PackedFunc& function, const py::args& args) {
  size_t n = args.size();
  std::vector<TVMValue> values(n);
  std::vector<int> codes(n);
  std::vector<std::string> strings(n);
  std::vector<TVMByteArray> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    py::handle arg = args[i];
    TVMValue& v = values[i];
    int& c = codes[i];
    if (arg.is_none()) {
      runtime::PackArg(v, c, nullptr);
    } else if (py::isinstance<py::bool_>(arg)) {
      v.v_int64 = arg.cast<bool>() ? 1 : 0;
      c = kTVMArgInt;
    } else if (py::isinstance<py::int_>(arg)) {
      runtime::PackArg(v, c, arg.cast<int64_t>());
    } else if (py::isinstance<py::float_>(arg)) {
      runtime::PackArg(v, c, arg.cast<double>());
    } else if (py::isinstance<py::str>(arg)) {
      strings[i] = arg.cast<std::string>();
      runtime::PackArg(v, c, strings[i]);
    } else if (py::isinstance<py::bytes>(arg) || py::isinstance<py::bytearray>(arg)) {
      strings[i] = py::isinstance<py::bytes>(arg) ? std::string(arg.cast<py::bytes>())
                                                  : std::string(arg.cast<py::bytearray>());
      bytes[i] = TVMByteArray{strings[i].data(), strings[i].size()};
      runtime::PackArg(v, c, bytes[i]);
    } else if (py::isinstance<NDArray>(arg)) {
      runtime::PackArg(v, c, arg.cast<const NDArray&>());
    } else if (py::isinstance<Module>(arg)) {
      runtime::PackArg(v, c, arg.cast<const Module&>());
    } else if (py::isinstance<PackedFunc>(arg)) {
      runtime::PackArg(v, c, arg.cast<const PackedFunc&>());
    } else if (py::isinstance<DLDevice>(arg)) {
      runtime::PackArg(v, c, arg.cast<DLDevice>());
    } else {
      throw py::type_error("packed function argument " + std::to_string(i) + ": cannot pass a " + TypeName(arg) +
                           " (use int, float, str, bytes, None, kiln.nd.NDArray, a module, a function or a device)");
    }
  }
  runtime::RetValue result;
  {
    py::gil_scoped_release release;
    function.CallPacked(runtime::Args(values.data(), codes.data(), static_cast<int>(n)), &result);
  }
  switch (result.code()) {
    case kTVMNullptr: return py::none();
    case kTVMArgBool: return py::bool_(result.AsInt() != 0);
    case kTVMArgInt:
    case kDLUInt: return py::int_(result.AsInt());
    case kTVMArgFloat: return py::float_(result.AsFloat());
    case kTVMStr: return py::str(result.string_payload());
    case kTVMBytes: return py::bytes(result.string_payload());
    case kTVMNDArrayHandle: return py::cast(result.AsNDArray());
    case kTVMModuleHandle: return py::cast(result.AsModule());
    case kTVMPackedFuncHandle: return py::cast(result.AsFunc());
    case kDLDevice: return py::cast(result.AsArg().AsDevice());
    default: throw runtime::Error("a packed function returned a value of type " +
                                  std::string(runtime::TypeCodeName(result.code())) + ", which Python cannot hold");
  }
}

// A module's function; AttributeError (as in TVM) when it has none of that name.
PackedFunc FunctionOf(const Module& mod, const std::string& name, bool query_imports) {
  PackedFunc f = mod.GetFunction(name, query_imports);
  if (!f.defined()) {
    throw py::attribute_error("module of type '" + std::string(mod.type_key()) + "' has no function '" + name + "'");
  }
  return f;
}

runtime::NamedArrays ToNamedArrays(const py::dict& arrays) {
  runtime::NamedArrays out;
  for (const auto& [name, value] : arrays) out.emplace_back(name.cast<std::string>(), value.cast<NDArray>());
  return out;
}

py::dict ToDict(const runtime::NamedArrays& arrays) {
  py::dict out;
  for (const auto& [name, value] : arrays) out[py::str(name)] = py::cast(value);
  return out;
}

void RegisterDevice(py::module_& m) {
  py::class_<DLDevice>(m, "Device", "A device (kiln runs on the CPU). Made by kiln.cpu().")
      .def(py::init([](int device_type, int device_id) {
             return DLDevice{static_cast<DLDeviceType>(device_type), device_id};
           }),
           py::arg("device_type"), py::arg("device_id") = 0)
      .def_property_readonly("device_type", [](const DLDevice& d) { return static_cast<int>(d.device_type); })
      .def_property_readonly("device_id", [](const DLDevice& d) { return d.device_id; })
      .def("__eq__", [](const DLDevice& a, const DLDevice& b) {
        return a.device_type == b.device_type && a.device_id == b.device_id;
      })
      .def("__hash__", [](const DLDevice& d) { return static_cast<int>(d.device_type) * 1024 + d.device_id; })
      .def("__repr__", [](const DLDevice& d) {
        return d.device_type == kDLCPU ? "cpu(" + std::to_string(d.device_id) + ")"
                                       : "Device(" + std::to_string(d.device_type) + ", " + std::to_string(d.device_id) + ")";
      });
}

void RegisterNDArray(py::module_& m) {
  py::class_<NDArray>(m, "NDArray",
                      "An n-dimensional array in kiln's memory (64-byte aligned), or a zero-copy view of another\n"
                      "framework's memory made by kiln.nd.from_dlpack. Copies of the Python object share the data.")
      .def_property_readonly("shape", [](const NDArray& a) { return py::tuple(py::cast(a.shape())); })
      .def_property_readonly("dtype", [](const NDArray& a) { return runtime::DTypeToString(a.dtype()); })
      .def_property_readonly("device", [](const NDArray& a) { return a->device; })
      .def_property_readonly("nbytes", [](const NDArray& a) { return a.NumBytes(); })
      .def("numpy", &ToNumpy, "A numpy copy of the array.")
      .def("copyfrom", [](NDArray& self, const py::object& source) -> NDArray& {
             if (py::isinstance<NDArray>(source)) {
               self.CopyFrom(*source.cast<const NDArray&>().get());
             } else {
               NDArray copy = FromNumpy(source, self->device);
               self.CopyFrom(*copy.get());
             }
             return self;
           },
           py::arg("source"), "Copies a kiln array or anything numpy accepts (same shape and dtype) into this array.")
      .def("copyto", [](const NDArray& self, NDArray& target) { self.CopyTo(*target.get()); }, py::arg("target"),
           "Copies this array into `target` (same shape and dtype).")
      .def("copy", &NDArray::Clone, "A new array holding a copy of the data.")
      .def("__dlpack__", [](const NDArray& a, const py::object&) { return ToDLPackCapsule(a); },
           py::arg("stream") = py::none(), "A DLPack capsule sharing this array's memory (no copy).")
      .def("__dlpack_device__", [](const NDArray& a) {
        return py::make_tuple(static_cast<int>(a->device.device_type), a->device.device_id);
      })
      .def("__repr__", &ArrayRepr);
  m.def("array_from_numpy", &FromNumpy, py::arg("value"), py::arg("device"));
  m.def("array_from_dlpack", &FromDLPack, py::arg("value"));
  m.def("empty", [](const std::vector<int64_t>& shape, const std::string& dtype, DLDevice device) {
    return NDArray::Empty(shape, runtime::ParseDType(dtype), device);
  }, py::arg("shape"), py::arg("dtype"), py::arg("device"));
}

void RegisterModules(py::module_& m) {
  py::class_<PackedFunc>(m, "PackedFunc", "A function of the packed-function ABI (TVM's PackedFunc).")
      .def("__call__", &CallPacked);
  py::class_<Module>(m, "Module", "A runtime module: named packed functions plus imported modules.")
      .def_property_readonly("type_key", [](const Module& mod) { return std::string(mod.type_key()); })
      .def_property_readonly("imported_modules", [](const Module& mod) { return mod->imports(); })
      .def("get_function", &FunctionOf,
           py::arg("name"), py::arg("query_imports") = false)
      .def("__getitem__", [](const Module& mod, const std::string& name) { return FunctionOf(mod, name, false); },
           py::arg("name"))
      .def("implements_function", [](const Module& mod, const std::string& name, bool query_imports) {
             return mod.GetFunction(name, query_imports).defined();
           },
           py::arg("name"), py::arg("query_imports") = false)
      .def("__repr__", [](const Module& mod) { return "<kiln.runtime.Module " + std::string(mod.type_key()) + ">"; });
  m.def("load_module", [](const std::string& path, const std::string& format) {
    py::gil_scoped_release release;
    return runtime::LoadModuleFromFile(path, format);
  }, py::arg("path"), py::arg("format") = "");
  m.def("get_global_func", [](const std::string& name) -> std::optional<PackedFunc> {
    PackedFunc f = runtime::GetGlobalFunction(name);
    return f.defined() ? std::optional<PackedFunc>(f) : std::nullopt;
  }, py::arg("name"));
  m.def("save_param_dict", [](const py::dict& params) { return py::bytes(runtime::SaveParams(ToNamedArrays(params))); },
        py::arg("params"));
  m.def("load_param_dict", [](const py::bytes& bytes) { return ToDict(runtime::LoadParams(std::string(bytes))); },
        py::arg("bytes"));
}

void RegisterMeasurements(py::module_& m) {
  py::class_<runtime::BenchmarkResult>(m, "BenchmarkResult", "Timing of whole runs; all values in seconds.")
      .def_readonly("results", &runtime::BenchmarkResult::results, "seconds per run, one per measurement")
      .def_readonly("mean", &runtime::BenchmarkResult::mean)
      .def_readonly("median", &runtime::BenchmarkResult::median)
      .def_readonly("min", &runtime::BenchmarkResult::min)
      .def_readonly("max", &runtime::BenchmarkResult::max)
      .def_readonly("std", &runtime::BenchmarkResult::std)
      .def("__str__", &runtime::BenchmarkResult::Summary)
      .def("__repr__", [](const runtime::BenchmarkResult& r) {
        return "BenchmarkResult(mean=" + std::to_string(r.mean) + ", median=" + std::to_string(r.median) +
               ", min=" + std::to_string(r.min) + ", max=" + std::to_string(r.max) + ", std=" +
               std::to_string(r.std) + ", repeat=" + std::to_string(r.results.size()) + ")";
      });
  m.def("benchmark", [](const Module& module, int number, int repeat, int min_repeat_ms, bool end_to_end,
                        const py::dict& inputs) {
    runtime::BenchmarkOptions options{number, repeat, min_repeat_ms, end_to_end};
    runtime::NamedArrays arrays = ToNamedArrays(inputs);
    std::shared_ptr<runtime::GraphExecutor> executor = runtime::GetGraphExecutor(module);
    py::gil_scoped_release release;
    return runtime::Benchmark(*executor, options, arrays);
  }, py::arg("module"), py::arg("number"), py::arg("repeat"), py::arg("min_repeat_ms"), py::arg("end_to_end"),
     py::arg("inputs"));

  py::class_<runtime::NodeTiming>(m, "NodeTiming", "The time of one node in one profiled run.")
      .def_readonly("node", &runtime::NodeTiming::node)
      .def_readonly("name", &runtime::NodeTiming::name)
      .def_readonly("function", &runtime::NodeTiming::function)
      .def_readonly("implementation", &runtime::NodeTiming::implementation,
                    "what computes the node's function: kernel implementations, loops")
      .def_readonly("start_us", &runtime::NodeTiming::start_us)
      .def_readonly("duration_us", &runtime::NodeTiming::duration_us)
      .def_readonly("shapes", &runtime::NodeTiming::shapes);
  py::class_<runtime::ProfileReport>(m, "ProfileReport", "Per-node timings of the profiling executor: medians over its runs.")
      .def_readonly("nodes", &runtime::ProfileReport::nodes, "in execution order")
      .def_readonly("total_us", &runtime::ProfileReport::total_us)
      .def("table", &runtime::ProfileReport::Table, "one row per node, slowest first, then the total")
      .def("chrome_trace", &runtime::ProfileReport::ChromeTrace, "Chrome trace event JSON (opens in Perfetto)")
      .def("__str__", &runtime::ProfileReport::Table);
  m.def("profile", [](const Module& module, int runs) {
    std::shared_ptr<runtime::GraphExecutor> executor = runtime::GetGraphExecutor(module);
    py::gil_scoped_release release;
    return runtime::ProfileRun(*executor, runs);
  }, py::arg("module"), py::arg("runs") = 1);
}

}  // namespace

void RegisterRuntime(py::module_& m) {
  RegisterDevice(m);
  RegisterNDArray(m);
  RegisterModules(m);
  RegisterMeasurements(m);
}

}  // namespace kiln::python
