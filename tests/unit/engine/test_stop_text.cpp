// Stop-string hold-back: streamed pieces concatenate to the cut text.
#include <gtest/gtest.h>

#include "engine/stop_text.h"

using namespace stride;

TEST(StopText, HoldsBackPossibleStopPrefix) {
  StopText s({"END"});
  EXPECT_FALSE(s.append("hello E"));
  EXPECT_EQ(s.take_safe(), "hello ");  // "E" may start "END"
  EXPECT_FALSE(s.append("x"));
  EXPECT_EQ(s.take_safe(), "Ex");
  EXPECT_FALSE(s.append(" EN"));
  EXPECT_EQ(s.take_safe(), " ");
  EXPECT_TRUE(s.append("D tail"));
  EXPECT_EQ(s.take_safe(), "");
  EXPECT_EQ(s.text(), "hello Ex ");
}

TEST(StopText, StreamEqualsWholeForEverySplit) {
  const std::string text = "abc<stop>def";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    StopText s({"<stop>", "zz"});
    std::string out;
    bool stopped = s.append(text.substr(0, cut));
    out += s.take_safe();
    if (!stopped) stopped = s.append(text.substr(cut));
    out += s.take_safe();
    out += s.take_all();
    EXPECT_TRUE(stopped);
    EXPECT_EQ(out, "abc") << cut;
  }
  StopText none({});
  none.append("plain");
  EXPECT_EQ(none.take_safe(), "plain");
}
