// Language features, one snippet each (FEATURES in
// scripts/oracles/chat_template_goldens.py), against Jinja2's output.
#include <gtest/gtest.h>

#include "goldens.h"
#include "jinja/template.h"

namespace stride::jinja {
namespace {

TEST(JinjaFeatures, EverySnippetRendersLikeJinja2) {
  const auto goldens = testing::load_goldens();
  ASSERT_TRUE(goldens) << "no goldens at " << testing::goldens_path() << ": run scripts/setup";
  const Value context = context_from_json((*goldens)["feature_context"]);
  RenderOptions options;
  options.now = testing::fixed_now();
  int checked = 0;
  for (const auto& f : (*goldens)["features"]) {
    const std::string name = f["name"].get<std::string>();
    ++checked;
    auto tmpl = Template::parse(f["template"].get<std::string>());
    if (f.contains("error")) {
      const bool failed = !tmpl.ok() || !tmpl->render(context, options).ok();
      EXPECT_TRUE(failed) << name << ": Jinja2 raised " << f["error"].get<std::string>();
      continue;
    }
    ASSERT_TRUE(tmpl.ok()) << name << ": " << tmpl.status().to_string();
    auto out = tmpl->render(context, options);
    ASSERT_TRUE(out.ok()) << name << ": " << out.status().to_string();
    EXPECT_EQ(out->text, f["output"].get<std::string>()) << name << "\n" << f["template"].get<std::string>();
  }
  EXPECT_GT(checked, 50);
}

}  // namespace
}  // namespace stride::jinja
