// The import blob of a library (`__tvm_dev_mblob` payload, tvm-formats.md A.3), read by
// ProcessModuleBlob and written by SerializeModuleBlob: the bytes written match the documented
// layout (built by hand here), blobs in TVM's own order and in the layout before import trees
// load into the right module tree, and truncated, unknown, garbage or badly linked blobs are
// rejected with an Error naming the problem, never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/graph_executor_factory.h"
#include "runtime/module.h"
#include "runtime/params.h"

namespace kiln::runtime {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

// Stands for the compiled code of the library (the `_lib` entries).
class FakeLibrary final : public ModuleNode {
 public:
  const char* type_key() const override { return "library"; }
  bool IsDSOExportable() const override { return true; }
  PackedFunc GetFunction(const std::string&) override { return PackedFunc(); }
};

class Opaque final : public ModuleNode {
 public:
  const char* type_key() const override { return "opaque"; }
  PackedFunc GetFunction(const std::string&) override { return PackedFunc(); }
};

// A module with a binary form: its name as a string.
class Serializable final : public ModuleNode {
 public:
  explicit Serializable(std::string key) : key_(std::move(key)) {}
  const char* type_key() const override { return key_.c_str(); }
  bool IsBinarySerializable() const override { return true; }
  void SaveToBinary(ByteWriter& writer) const override { writer.WriteString("payload of " + key_); }
  PackedFunc GetFunction(const std::string&) override { return PackedFunc(); }

 private:
  std::string key_;
};

const char* const kGraph =
    R"({"nodes": [{"op": "null", "name": "p", "inputs": []}], "arg_nodes": [0], "heads": [[0, 0, 0]],)"
    R"( "node_row_ptr": [0, 1], "attrs": {"shape": ["list_shape", [[2]]], "dltype": ["list_str", ["float32"]],)"
    R"( "storage_id": ["list_int", [0]]}})";

// Little-endian bytes appended one at a time, independently of kiln's ByteWriter.
struct Bytes {
  std::string data;
  Bytes& U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) data.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  Bytes& Str(const std::string& s) { U64(s.size()); data += s; return *this; }
  Bytes& U64s(const std::vector<uint64_t>& items) {
    U64(items.size());
    for (uint64_t item : items) U64(item);
    return *this;
  }
  Bytes& Raw(const std::string& s) { data += s; return *this; }
  Bytes& Tree(const std::vector<uint64_t>& row_ptr, const std::vector<uint64_t>& children) {
    return Str("_import_tree").U64s(row_ptr).U64s(children);
  }
};

// The A.2 record of a float32 [2] array holding 1.0f, 2.0f.
std::string ParamRecord() {
  Bytes b;
  b.U64(0xDD5E40F096B4A13FULL).U64(0);
  b.Raw(std::string("\x01\0\0\0\0\0\0\0\x01\0\0\0\x02\x20\x01\0", 16));  // CPU 0, ndim 1, float32
  b.U64(2).U64(8);
  return b.Raw(std::string("\0\0\x80\x3f\0\0\0\x40", 8)).data;
}

// A GraphExecutorFactory entry payload as TVM v0.19 writes it (GraphExecutorFactory::SaveToBinary):
// graph JSON, the parameter count, the names as a vector, the arrays (no list magic), module name.
std::string FactoryPayload(const std::string& json = kGraph, const std::string& name = "default") {
  return Bytes().Str(json).U64(1).U64(1).Str("p").Raw(ParamRecord()).Str(name).data;
}

NDArray Param() {
  NDArray array = NDArray::Empty({2}, kFloat32);
  static_cast<float*>(array.data())[0] = 1.0f;
  static_cast<float*>(array.data())[1] = 2.0f;
  return array;
}

Module Lib() { return Module(std::make_shared<FakeLibrary>()); }

Module Factory(const Module& lib, const std::string& name = "default") {
  return CreateGraphExecutorFactory(kGraph, {{"p", Param()}}, name, lib);
}

std::string BlobError(const std::string& payload) {
  try {
    ProcessModuleBlob(payload, Lib());
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ModuleBlob, SerializeWritesTheDocumentedLayout) {
  Module lib = Lib();
  std::string blob = SerializeModuleBlob(Factory(lib));
  // As TVM writes it: two modules (factory = 0, the library = 1), then the tree, in which
  // module 0 imports module 1.
  std::string expected = Bytes()
                             .U64(3)
                             .Str("GraphExecutorFactory")
                             .Raw(FactoryPayload())
                             .Str("_lib")
                             .Tree({0, 1, 1}, {1})
                             .data;
  EXPECT_EQ(blob, expected);
}

TEST(ModuleBlob, LoadsTvmOrderWithTheImportTreeLast) {
  // TVM's exporter writes the modules first and `_import_tree` last.
  std::string blob = Bytes()
                         .U64(3)
                         .Str("GraphExecutorFactory")
                         .Raw(FactoryPayload(kGraph, "mod"))
                         .Str("_lib")
                         .Tree({0, 1, 1}, {1})
                         .data;
  Module lib = Lib();
  Module root = ProcessModuleBlob(blob, lib);
  EXPECT_STREQ(root.type_key(), "GraphExecutorFactory");
  ASSERT_EQ(root->imports().size(), 1u);
  EXPECT_EQ(root->imports()[0].get(), lib.get());
  EXPECT_TRUE(lib->imports().empty());
  EXPECT_EQ(root.GetFunction("get_graph_json")().AsString(), kGraph);
  EXPECT_TRUE(root.GetFunction("mod"));  // the module name from the payload
  EXPECT_FALSE(root.GetFunction("default"));
  NamedArrays params = LoadParams(root.GetFunction("get_graph_params")().string_payload());
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].first, "p");
  EXPECT_EQ(static_cast<const float*>(params[0].second.data())[1], 2.0f);
}

TEST(ModuleBlob, WriteThenReadGivesTheSameTree) {
  Module lib = Lib();
  std::string blob = SerializeModuleBlob(Factory(lib));
  Module other_lib = Lib();
  Module root = ProcessModuleBlob(blob, other_lib);
  ASSERT_EQ(root->imports().size(), 1u);
  EXPECT_EQ(root->imports()[0].get(), other_lib.get());
  EXPECT_EQ(SerializeModuleBlob(root), blob);
}

TEST(ModuleBlob, SerializeNumbersModulesAsTvm) {
  // The shape of a BYOC library: factory -> constants -> {compiled code, external module}. TVM's
  // ModuleSerializer numbers the modules outside compiled code depth first, taking the last
  // import pushed first (factory 0, constants 1, external 2), then the library (3).
  Module lib = Lib();
  Module constants(std::make_shared<Serializable>("const_loader"));
  constants->Import(lib);
  constants->Import(Module(std::make_shared<Serializable>("dnnl_json")));
  Module factory = Factory(Module());
  factory->Import(constants);
  std::string expected = Bytes()
                             .U64(5)
                             .Str("GraphExecutorFactory").Raw(FactoryPayload())
                             .Str("const_loader").Str("payload of const_loader")
                             .Str("dnnl_json").Str("payload of dnnl_json")
                             .Str("_lib")
                             .Tree({0, 1, 3, 3, 3}, {1, 3, 2})
                             .data;
  EXPECT_EQ(SerializeModuleBlob(factory), expected);
}

TEST(ModuleBlob, SharedModulesFormADag) {
  // a imports the library and b; b imports the same library: one `_lib` entry, used twice. TVM
  // numbers the modules outside compiled code first (a = 0, b = 1), then the library (2).
  Module lib = Lib();
  Module b = Factory(lib, "b");
  Module a = Factory(lib, "a");
  a->Import(b);
  std::string blob = SerializeModuleBlob(a);
  std::string expected = Bytes()
                             .U64(4)
                             .Str("GraphExecutorFactory").Raw(FactoryPayload(kGraph, "a"))
                             .Str("GraphExecutorFactory").Raw(FactoryPayload(kGraph, "b"))
                             .Str("_lib")
                             .Tree({0, 2, 3, 3}, {2, 1, 2})
                             .data;
  EXPECT_EQ(blob, expected);

  Module loaded_lib = Lib();
  Module root = ProcessModuleBlob(blob, loaded_lib);
  ASSERT_EQ(root->imports().size(), 2u);
  EXPECT_EQ(root->imports()[0].get(), loaded_lib.get());
  const Module& loaded_b = root->imports()[1];
  EXPECT_TRUE(loaded_b.GetFunction("b"));
  ASSERT_EQ(loaded_b->imports().size(), 1u);
  EXPECT_EQ(loaded_b->imports()[0].get(), loaded_lib.get());
  EXPECT_TRUE(root.GetFunction("b", /*query_imports=*/true));
}

// Counts the lookups it answers; knows only `name`.
class CountingModule final : public ModuleNode {
 public:
  explicit CountingModule(std::string name) : name_(std::move(name)) {}
  const char* type_key() const override { return "counting"; }
  PackedFunc GetFunction(const std::string& name) override {
    ++lookups;
    return name == name_ ? PackedFunc([](const Args&, RetValue*) {}) : PackedFunc();
  }
  int lookups = 0;

 private:
  std::string name_;
};

TEST(ModuleBlob, LookupsThroughSharedImportsVisitEachModuleOnce) {
  // A ladder of 60 rungs where each module imports the next one twice: searched as a tree,
  // a failed lookup would take 2^60 steps.
  std::vector<std::shared_ptr<CountingModule>> rungs;
  for (int i = 0; i < 60; ++i) rungs.push_back(std::make_shared<CountingModule>("f" + std::to_string(i)));
  for (int i = 0; i + 1 < 60; ++i) {
    rungs[i]->Import(Module(rungs[i + 1]));
    rungs[i]->Import(Module(rungs[i + 1]));
  }
  Module root(rungs[0]);
  EXPECT_FALSE(root.GetFunction("missing", /*query_imports=*/true));
  for (const auto& rung : rungs) EXPECT_EQ(rung->lookups, 1);
  EXPECT_TRUE(root.GetFunction("f59", /*query_imports=*/true));
  EXPECT_FALSE(root.GetFunction("f59", /*query_imports=*/false));
}

TEST(ModuleBlob, LoadsTheLayoutBeforeImportTrees) {
  // No `_import_tree`: every module becomes an import of the library, which is the root.
  for (const char* key : {"GraphExecutorFactory", "GraphRuntimeFactory"}) {
    Module lib = Lib();
    Module root = ProcessModuleBlob(Bytes().U64(2).Str("_lib").Str(key).Raw(FactoryPayload()).data, lib);
    EXPECT_EQ(root.get(), lib.get()) << key;
    ASSERT_EQ(lib->imports().size(), 1u) << key;
    EXPECT_STREQ(lib->imports()[0].type_key(), "GraphExecutorFactory");
    EXPECT_TRUE(root.GetFunction("get_graph_json", true));
  }
  Module lib = Lib();
  EXPECT_EQ(ProcessModuleBlob(Bytes().U64(0).data, lib).get(), lib.get());
  EXPECT_TRUE(lib->imports().empty());
}

TEST(ModuleBlob, RefusesToSerializeWhatHasNoBinaryForm) {
  Module root = Factory(Lib());
  root->Import(Module(std::make_shared<Opaque>()));
  try {
    SerializeModuleBlob(root);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("module of type 'opaque' cannot be exported into a library"));
  }
}

TEST(ModuleBlob, RejectsEveryTruncation) {
  std::string blob = SerializeModuleBlob(Factory(Lib()));
  for (size_t size = 0; size < blob.size(); ++size) {
    std::string message = BlobError(blob.substr(0, size));
    EXPECT_THAT(message, HasSubstr("library import blob (__tvm_dev_mblob)")) << size;
    EXPECT_THAT(message, AnyOf(HasSubstr("truncated"), HasSubstr("claims"))) << size;
  }
  EXPECT_THAT(BlobError(""), HasSubstr("truncated: entry count needs 8 bytes but only 0 are left (at byte 0)"));
}

TEST(ModuleBlob, RejectsUnknownTypeKeys) {
  for (const char* key : {"cuda", "tensorrt", "", "_LIB", "GraphExecutorFactory2"}) {
    std::string blob = Bytes().U64(2).Str("_lib").Str(key).Str("device code").data;
    EXPECT_THAT(BlobError(blob),
                HasSubstr(std::string("module type '") + key + "' is not supported by this build of kiln"));
  }
}

// Types this build does not list load through a global runtime.module.loadbinary_<key> (TVM's
// convention); one that returns no module is named.
TEST(ModuleBlob, LoadsUnlistedTypesThroughTheirGlobalLoader) {
  RegisterGlobalFunction("runtime.module.loadbinary_kiln_test_text", PackedFunc([](const Args& args, RetValue* rv) {
    auto* reader = static_cast<ByteReader*>(args[0].AsHandle());
    std::string text = reader->ReadString("text");
    rv->Set(text == "none" ? Module() : Module(std::make_shared<Opaque>()));
  }), true);
  std::string blob = Bytes().U64(2).Str("_lib").Str("kiln_test_text").Str("payload").data;
  Module root = ProcessModuleBlob(blob, Lib());
  ASSERT_EQ(root->imports().size(), 1u);
  EXPECT_STREQ(root->imports()[0].type_key(), "opaque");
  std::string none = Bytes().U64(2).Str("_lib").Str("kiln_test_text").Str("none").data;
  EXPECT_THAT(BlobError(none), HasSubstr("the loader of module type 'kiln_test_text' returned no module"));
}

TEST(ModuleBlob, RejectsBadCountsAndTrailingBytes) {
  EXPECT_THAT(BlobError(Bytes().U64(uint64_t{1} << 40).Str("_lib").data),
              HasSubstr("entry count claims 1099511627776 elements"));
  EXPECT_THAT(BlobError(Bytes().U64(2).Str("_lib").data), HasSubstr("entry count claims 2 elements, more than the 12 bytes"));
  EXPECT_THAT(BlobError(Bytes().U64(2).Str("_lib").Raw("1234567").data),
              HasSubstr("truncated: entry type key needs 8 bytes but only 7 are left"));
  EXPECT_THAT(BlobError(Bytes().U64(1).Str("_lib").Raw("abc").data),
              HasSubstr("3 bytes are left after the last entry"));
  EXPECT_THAT(BlobError(Bytes().U64(1).U64(uint64_t{1} << 50).Raw("_lib").data),
              HasSubstr("entry type key claims 1125899906842624 elements"));
  EXPECT_THAT(BlobError(Bytes().U64(2).Str("_lib").Str("_import_tree").U64(uint64_t{1} << 60).data),
              HasSubstr("import tree row pointers claims"));
}

TEST(ModuleBlob, RejectsBadImportTrees) {
  std::string factory = Bytes().Str("GraphExecutorFactory").Raw(FactoryPayload()).data;
  std::string lib = Bytes().Str("_lib").data;
  struct Case { std::string blob; const char* message; };
  const Case cases[] = {
      {Bytes().U64(4).Raw(factory).Raw(lib).Tree({0, 1, 1}, {1}).Tree({0, 1, 1}, {1}).data, "more than one import tree"},
      {Bytes().U64(1).Tree({0}, {}).data, "import tree without modules"},
      {Bytes().U64(3).Raw(factory).Raw(lib).Tree({0, 1}, {1}).data, "import tree has 2 row pointers for 2 modules (expected 3)"},
      {Bytes().U64(3).Raw(factory).Raw(lib).Tree({0, 1, 1, 1}, {1}).data, "has 4 row pointers for 2 modules"},
      {Bytes().U64(3).Raw(factory).Raw(lib).Tree({1, 1, 1}, {1}).data, "row pointers do not span its child list"},
      {Bytes().U64(3).Raw(factory).Raw(lib).Tree({0, 1, 2}, {1}).data, "row pointers do not span its child list"},
      {Bytes().U64(3).Raw(factory).Raw(lib).Tree({0, 5, 1}, {1}).data, "import tree row pointers decrease"},
      {Bytes().U64(3).Raw(factory).Raw(lib).Tree({0, 1, 1}, {7}).data, "import tree: module 0 imports module 7 but there are only 2"},
      {Bytes().U64(3).Raw(factory).Raw(factory).Tree({0, 1, 2}, {1, 0}).data, "import tree has a cycle"},
      {Bytes().U64(3).Raw(factory).Raw(lib).Tree({0, 1, 1}, {0}).data, "import tree has a cycle"},  // itself
      // Two `_lib` entries are one library module: 0 -> 1 -> 2 would make it import itself.
      {Bytes().U64(4).Raw(lib).Raw(factory).Raw(lib).Tree({0, 1, 2, 2}, {1, 2}).data, "more than one '_lib' entry"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(BlobError(c.blob), HasSubstr(c.message)) << c.message;
    EXPECT_THAT(BlobError(c.blob), HasSubstr("library import blob (__tvm_dev_mblob)")) << c.message;
  }

  // A chain of 66 modules is deeper than lookups through imports are allowed to recurse.
  Bytes deep;
  deep.U64(67);
  std::vector<uint64_t> row_ptr = {0}, children;
  for (uint64_t m = 0; m < 66; ++m) {
    deep.Raw(factory);
    if (m + 1 < 66) children.push_back(m + 1);
    row_ptr.push_back(children.size());
  }
  EXPECT_THAT(BlobError(deep.Tree(row_ptr, children).data), HasSubstr("import tree is deeper than 64 levels"));
}

TEST(ModuleBlob, RejectsBadFactoryPayloads) {
  auto with_payload = [](const std::string& payload) {
    return Bytes().U64(2).Str("_lib").Str("GraphExecutorFactory").Raw(payload).data;
  };
  EXPECT_THAT(BlobError(with_payload(FactoryPayload("{not json"))), HasSubstr("graph JSON: not valid JSON"));
  EXPECT_THAT(BlobError(with_payload(FactoryPayload(R"({"nodes": []})"))), HasSubstr("graph JSON: top level: missing field"));
  EXPECT_THAT(BlobError(with_payload(Bytes().Str(kGraph).U64(1).U64s({}).Raw(ParamRecord()).data)),
              HasSubstr("factory counts 1 parameters but lists 0 names"));
  EXPECT_THAT(BlobError(with_payload(Bytes().Str(kGraph).U64(1000).U64(1).Str("p").Raw(ParamRecord()).data)),
              HasSubstr("factory parameter count claims 1000 elements"));
  EXPECT_THAT(BlobError(with_payload(Bytes().Str(kGraph).U64(2).U64(2).Str("p").Str("p").Raw(ParamRecord())
                                         .Raw(ParamRecord()).Str("default").data)),
              HasSubstr("factory parameter 'p' appears twice"));
  std::string bad_record = ParamRecord();
  bad_record[0] ^= 1;
  EXPECT_THAT(BlobError(with_payload(Bytes().Str(kGraph).U64(1).U64(1).Str("p").Raw(bad_record).Str("default").data)),
              HasSubstr("bad array magic"));
  EXPECT_THAT(BlobError(with_payload(Bytes().Str(kGraph).U64(1).U64(1).Str("p").Raw(bad_record).Str("default").data)),
              HasSubstr("in factory parameter 'p'"));
  EXPECT_THAT(BlobError(with_payload(Bytes().Str(kGraph).U64(1).U64(1).Str("p").Raw(ParamRecord()).data)),
              HasSubstr("truncated: factory module name"));
}

TEST(ModuleBlob, NamesTheOldFactoryLayout) {
  // kiln before 0.2 wrote the names before their count, which TVM cannot read. Such libraries get
  // an error naming the layout, with one parameter, several, and a name as long as the count.
  auto old_payload = [](const std::vector<std::string>& names) {
    Bytes b;
    b.Str(kGraph).U64(names.size());
    for (const std::string& name : names) b.Str(name);
    b.U64(names.size());
    for (size_t i = 0; i < names.size(); ++i) b.Raw(ParamRecord());
    return b.Str("default").data;
  };
  for (const auto& names : std::vector<std::vector<std::string>>{{"p"}, {"p0", "p1"}, {"weight", "b", "c"}}) {
    std::string blob = Bytes().U64(2).Str("_lib").Str("GraphExecutorFactory").Raw(old_payload(names)).data;
    EXPECT_THAT(BlobError(blob), HasSubstr("the factory's parameter names come before their count, the layout of "
                                           "kiln before 0.2 that TVM cannot read"));
  }
  // Without parameters both layouts are the same bytes, and load.
  std::string empty = Bytes().Str(kGraph).U64(0).U64(0).Str("default").data;
  EXPECT_NO_THROW(ProcessModuleBlob(Bytes().U64(2).Str("_lib").Str("GraphExecutorFactory").Raw(empty).data, Lib()));
}

TEST(ModuleBlob, FactoryWithoutCodeModuleFailsWhenUsed) {
  // The tree gives the factory no imports: loading works, creating an executor says why not.
  std::string blob = Bytes().U64(3).Str("GraphExecutorFactory").Raw(FactoryPayload()).Str("_lib")
                         .Tree({0, 0, 0}, {}).data;
  Module root = ProcessModuleBlob(blob, Lib());
  EXPECT_TRUE(root->imports().empty());
  try {
    root.GetFunction("default")(kCPU);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("GraphExecutorFactory 'default' has no code module imported"));
  }
}

TEST(ModuleBlob, GarbageIsRejectedOrLoaded) {
  // Each byte of a good blob changed in turn, and pseudo-random payloads: any result other than
  // a module tree or an Error (another exception, a crash under the sanitizers) fails.
  std::string blob = SerializeModuleBlob(Factory(Lib()));
  auto load = [](const std::string& payload, const std::string& what) {
    try {
      Module root = ProcessModuleBlob(payload, Lib());
      EXPECT_TRUE(root.defined()) << what;
      root.GetFunction("get_graph_json", true);
    } catch (const Error& e) {
      EXPECT_GT(std::string(e.what()).size(), 10u) << what;
    }
  };
  for (size_t i = 0; i < blob.size(); ++i) {
    for (int delta : {1, 0x80, 0xff}) {
      std::string damaged = blob;
      damaged[i] = static_cast<char>(damaged[i] ^ delta);
      load(damaged, "byte " + std::to_string(i));
    }
  }
  uint64_t state = 0x9E3779B97F4A7C15ULL;
  for (int n = 0; n < 300; ++n) {
    std::string noise = Bytes().U64(1 + n % 4).data;  // small entry counts get past the first field
    for (int i = 0; i < n; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      noise.push_back(static_cast<char>(state >> 56));
    }
    EXPECT_THAT(BlobError(noise), HasSubstr("library import blob")) << n;
  }
}

}  // namespace
}  // namespace kiln::runtime
