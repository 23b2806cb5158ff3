// A kernel's parameter struct (kernels.h) as a plan holds it: the planner fills the struct itself,
// and the plan keeps its fields in order, read through the struct's Fields(). A struct whose
// Fields() misses a field does not compile here, and one that a planner fills without every field
// does not compile either (-Werror=missing-field-initializers on the compiler's libraries).
#pragma once

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::backend {

struct KernelParams {
  using Value = std::variant<int64_t, float, bool>;
  std::string type;  // the struct's name in kiln::kernels
  std::vector<Value> fields;  // in declaration order
  // The field that counts whole samples along axis 0 of the kernel's data and result (images, or
  // images x channels), named by the struct's kSampleField: a kernel of such a struct runs a batch
  // in one call with that field times the samples. Empty: none.
  std::string sample_field;
};

namespace detail {

// Converts to any field's type: counts an aggregate's fields by how many it can be initialized
// from.
struct AnyField {
  template <class T>
  constexpr operator T() const;  // declared only: used in unevaluated contexts
};

template <class T, class... A>
constexpr auto BraceInitializable(int) -> decltype(T{std::declval<A>()...}, true) {
  return true;
}
template <class T, class... A>
constexpr bool BraceInitializable(...) {
  return false;
}

template <class T, class... A>
constexpr size_t FieldCount() {
  if constexpr (BraceInitializable<T, A..., AnyField>(0)) {
    return FieldCount<T, A..., AnyField>();
  } else {
    return sizeof...(A);
  }
}

template <class P, class = void>
struct SampleFieldOf {
  static constexpr const char* kName = "";
};
template <class P>
struct SampleFieldOf<P, std::void_t<decltype(P::kSampleField)>> {
  static constexpr const char* kName = P::kSampleField;
};

}  // namespace detail

// The struct as a C++ expression: "kiln::kernels::Conv2DParams{1, 64, ...}" (emitter.cc).
std::string ParamsLiteral(const KernelParams& params);

template <class P>
KernelParams TypedParams(const char* type, const P& params) {
  static_assert(std::is_aggregate_v<P>, "kernel parameter structs are aggregates");
  static_assert(detail::FieldCount<P>() == std::tuple_size_v<decltype(params.Fields())>,
                "the parameter struct's Fields() must list every field");
  KernelParams typed{type, {}, detail::SampleFieldOf<P>::kName};
  std::apply(
      [&](const auto&... field) {
        (typed.fields.push_back(KernelParams::Value(std::in_place_type<std::decay_t<decltype(field)>>, field)), ...);
      },
      params.Fields());
  return typed;
}

}  // namespace kiln::backend
