// dlopen of libcurl (see curl_api.h for why). The soname is the one every
// Debian/Ubuntu/RHEL libcurl package ships; the library is never unloaded.

#include "daemon/curl_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>

namespace headroom::daemon {

namespace {

constexpr const char* kSoname = "libcurl.so.4";

template <typename Function>
bool resolve(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(::dlsym(library, name));
  return function != nullptr;
}

Result<CurlApi> open_curl() {
  void* library = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return fail(Error{Error::Code::kUnsupported,
                      fmt::format("webhook sinks need libcurl ({}): {}", kSoname, ::dlerror())});
  }
  CurlApi api{};
  using GlobalInit = CURLcode (*)(long);
  GlobalInit global_init = nullptr;
  const bool complete = resolve(library, "curl_global_init", global_init) &&
                        resolve(library, "curl_easy_init", api.easy_init) &&
                        resolve(library, "curl_easy_setopt", api.easy_setopt) &&
                        resolve(library, "curl_easy_perform", api.easy_perform) &&
                        resolve(library, "curl_easy_getinfo", api.easy_getinfo) &&
                        resolve(library, "curl_easy_cleanup", api.easy_cleanup) &&
                        resolve(library, "curl_easy_strerror", api.easy_strerror) &&
                        resolve(library, "curl_slist_append", api.slist_append) &&
                        resolve(library, "curl_slist_free_all", api.slist_free_all);
  if (!complete) {
    return fail(Error{Error::Code::kUnsupported,
                      fmt::format("{} lacks a function headroom needs: {}", kSoname, ::dlerror())});
  }
  if (const CURLcode code = global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
    return fail(
        Error{Error::Code::kIo, fmt::format("curl_global_init: {}", api.easy_strerror(code))});
  }
  return api;
}

}  // namespace

Result<const CurlApi*> load_curl() {
  static const Result<CurlApi> kApi = open_curl();
  if (!kApi) return fail(kApi.error());
  return &*kApi;
}

}  // namespace headroom::daemon
