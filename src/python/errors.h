#pragma once
// The binding's one way out of a core Error: a Python exception.

#include <utility>

#include "core/error.h"

namespace headroom {

/// Raises the Python exception for `error` (ValueError for bad input,
/// FileNotFoundError, PermissionError, OSError). Needs the GIL.
[[noreturn]] void raise_error(const Error& error);

/// The value of `result`, or raise_error().
template <typename T>
T unwrap(Result<T> result) {
  if (!result) raise_error(result.error());
  return std::move(*result);
}

/// Nothing, or raise_error().
inline void unwrap(const Result<void>& result) {
  if (!result) raise_error(result.error());
}

}  // namespace headroom
