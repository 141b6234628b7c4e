#include "report/sensitivity_html.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <vector>

namespace ptqkit::sensitivity {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A small XML well-formedness checker: one root element, every element closed in order,
// attributes quoted, no raw '<' or '&' in text or attribute values (only the five XML entities and
// numeric references). Returns "" when well-formed, else what is wrong and where.
class XmlChecker {
 public:
  explicit XmlChecker(const std::string& text) : s_(text) {}

  std::string Check() {
    SkipSpace();
    if (s_.compare(i_, 9, "<!DOCTYPE") == 0) {
      const size_t end = s_.find('>', i_);
      if (end == std::string::npos) return Fail("unterminated DOCTYPE");
      i_ = end + 1;
    }
    int roots = 0;
    while (i_ < s_.size()) {
      if (s_[i_] == '<') {
        if (s_.compare(i_, 4, "<!--") == 0) {
          const size_t end = s_.find("-->", i_);
          if (end == std::string::npos) return Fail("unterminated comment");
          i_ = end + 3;
          continue;
        }
        if (stack_.empty() && s_[i_ + 1] != '/') ++roots;
        const std::string error = Tag();
        if (!error.empty()) return error;
      } else {
        if (stack_.empty() && !std::isspace(static_cast<unsigned char>(s_[i_]))) {
          return Fail("text outside the root element");
        }
        const std::string error = CharOrEntity('<');
        if (!error.empty()) return error;
      }
    }
    if (!stack_.empty()) return Fail("element <" + stack_.back() + "> is not closed");
    if (roots != 1) return Fail("expected one root element, found " + std::to_string(roots));
    return "";
  }

 private:
  std::string Fail(const std::string& what) const {
    return what + " at offset " + std::to_string(i_) + ": '" + s_.substr(i_, 40) + "'";
  }
  void SkipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  std::string Name() {
    const size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' ||
                              s_[i_] == ':' || s_[i_] == '_')) {
      ++i_;
    }
    return s_.substr(start, i_ - start);
  }
  // Consumes one character of text (or one entity); `forbidden` is the delimiter that may not
  // appear raw.
  std::string CharOrEntity(char forbidden) {
    if (s_[i_] == forbidden) return Fail("raw delimiter");
    if (s_[i_] != '&') {
      ++i_;
      return "";
    }
    const size_t end = s_.find(';', i_);
    if (end == std::string::npos) return Fail("unterminated entity");
    const std::string entity = s_.substr(i_, end - i_ + 1);
    const bool named = entity == "&amp;" || entity == "&lt;" || entity == "&gt;" ||
                       entity == "&quot;" || entity == "&apos;";
    bool numeric = entity.size() > 3 && entity[1] == '#';
    for (size_t k = 2; numeric && k + 1 < entity.size(); ++k) {
      numeric = std::isdigit(static_cast<unsigned char>(entity[k])) != 0;
    }
    if (!named && !numeric) return Fail("bad entity " + entity);
    i_ = end + 1;
    return "";
  }
  std::string Tag() {
    ++i_;  // '<'
    if (s_[i_] == '/') {
      ++i_;
      const std::string name = Name();
      SkipSpace();
      if (s_[i_] != '>') return Fail("bad end tag");
      ++i_;
      if (stack_.empty() || stack_.back() != name) return Fail("unexpected </" + name + ">");
      stack_.pop_back();
      return "";
    }
    const std::string name = Name();
    if (name.empty()) return Fail("raw '<'");
    while (true) {
      SkipSpace();
      if (i_ >= s_.size()) return Fail("unterminated tag");
      if (s_.compare(i_, 2, "/>") == 0) {
        i_ += 2;
        return "";
      }
      if (s_[i_] == '>') {
        ++i_;
        stack_.push_back(name);
        return "";
      }
      if (Name().empty()) return Fail("bad attribute name");
      if (s_[i_] != '=') return Fail("attribute without value");
      ++i_;
      const char quote = s_[i_];
      if (quote != '"' && quote != '\'') return Fail("unquoted attribute");
      ++i_;
      while (i_ < s_.size() && s_[i_] != quote) {
        const std::string error = CharOrEntity('<');
        if (!error.empty()) return error;
      }
      ++i_;
    }
  }

  const std::string& s_;
  size_t i_ = 0;
  std::vector<std::string> stack_;
};

TEST(XmlCheckerTest, CatchesMalformedMarkup) {
  EXPECT_EQ(XmlChecker("<a><b x=\"1\" /></a>").Check(), "");
  EXPECT_NE(XmlChecker("<a><b></a>").Check(), "");
  EXPECT_NE(XmlChecker("<a>x < y</a>").Check(), "");
  EXPECT_NE(XmlChecker("<a>x & y</a>").Check(), "");
  EXPECT_NE(XmlChecker("<a x=1></a>").Check(), "");
  EXPECT_NE(XmlChecker("<a></a><b></b>").Check(), "");
  EXPECT_NE(XmlChecker("<a>").Check(), "");
}

SensitivityResult Example() {
  SensitivityResult r;
  r.onnx_path = "models/m&m.onnx";
  r.scores = {{"/blocks/0/MatMul", 2.5},
              {"/blocks/0/Add", 1.0},
              {"a<b&c>\"d'", 0.75},
              {"/head/Gemm", 0.0},
              {"/blocks/1/Mul", 0.25}};
  r.failed = {{"/Cast<x>", "no Q/DQ inserted & skipped"}};
  r.calibration_source = "synthetic";
  r.num_calibration_samples = 100;
  r.metric = "kl_div";
  r.granularity = "node";
  r.target_precision = "int8";
  r.timings = {{"probes", 1.25}};
  r.ptqkit_version = "0.1.0";
  return r;
}

TEST(ReportHtmlTest, ScanOnlyReportIsWellFormedAndSelfContained) {
  const std::string html = RenderHtmlReport(Example(), nullptr, {{"metric", "kl_div"}});
  EXPECT_EQ(XmlChecker(html).Check(), "");
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("<svg "));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("href=")));
  EXPECT_THAT(html, HasSubstr("directional only"));        // synthetic data
  EXPECT_THAT(html, Not(HasSubstr("class=\"cutline\"")));  // no pick, no cut
}

TEST(ReportHtmlTest, EveryTargetNameAppearsEscaped) {
  const SensitivityResult r = Example();
  const std::string html = RenderHtmlReport(r, nullptr, {});
  EXPECT_THAT(html, HasSubstr("a&lt;b&amp;c&gt;&quot;d&#39;"));
  EXPECT_THAT(html, Not(HasSubstr("a<b&c>")));
  for (const auto& [name, score] : r.scores) {
    if (name.find_first_of("<&>\"'") == std::string::npos) {
      EXPECT_THAT(html, HasSubstr(name));
    }
  }
  EXPECT_THAT(html, HasSubstr("/Cast&lt;x&gt;"));
  EXPECT_THAT(html, HasSubstr("models/m&amp;m.onnx"));
}

TEST(ReportHtmlTest, PickShowsTheCutAndTheExclusion) {
  const SensitivityResult r = Example();
  PickerOptions o;
  o.coverage = 0.8;  // budget 3.6 of 4.5: 2.5 + 1.0 fit, + 0.75 would not
  const PickResult pick = SuggestExclusion(r.scores, o);
  ASSERT_EQ(pick.cut, 2u);
  const std::string html = RenderHtmlReport(r, &pick, {{"coverage", "0.8"}});
  EXPECT_EQ(XmlChecker(html).Check(), "");
  EXPECT_THAT(html, HasSubstr("class=\"cutline\""));
  EXPECT_THAT(html, HasSubstr("exclusion cut (coverage=0.8)"));
  EXPECT_THAT(html, HasSubstr("<li><code>/blocks/0/MatMul</code></li>"));
  EXPECT_THAT(html, HasSubstr("<li><code>/blocks/0/Add</code></li>"));
  EXPECT_THAT(html, Not(HasSubstr("<li><code>/blocks/1/Mul</code></li>")));
  EXPECT_THAT(html, HasSubstr("<th>coverage</th><td>0.8</td>"));
  EXPECT_THAT(html, Not(HasSubstr("Block ranking")));
}

TEST(ReportHtmlTest, BlocksAddTheBlockRanking) {
  const SensitivityResult r = Example();
  PickerOptions o;
  o.threshold = 0.5;
  o.blocks = {{"blocks.0", {"^/blocks/0/"}}, {"a<b>", {"^a<"}}};
  const PickResult pick = SuggestExclusion(r.scores, o);
  const std::string html = RenderHtmlReport(r, &pick, {});
  EXPECT_EQ(XmlChecker(html).Check(), "");
  EXPECT_THAT(html, HasSubstr("Block ranking (sorted by sum_agg)"));
  EXPECT_THAT(html, HasSubstr("<td>blocks.0</td><td>group</td>"));
  EXPECT_THAT(html, HasSubstr("<td>a&lt;b&gt;</td><td>group</td>"));
  EXPECT_THAT(html, HasSubstr("<td>/blocks/1/Mul</td><td>singleton</td>"));
}

TEST(ReportHtmlTest, BrokenUtf8AndControlCharactersCannotBreakTheFile) {
  SensitivityResult r = Example();
  r.scores["bad\xff\x01name"] = 0.5;
  const std::string html = RenderHtmlReport(r, nullptr, {});
  EXPECT_EQ(XmlChecker(html).Check(), "");
  EXPECT_THAT(html, HasSubstr("bad\xEF\xBF\xBD\xEF\xBF\xBDname"));
}

TEST(ReportHtmlTest, SameInputsGiveTheSameBytes) {
  const SensitivityResult r = Example();
  const PickResult pick = SuggestExclusion(r.scores, PickerOptions());
  EXPECT_EQ(RenderHtmlReport(r, &pick, {{"a", "b"}}), RenderHtmlReport(r, &pick, {{"a", "b"}}));
}

TEST(ReportHtmlTest, EmptyScanIsStillAReport) {
  SensitivityResult r;
  r.metric = "mse";
  r.granularity = "op_type";
  r.target_precision = "int8";
  const PickResult pick = SuggestExclusion(r.scores, PickerOptions());
  const std::string html = RenderHtmlReport(r, &pick, {});
  EXPECT_EQ(XmlChecker(html).Check(), "");
  EXPECT_THAT(html, HasSubstr("No target was scored."));
  EXPECT_THAT(html, HasSubstr("Nothing is excluded."));
}

}  // namespace
}  // namespace ptqkit::sensitivity
