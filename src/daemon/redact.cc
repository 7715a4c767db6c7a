#include "daemon/redact.h"

namespace headroom::daemon {

namespace {

/// The authority of a URL (between "://" and the path), user info included.
struct Split {
  std::string_view scheme;  ///< "https", empty when the text has no "://"
  std::string_view authority;
};

Split split(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return {{}, url.substr(0, url.find_first_of("/?#@"))};
  std::string_view rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  // User info ends at the last '@' of the authority ("user:p@ss@host").
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    rest.remove_prefix(at + 1);
  }
  return {url.substr(0, scheme_end), rest};
}

}  // namespace

std::string redact_url(std::string_view url) {
  const Split parts = split(url);
  if (parts.scheme.empty()) return std::string(parts.authority);
  return std::string(parts.scheme) + "://" + std::string(parts.authority);
}

}  // namespace headroom::daemon
