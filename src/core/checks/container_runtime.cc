// PLACEHOLDER: replaced by the real check (work in progress).
#include "core/checks/check.h"

namespace headroom {

std::vector<Finding> check_container_runtime(const CheckInput& input) {
  (void)input;
  return {unknown_finding("container_runtime", "", "not implemented yet")};
}

}  // namespace headroom
