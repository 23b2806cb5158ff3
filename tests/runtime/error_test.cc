// Errors: where they say they happened, and an exception that is not kiln's turned into an
// InternalError that says where (ReportingBugsAt).
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <map>
#include <new>

namespace kiln::runtime {
namespace {

TEST(Error, LocationPartsComeBeforeTheMessageAndInnerOnesStay) {
  Error e("is not supported", {"", "node 'a' (Relu)", ""});
  e.AddLocation({"model.onnx", "node 'outer' (If)", "input 1"});
  EXPECT_STREQ(e.what(), "model.onnx: node 'a' (Relu): input 1: is not supported");
  EXPECT_EQ(e.message(), "is not supported");
}

TEST(Error, ReportingBugsAtTurnsForeignExceptionsIntoInternalErrors) {
  auto where = [] { return std::string("converting node 'c' (Concat)"); };
  EXPECT_EQ(ReportingBugsAt(where, [] { return 7; }), 7);
  try {
    ReportingBugsAt(where, [] { return std::map<int, int>().at(3); });
    ADD_FAILURE() << "no exception";
  } catch (const InternalError& e) {
    EXPECT_STREQ(e.what(), "internal error (a bug in kiln, please report it): converting node 'c' (Concat): map::at");
  }
  // kiln's own errors and running out of memory pass as they are.
  EXPECT_THROW(ReportingBugsAt(where, [] { Fail("bad attribute"); }), Error);
  try {
    ReportingBugsAt(where, [] { Fail("bad attribute"); });
  } catch (const InternalError&) {
    ADD_FAILURE() << "a user error became an internal error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "bad attribute");
  }
  EXPECT_THROW(ReportingBugsAt(where, [] { throw std::bad_alloc(); }), std::bad_alloc);
}

}  // namespace
}  // namespace kiln::runtime
