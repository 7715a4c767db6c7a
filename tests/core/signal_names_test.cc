#include "core/signal_names.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace headroom {
namespace {

TEST(SignalNames, NamesAndParsesBothWays) {
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGRTMIN + 1), "signal " + std::to_string(SIGRTMIN + 1));
  EXPECT_EQ(parse_signal("SIGUSR1").value_or(0), SIGUSR1);
  EXPECT_EQ(parse_signal("usr2").value_or(0), SIGUSR2);
  EXPECT_EQ(parse_signal("15").value_or(0), SIGTERM);
}

TEST(SignalNames, RejectsWhatIsNoSignal) {
  EXPECT_FALSE(parse_signal("SIGNOPE"));
  EXPECT_FALSE(parse_signal("0"));
  EXPECT_FALSE(parse_signal("10x"));
  EXPECT_FALSE(parse_signal(""));
}

}  // namespace
}  // namespace headroom
