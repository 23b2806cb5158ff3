// The backend seam: functions marked for an external codegen go to it, the module it makes travels
// in the exported library (imported by the compiled host code) and runs there; unknown and disabled codegens are clear errors. The codegen here is the test's own:
// it takes `multiply` of two float32 tensors and runs it in a module of its own type.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/build.h"
#include "backend/host_module.h"
#include "ir/text.h"
#include "runtime/error.h"
#include "runtime/graph_executor_module.h"
#include "runtime/ndarray.h"
#include "tests/float_arrays.h"
#include "tests/shared_object_cache.h"

namespace kiln::backend {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr char kTypeKey[] = "kiln_test_multiply";

// out = a * b over float32 tensors of one shape, as the packed function `symbol(a, b, out)`.
class MultiplyModule final : public runtime::ModuleNode {
 public:
  explicit MultiplyModule(std::string symbol) : symbol_(std::move(symbol)) {}
  const char* type_key() const override { return kTypeKey; }
  bool IsBinarySerializable() const override { return true; }
  void SaveToBinary(runtime::ByteWriter& writer) const override { writer.WriteString(symbol_); }

  runtime::PackedFunc GetFunction(const std::string& name) override {
    if (name != symbol_) return runtime::PackedFunc();
    return runtime::PackedFunc([](const runtime::Args& args, runtime::RetValue*) {
      args.CheckCount("multiply", 3, 3);
      const DLTensor* a = args[0].AsTensor();
      const DLTensor* b = args[1].AsTensor();
      DLTensor* out = args[2].AsTensor();
      int64_t count = 1;
      for (int d = 0; d < out->ndim; ++d) count *= out->shape[d];
      for (int64_t i = 0; i < count; ++i) {
        static_cast<float*>(out->data)[i] = static_cast<const float*>(a->data)[i] * static_cast<const float*>(b->data)[i];
      }
    });
  }

 private:
  std::string symbol_;
};

bool SupportsMultiply(const ir::CallNode& call) { return call.op != nullptr && call.op->name == "multiply"; }

ExternalModule GenerateMultiply(const std::string& symbol, const ir::Expr& function) {
  const auto* f = function->As<ir::FunctionNode>();
  const auto* body = f->body->As<ir::CallNode>();
  runtime::Check(body != nullptr && SupportsMultiply(*body), "test codegen: only a single multiply");
  return {symbol, runtime::Module(std::make_shared<MultiplyModule>(symbol)), {}};
}

class ExternalCodegenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    runtime::RegisterGlobalFunction(
        std::string("runtime.module.loadbinary_") + kTypeKey,
        runtime::PackedFunc([](const runtime::Args& args, runtime::RetValue* result) {
          auto* reader = static_cast<runtime::ByteReader*>(args[0].AsHandle());
          result->Set(runtime::Module(std::make_shared<MultiplyModule>(reader->ReadString("symbol"))));
        }),
        true);
  }

  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kiln_external_codegen_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    options_.compiler.cache_dir = test::SharedObjectCache();
    options_.external_codegens = &codegens_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::vector<ExternalCodegen> codegens_ = {{"test_multiply", SupportsMultiply, GenerateMultiply}};
  BuildOptions options_;
};

std::string Model(const std::string& compiler, const std::string& function_attrs = "") {
  return R"(fn (%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
    %0 = nn.relu(%x);
    %e = fn [Compiler=")" + compiler + R"(", )" + function_attrs + R"(Primitive=1] (%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]) {
      %0 = multiply(%a, %b);
      %0
    };
    %1 = %e(%0, %y);
    %2 = add(%1, %x);
    %2
  })";
}

const char* kSymbol = "global_symbol=\"tvmgen_default_test_multiply_main_0\", ";

TEST_F(ExternalCodegenTest, ExternalFunctionsRunInTheModuleOfTheirCodegen) {
  ExecutorFactory factory = Build(ir::ParseFunction(Model("test_multiply", kSymbol)), options_);
  ASSERT_EQ(factory.external_modules().size(), 1u);
  EXPECT_STREQ(factory.external_modules()[0].type_key(), kTypeKey);
  EXPECT_STREQ(factory.code().type_key(), "const_loader");
  EXPECT_THAT(factory.graph_json(), HasSubstr("\"func_name\":\"tvmgen_default_test_multiply_main_0\""));

  std::string path = (dir_ / "model.so").string();
  factory.ExportLibrary(path);
  runtime::Module root = runtime::LoadModuleFromFile(path);
  // TVM's tree: factory -> const_loader -> {compiled code, the external module}.
  ASSERT_EQ(root->imports().size(), 1u);
  const runtime::Module& code = root->imports()[0];
  EXPECT_STREQ(code.type_key(), "const_loader");
  ASSERT_EQ(code->imports().size(), 2u);
  EXPECT_TRUE(code->imports()[0]->IsDSOExportable() || code->imports()[0].GetFunction("tvmgen_default_fused_nn_relu").defined());
  EXPECT_STREQ(code->imports()[1].type_key(), kTypeKey);

  auto exec = runtime::GetGraphExecutor(root.GetFunction("default")(runtime::kCPU).AsModule());
  std::vector<float> x = {-1, 2, -3, 4, 0.5f, -6}, y = {2, 3, 4, 5, 6, 7};
  runtime::NDArray xa = runtime::NDArray::Empty({2, 3}, runtime::kFloat32);
  runtime::NDArray ya = runtime::NDArray::Empty({2, 3}, runtime::kFloat32);
  xa.CopyFromBytes(x.data(), 24);
  ya.CopyFromBytes(y.data(), 24);
  exec->SetInput(exec->GetInputIndex("x"), *xa.get());
  exec->SetInput(exec->GetInputIndex("y"), *ya.get());
  exec->Run();
  std::vector<float> expected;
  for (size_t i = 0; i < x.size(); ++i) expected.push_back(std::max(x[i], 0.0f) * y[i] + x[i]);
  EXPECT_EQ(test::ToVector(exec->GetOutput(0)), expected);

  // The three-file form's mod.so carries the external module too.
  factory.ExportThreeFiles((dir_ / "three").string());
  runtime::Module lib = runtime::LoadModuleFromFile((dir_ / "three" / "mod.so").string());
  EXPECT_TRUE(lib.GetFunction("tvmgen_default_test_multiply_main_0", /*query_imports=*/true).defined());
}

TEST_F(ExternalCodegenTest, UnknownAndDisabledCodegensAreClearErrors) {
  auto build_error = [&](const std::string& text, const BuildOptions& options) {
    try {
      Build(ir::ParseFunction(text), options);
    } catch (const runtime::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(build_error(Model("nosuch", kSymbol), options_),
            "there is no external codegen 'nosuch' (known: test_multiply)");
  BuildOptions builtin = options_;
  builtin.external_codegens = nullptr;
  EXPECT_EQ(build_error(Model("nosuch", kSymbol), builtin),
            "there is no external codegen 'nosuch' (known: dnnl, ccompiler)");
#ifdef KILN_TEST_HAS_DNNL
  EXPECT_EQ(build_error(Model("dnnl", kSymbol), builtin), "no error");
#else
  EXPECT_EQ(build_error(Model("dnnl", kSymbol), builtin), "the external codegen 'dnnl' is not enabled in this build");
#endif
  std::vector<ExternalCodegen> with_disabled = {{"off", nullptr, nullptr, nullptr}};
  BuildOptions disabled = options_;
  disabled.external_codegens = &with_disabled;
  EXPECT_EQ(build_error(Model("off", kSymbol), disabled), "the external codegen 'off' is not enabled in this build");
  EXPECT_EQ(build_error(Model("test_multiply"), options_),
            "graph codegen: a function for the external codegen 'test_multiply' has no global_symbol attribute");
}

TEST_F(ExternalCodegenTest, TwoExternalFunctionsWithOneSymbolAreAnError) {
  std::string text = R"(fn (%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
    %e = fn [Compiler="test_multiply", global_symbol="ext", Primitive=1] (%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]) {
      %0 = multiply(%a, %b);
      %0
    };
    %f = fn [Compiler="test_multiply", global_symbol="ext", Primitive=1] (%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]) {
      %0 = multiply(%b, %a);
      %0
    };
    %1 = %e(%x, %y);
    %2 = %f(%1, %y);
    %2
  })";
  try {
    Build(ir::ParseFunction(text), options_);
    FAIL() << "built";
  } catch (const runtime::Error& e) {
    EXPECT_STREQ(e.what(), "graph codegen: two different external functions have the symbol 'ext'");
  }
}

TEST(ExternalCodegenTable, EveryEntryIsEnabledOrSaysItIsNot) {
  for (const ExternalCodegen& codegen : ExternalCodegens()) {
    EXPECT_EQ(codegen.supports != nullptr, codegen.generate != nullptr) << codegen.name;
    if (codegen.enabled()) {
      EXPECT_EQ(&FindExternalCodegen(codegen.name), &codegen);
    } else {
      EXPECT_THROW(FindExternalCodegen(codegen.name), runtime::Error) << codegen.name;
    }
  }
}

}  // namespace
}  // namespace kiln::backend
