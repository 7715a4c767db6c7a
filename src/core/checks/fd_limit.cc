// PLACEHOLDER: replaced by the real check (work in progress).
#include "core/checks/check.h"

namespace headroom {

std::vector<Finding> check_fd_limit(const CheckInput& input) {
  (void)input;
  return {unknown_finding("fd_limit", "", "not implemented yet")};
}

}  // namespace headroom
