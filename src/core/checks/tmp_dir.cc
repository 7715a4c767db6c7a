// PLACEHOLDER: replaced by the real check (work in progress).
#include "core/checks/check.h"

namespace headroom {

std::vector<Finding> check_tmp(const CheckInput& input) {
  (void)input;
  return {unknown_finding("tmp_dir", "", "not implemented yet")};
}

}  // namespace headroom
