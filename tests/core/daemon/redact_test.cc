#include "daemon/redact.h"

#include <gtest/gtest.h>

namespace headroom::daemon {
namespace {

TEST(RedactUrl, KeepsSchemeHostAndPortOnly) {
  const struct {
    const char* url;
    const char* redacted;
  } kCases[] = {
      {"https://hooks.slack.com/services/T0001/B0001/s3cr3t", "https://hooks.slack.com"},
      {"http://user:pass@host:8080/h?token=abc", "http://host:8080"},
      {"http://user:p@ss@host/h", "http://host"},
      {"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=abc", "https://qyapi.weixin.qq.com"},
      {"http://127.0.0.1:9095#frag", "http://127.0.0.1:9095"},
      {"ftp://b", "ftp://b"},
      {"not a url/with/path?q=1", "not a url"},
  };
  for (const auto& test : kCases) {
    EXPECT_EQ(redact_url(test.url), test.redacted) << test.url;
  }
}

}  // namespace
}  // namespace headroom::daemon
