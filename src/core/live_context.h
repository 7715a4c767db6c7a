#pragma once
// The Context of the live host as a front end sees it: the real syscalls, an
// environment and working directory handed in by the caller (the CLI reads
// environ and getcwd; the Python module passes os.environ and os.getcwd()).

#include <filesystem>
#include <map>
#include <string>

#include "core/context.h"

namespace headroom {

/// A Context over `root` ("/" for the live host) with the real syscalls, which live
/// for the whole program, and the job's environment and working directory.
[[nodiscard]] Context live_context(std::map<std::string, std::string> environment,
                                   std::filesystem::path working_directory,
                                   std::filesystem::path root = "/");

}  // namespace headroom
