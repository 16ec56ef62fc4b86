// Registering a helper from a typed C++ function: the arity and the argument conversions
// come from the function's parameters, so a helper's body is only its logic.
//
//   out.push_back(MakeHelper("dim(x, i) -> int", "dim i of x (...)",
//                            [](Value* x, int64_t i) -> absl::StatusOr<int64_t> { ... }));
//
// Parameters, in order: an optional leading `const HelperContext&`, then one per argument:
// Value*, int64_t, std::string, std::vector<int64_t>, DataType (a type name or code) or
// `const HelperValue&` (any value, for helpers that take several kinds). std::optional<T>
// parameters come last and make their arguments optional. An argument of another type gives
// InvalidArgument naming the helper and the argument ("rank: argument 1 must be a value of
// the match, not 3"). The function returns T or absl::StatusOr<T> for any
// T a HelperValue holds.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"
#include "rules/helpers.h"

namespace ovfix::rules {
namespace helper_internal {

using Args = std::span<const HelperValue>;

// What an argument of C++ type T is called in errors.
template <typename T>
constexpr std::string_view kKind = "";
template <>
inline constexpr std::string_view kKind<Value*> = "a value of the match";
template <>
inline constexpr std::string_view kKind<int64_t> = "an integer";
template <>
inline constexpr std::string_view kKind<std::string> = "a string";
template <>
inline constexpr std::string_view kKind<std::vector<int64_t>> = "a list of integers";

// How an argument of C++ type T is read from the rule's values: the HelperValue alternative
// of that type, or InvalidArgument naming the helper and the argument.
template <typename T>
struct Arg {
  static absl::StatusOr<T> Get(std::string_view h, Args a, size_t i) {
    if (auto* v = std::get_if<T>(&a[i])) return *v;
    return absl::InvalidArgumentError(absl::StrCat(std::string(h), ": argument ", i + 1,
                                                   " must be ", std::string(kKind<T>), ", not ",
                                                   DescribeHelperValue(a[i])));
  }
};
template <>
struct Arg<DataType> {
  static absl::StatusOr<DataType> Get(std::string_view h, Args a, size_t i) {
    return DataTypeArg(h, a, i);
  }
};
template <>
struct Arg<HelperValue> {
  static absl::StatusOr<HelperValue> Get(std::string_view, Args a, size_t i) { return a[i]; }
};
template <typename T>
struct Arg<std::optional<T>> {
  static absl::StatusOr<std::optional<T>> Get(std::string_view h, Args a, size_t i) {
    if (i >= a.size()) return std::optional<T>();
    OVFIX_ASSIGN_OR_RETURN(T v, Arg<T>::Get(h, a, i));
    return std::optional<T>(std::move(v));
  }
};

template <typename T>
constexpr bool kIsOptional = false;
template <typename T>
constexpr bool kIsOptional<std::optional<T>> = true;

template <typename T>
constexpr bool kIsStatusOr = false;
template <typename T>
constexpr bool kIsStatusOr<absl::StatusOr<T>> = true;

// The parameter and result types of a lambda or function.
template <typename F>
struct Signature : Signature<decltype(&F::operator())> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) const> {
  using Result = R;
  using Params = std::tuple<std::decay_t<A>...>;
};
template <typename R, typename... A>
struct Signature<R (*)(A...)> {
  using Result = R;
  using Params = std::tuple<std::decay_t<A>...>;
};

// The argument types: the parameters after a leading HelperContext.
template <typename Params>
struct Split {
  static constexpr bool kContext = false;
  using Rest = Params;
};
template <typename... A>
struct Split<std::tuple<HelperContext, A...>> {
  static constexpr bool kContext = true;
  using Rest = std::tuple<A...>;
};

template <typename R>
absl::StatusOr<HelperValue> ToHelperValue(R&& result) {
  if constexpr (kIsStatusOr<std::decay_t<R>>) {
    OVFIX_RETURN_IF_ERROR(result.status());
    return HelperValue(*std::forward<R>(result));
  } else {
    return HelperValue(std::forward<R>(result));
  }
}

template <typename F, typename... A, size_t... I>
absl::StatusOr<HelperValue> Call(const F& f, std::string_view name, const HelperContext& c,
                                 Args args, std::tuple<A...>*, std::index_sequence<I...>) {
  std::tuple<absl::StatusOr<A>...> read{Arg<A>::Get(name, args, I)...};
  absl::Status status;
  ((status.ok() && !std::get<I>(read).ok() ? status = std::get<I>(read).status() : status), ...);
  if (!status.ok()) return status;
  if constexpr (Split<typename Signature<F>::Params>::kContext) {
    return ToHelperValue(f(c, *std::move(std::get<I>(read))...));
  } else {
    return ToHelperValue(f(*std::move(std::get<I>(read))...));
  }
}

template <typename... A>
constexpr int RequiredCount(std::tuple<A...>*) {
  return (0 + ... + (kIsOptional<A> ? 0 : 1));
}

}  // namespace helper_internal

// The helper's name is its signature up to the parenthesis.
template <typename F>
Helper MakeHelper(std::string signature, std::string description, F f) {
  using Params =
      typename helper_internal::Split<typename helper_internal::Signature<F>::Params>::Rest;
  constexpr int kCount = static_cast<int>(std::tuple_size_v<Params>);
  std::string name = signature.substr(0, signature.find('('));
  Helper h;
  h.name = name;
  h.min_args = helper_internal::RequiredCount(static_cast<Params*>(nullptr));
  h.max_args = kCount;
  h.signature = std::move(signature);
  h.description = std::move(description);
  h.fn = [name = std::move(name), f = std::move(f)](
             const HelperContext& c,
             std::span<const HelperValue> args) -> absl::StatusOr<HelperValue> {
    // Rule files are checked for arity when read; this guards the other callers.
    if (args.size() <
            static_cast<size_t>(helper_internal::RequiredCount(static_cast<Params*>(nullptr))) ||
        args.size() > static_cast<size_t>(kCount)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": takes ", kCount, " argument(s), got ", args.size()));
    }
    return helper_internal::Call(f, name, c, args, static_cast<Params*>(nullptr),
                                 std::make_index_sequence<kCount>());
  };
  return h;
}

}  // namespace ovfix::rules
