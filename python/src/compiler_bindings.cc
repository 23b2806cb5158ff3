// Compiler bindings: the IR main function (printed and parsed as IR text), the ONNX frontend,
// PassContext, partitioning for external codegens, build (target string, params) and the
// executor factory it returns.
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backend/build.h"
#include "backend/partition.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/text.h"
#include "python/src/bindings.h"
#include "transform/pass_context.h"
#include "transform/pipeline.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

// The model as the frontend returns it: kiln's main function (TVM's IRModule holding "main").
struct IRModule {
  ir::Expr main;
  // Parameters partition_for already bound as constants: build skips them when TVM-style code
  // passes the same params again (relay.build(partition_for_dnnl(mod, params), params=params)).
  std::set<std::string> bound_params;
  // With shape dimensions: main at each of their samples (ir/dim_samples.h), built together.
  std::shared_ptr<ir::DimSamples> samples;
};

std::string ConfigValueText(const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "true" : "false";
  return py::str(value);
}

void RegisterIR(py::module_& m) {
  py::class_<IRModule>(m, "IRModule", "A model in kiln's IR: its main function (made by kiln.frontend.from_onnx).")
      .def_static("from_text", [](const std::string& text) { return IRModule{ir::ParseFunction(text), {}, nullptr}; },
                  py::arg("text"), "Parses the IR text of a main function.")
      .def("astext", [](const IRModule& mod, int64_t max_constant_elements) {
             return ir::PrintFunction(mod.main, ir::PrintOptions{max_constant_elements});
           },
           py::arg("max_constant_elements") = 1024, "The IR text (larger constants print as `...`).")
      .def("__str__", [](const IRModule& mod) { return ir::PrintFunction(mod.main); })
      .def("structural_equal", [](const IRModule& a, const IRModule& b) { return ir::StructurallyEqual(a.main, b.main); },
           py::arg("other"))
      .def_property_readonly("params", [](const IRModule& mod) {
        std::vector<py::tuple> params;
        const auto& main_params = mod.main->As<ir::FunctionNode>()->params;
        for (size_t i = 0; i < main_params.size(); ++i) {
          const ir::TensorType& t = main_params[i]->type().tensor();
          py::list shape;
          for (size_t axis = 0; axis < t.shape.size(); ++axis) {
            // With shape dimensions: an axis that is one of them at every sample by its name, one
            // that changes otherwise as -1.
            std::optional<std::string> name;
            bool varies = false;
            if (mod.samples != nullptr) {
              for (size_t d = 0; d < mod.samples->dims.size(); ++d) {
                bool all = true;
                for (size_t p = 0; p < mod.samples->mains.size(); ++p) {
                  const auto& params_p = mod.samples->mains[p]->As<ir::FunctionNode>()->params;
                  int64_t extent = params_p.at(i)->type().tensor().shape.at(axis);
                  all = all && extent == mod.samples->points[p][d];
                  varies = varies || extent != t.shape[axis];
                }
                if (all) name = mod.samples->dims[d].name;
              }
            }
            if (name) {
              shape.append(*name);
            } else {
              shape.append(varies ? int64_t{-1} : t.shape[axis]);
            }
          }
          params.push_back(py::make_tuple(main_params[i]->As<ir::VarNode>()->name, py::tuple(shape),
                                          runtime::DTypeToString(t.dtype)));
        }
        return params;
      }, "The inputs of main as (name, shape, dtype); a shape dimension by its name.");
}

void RegisterFrontend(py::module_& m) {
  using Shapes = std::map<std::string, std::vector<int64_t>>;
  // shapes: -1 where dim_names names the dimension; dims: name -> (min, max, step).
  using DimNames = std::map<std::string, std::map<int, std::string>>;
  using Dims = std::map<std::string, std::tuple<int64_t, int64_t, int64_t>>;
  auto options = [](const Shapes& shapes, const DimNames& names, const Dims& dims) {
    frontend::OnnxImportOptions o{shapes, names, {}};
    for (const auto& [name, range] : dims) {
      o.dims[name] = {std::get<0>(range), std::get<1>(range), std::get<2>(range)};
    }
    return o;
  };
  m.def("import_onnx_file", [options](const std::string& path, const Shapes& shapes, const DimNames& names,
                                      const Dims& dims) {
    frontend::OnnxImportOptions o = options(shapes, names, dims);
    py::gil_scoped_release release;
    auto samples = std::make_shared<ir::DimSamples>();
    ir::Expr main = frontend::ImportOnnxFile(path, o, samples.get());
    return IRModule{main, {}, samples->empty() ? nullptr : samples};
  }, py::arg("path"), py::arg("shapes"), py::arg("dim_names"), py::arg("dims"));
  m.def("import_onnx_bytes", [options](const py::bytes& bytes, const Shapes& shapes, const DimNames& names,
                                       const Dims& dims) {
    std::string data = bytes;
    frontend::OnnxImportOptions o = options(shapes, names, dims);
    py::gil_scoped_release release;
    auto samples = std::make_shared<ir::DimSamples>();
    ir::Expr main = frontend::ImportOnnxBytes(data, o, samples.get());
    return IRModule{main, {}, samples->empty() ? nullptr : samples};
  }, py::arg("bytes"), py::arg("shapes"), py::arg("dim_names"), py::arg("dims"));
  m.def("supported_onnx_ops", &frontend::SupportedOnnxOps);
}

void RegisterPassContext(py::module_& m) {
  py::class_<transform::PassContext>(m, "PassContext")
      .def(py::init([](int opt_level, const std::set<std::string>& required, const std::set<std::string>& disabled,
                       const py::dict& config) {
             transform::PassContext context;
             context.opt_level = opt_level;
             context.required_passes = required;
             context.disabled_passes = disabled;
             context.CheckPassNames(transform::PassNames());
             for (const auto& [key, value] : config) context.SetConfig(py::str(key), ConfigValueText(value));
             return context;
           }),
           py::arg("opt_level"), py::arg("required_pass"), py::arg("disabled_pass"), py::arg("config"))
      .def_readonly("opt_level", &transform::PassContext::opt_level)
      .def_readonly("required_pass", &transform::PassContext::required_passes)
      .def_readonly("disabled_pass", &transform::PassContext::disabled_passes);
  m.def("pass_names", &transform::PassNames);
  m.def("config_keys", []() {
    std::vector<py::tuple> keys;
    for (const transform::ConfigKey& key : transform::ConfigKeys()) {
      const char* kind = key.kind == transform::ConfigKey::Kind::kInt ? "int"
                         : key.kind == transform::ConfigKey::Kind::kBool ? "bool" : "str";
      keys.push_back(py::make_tuple(key.name, kind, key.default_value, key.doc));
    }
    return keys;
  });
}

void RegisterBuild(py::module_& m) {
  py::class_<backend::ExecutorFactory>(m, "ExecutorFactory")
      .def("export_library", [](const backend::ExecutorFactory& f, const std::string& path) {
        py::gil_scoped_release release;
        f.ExportLibrary(path);
      }, py::arg("path"))
      .def("export_three_files", [](const backend::ExecutorFactory& f, const std::string& directory) {
        py::gil_scoped_release release;
        f.ExportThreeFiles(directory);
      }, py::arg("directory"))
      .def("load", [](const backend::ExecutorFactory& f) {
        py::gil_scoped_release release;
        return f.Load();
      })
      .def_property_readonly("graph_json", &backend::ExecutorFactory::graph_json)
      .def_property_readonly("params", &backend::ExecutorFactory::params)
      .def_property_readonly("module_name", &backend::ExecutorFactory::module_name)
      .def("get_source", &backend::ExecutorFactory::GetSource);
  m.def("partition_for", [](const IRModule& mod, const std::string& codegen, const runtime::NamedArrays& params,
                            int min_region_ops) {
    runtime::Check(mod.samples == nullptr, "partition_for: external codegens take fixed shapes only; import the ",
                   "model without shape dimensions");
    transform::PartitionOptions options;
    options.min_region_ops = min_region_ops;
    IRModule partitioned{backend::PartitionForCodegen(mod.main, codegen, params, options), mod.bound_params, nullptr};
    for (const auto& [name, array] : params) partitioned.bound_params.insert(name);
    return partitioned;
  }, py::arg("mod"), py::arg("codegen"), py::arg("params"), py::arg("min_region_ops"));
  m.def("external_codegens", []() {
    std::map<std::string, bool> enabled;
    for (const backend::ExternalCodegen& c : backend::ExternalCodegens()) enabled[c.name] = c.enabled();
    return enabled;
  });
  m.def("build", [](const IRModule& mod, const transform::PassContext& context, const std::string& target,
                    const runtime::NamedArrays& params, const std::string& module_name) {
    backend::BuildOptions options;
    options.pass_context = context;
    options.module_name = module_name;
    for (const auto& [name, array] : params) {
      if (mod.bound_params.count(name) == 0) options.params.emplace_back(name, array);
    }
    options.dim_samples = mod.samples.get();
    py::gil_scoped_release release;
    options.target = backend::ResolveTarget(target, options.compiler);  // may run the compiler
    return backend::Build(mod.main, options);
  }, py::arg("mod"), py::arg("pass_context"), py::arg("target"), py::arg("params"), py::arg("module_name"));
}

}  // namespace

void RegisterCompiler(py::module_& m) {
  RegisterIR(m);
  RegisterFrontend(m);
  RegisterPassContext(m);
  RegisterBuild(m);
}

}  // namespace kiln::python
