// PLACEHOLDER: replaced by the real check (work in progress).
#include "core/checks/check.h"

namespace headroom {

std::vector<Finding> check_disk_space(const CheckInput& input) {
  (void)input;
  return {unknown_finding("disk_space", "", "not implemented yet")};
}

}  // namespace headroom
