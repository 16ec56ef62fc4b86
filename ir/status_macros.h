// Propagating errors without the hand-written `if (!x.ok()) return x.status();`.
//
//   OVFIX_RETURN_IF_ERROR(graph.TopologicalSort());
//   OVFIX_ASSIGN_OR_RETURN(Tensor t, ReadTensor(path));
//   OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, LoadModel(path));
//
// ASSIGN_OR_RETURN declares (or assigns) its left-hand side from the StatusOr's value and
// returns the status from the enclosing function when it is not ok. The expression is
// evaluated once. Both work in any function returning absl::Status or absl::StatusOr<T>.
#ifndef OVFIX_IR_STATUS_MACROS_H_
#define OVFIX_IR_STATUS_MACROS_H_

#include <utility>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define OVFIX_RETURN_IF_ERROR(expr)                                   \
  do {                                                                \
    if (::absl::Status ovfix_status_ = (expr); !ovfix_status_.ok()) { \
      return ovfix_status_;                                           \
    }                                                                 \
  } while (false)

#define OVFIX_STATUS_CONCAT_INNER_(a, b) a##b
#define OVFIX_STATUS_CONCAT_(a, b) OVFIX_STATUS_CONCAT_INNER_(a, b)

#define OVFIX_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                 \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) {               \
    return std::move(statusor).status();                  \
  }                                                       \
  lhs = *std::move(statusor)

#define OVFIX_ASSIGN_OR_RETURN(lhs, expr) \
  OVFIX_ASSIGN_OR_RETURN_IMPL_(OVFIX_STATUS_CONCAT_(ovfix_statusor_, __LINE__), lhs, expr)

#endif  // OVFIX_IR_STATUS_MACROS_H_
