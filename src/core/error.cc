#include "core/error.h"

#include <cerrno>
#include <cstring>

namespace headroom {

Error Error::from_errno(int errnum, const std::string& path) {
  Code code = Code::kIo;
  switch (errnum) {
    case ENOENT:
    case ENOTDIR:
    case ESRCH:
      code = Code::kNotFound;
      break;
    case EACCES:
    case EPERM:
      code = Code::kPermissionDenied;
      break;
    case EINVAL:
      code = Code::kInvalidArgument;
      break;
    default:
      break;
  }
  return {code, path + ": " + std::strerror(errnum)};
}

}  // namespace headroom
