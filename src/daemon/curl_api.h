#pragma once

// libcurl's entry points, resolved with dlopen on the first webhook. A watch
// without webhook sinks then never maps libcurl and the ~30 TLS, LDAP and
// Kerberos libraries it pulls in (about 5 MiB resident, and several ms of
// relocation at start), which is most of the daemon's footprint otherwise.

#include <curl/curl.h>

#include "core/error.h"

namespace headroom::daemon {

/// The few libcurl functions the webhook sinks call.
struct CurlApi {
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  void (*easy_cleanup)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

/// Loads libcurl.so.4 once (thread-safe) and runs curl_global_init; the same
/// error on every call if it is not installed.
[[nodiscard]] Result<const CurlApi*> load_curl();

}  // namespace headroom::daemon
