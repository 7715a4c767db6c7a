// PLACEHOLDER: replaced by the real check (work in progress).
#include "core/checks/check.h"

namespace headroom {

std::vector<Finding> check_kernel_oom(const CheckInput& input) {
  (void)input;
  return {unknown_finding("kernel_oom", "", "not implemented yet")};
}

}  // namespace headroom
