#include "core/inuse/user_names.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

TEST(ParsePasswd, MapsUidToFirstName) {
  const auto names = parse_passwd(
      "root:x:0:0:root:/root:/bin/bash\n"
      "# comment without colons\n"
      "alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash\n"
      "alias:x:1000:1000::/:/bin/sh\n"
      "broken:x:notanumber:0::/:\n"
      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin");
  EXPECT_EQ(names.at(0), "root");
  EXPECT_EQ(names.at(1000), "alice");
  EXPECT_EQ(names.at(65534), "nobody");
  EXPECT_EQ(names.size(), 3u);
}

}  // namespace
}  // namespace headroom
