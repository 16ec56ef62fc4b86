// Run-time element type to C++ type, for kernels: Dispatch calls a generic function with the
// C++ type of a tensor's DataType, or fails naming the node.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "exec/kernel.h"
#include "ir/data_type.h"
#include "ir/type_list.h"

namespace ovfix::exec {

// Calls fn(TypeTag<T>{}) for the C++ type T of `type` and returns its status; an error that
// names the node when `type` is not in the list.
template <typename... Ts, typename Fn>
absl::Status Dispatch(const KernelContext& ctx, DataType type, TypeList<Ts...>, Fn&& fn) {
  absl::Status status;
  if (!VisitType(type, TypeList<Ts...>(), [&](auto tag) { status = fn(tag); })) {
    return ctx.Error("element type ", std::string(DataTypeName(type)), " is not supported");
  }
  return status;
}

}  // namespace ovfix::exec
