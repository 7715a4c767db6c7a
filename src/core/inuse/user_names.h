#pragma once
// /etc/passwd under the root prefix: uid -> login name, for `who` and `clean`
// output. Doc: passwd(5). Quirks: NSS sources (LDAP, sssd) are not consulted;
// a uid without a line is shown as its number, as ps does.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <unordered_map>

#include "core/context.h"

namespace headroom {

/// Parses passwd(5) text into uid -> name; malformed lines are skipped.
[[nodiscard]] std::unordered_map<uid_t, std::string> parse_passwd(std::string_view text);

/// Resolves uids to names from <root>/etc/passwd, read once on first use.
class UserNames {
 public:
  explicit UserNames(const Context& context) : context_(context) {}
  /// The login name of `uid`, or the uid as decimal text.
  [[nodiscard]] std::string name(uid_t uid);

 private:
  const Context& context_;
  bool loaded_ = false;
  std::unordered_map<uid_t, std::string> names_;
};

}  // namespace headroom
