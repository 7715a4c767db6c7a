// PLACEHOLDER: replaced by the real check (work in progress).
#include "core/checks/check.h"

namespace headroom {

std::vector<Finding> check_shm_stale(const CheckInput& input) {
  (void)input;
  return {unknown_finding("shm_stale", "", "not implemented yet")};
}

}  // namespace headroom
