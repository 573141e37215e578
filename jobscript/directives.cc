// `#OOMGUARD` directives (see directives.h).
#include "jobscript/directives.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "jobscript/script_notes.h"

namespace oomguard::job_script_internal {
namespace {

absl::Status DirectiveError(int line, absl::string_view item, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("line ", line, ": #OOMGUARD ", Shown(item), ": ", why));
}

bool IsNameValue(absl::string_view v) {
  return !v.empty() && v.size() <= 128 && std::all_of(v.begin(), v.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '+';
  });
}

absl::Status ApplyDirective(absl::string_view item, int line, ScriptJob* job) {
  const size_t eq = item.find('=');
  const absl::string_view key = item.substr(0, eq);
  const absl::string_view value =
      eq == absl::string_view::npos ? absl::string_view() : item.substr(eq + 1);
  if (key == "skip") {
    if (eq == absl::string_view::npos || value == "true" || value == "yes" || value == "1") {
      job->skip = true;
    } else if (value == "false" || value == "no" || value == "0") {
      job->skip = false;
    } else {
      return DirectiveError(line, item, "expected skip, skip=true or skip=false");
    }
    return absl::OkStatus();
  }
  if (key != "preset" && key != "gpu" && key != "gpus" && key != "gpus-per-node" &&
      key != "safety-margin") {
    return DirectiveError(line, item,
                          "unknown key; known: preset, gpu, gpus, gpus-per-node, "
                          "safety-margin, skip");
  }
  if (eq == absl::string_view::npos) return DirectiveError(line, item, "expected key=value");
  if (key == "preset" || key == "gpu") {
    if (!IsNameValue(value)) {
      return DirectiveError(line, item, "expected a name of letters, digits and -_.+");
    }
    (key == "preset" ? job->preset : job->gpu) = std::string(value);
  } else if (key == "gpus" || key == "gpus-per-node") {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(value, &n) || n == 0 || n > (1u << 20)) {
      return DirectiveError(line, item, "expected a whole number in [1, 1048576]");
    }
    (key == "gpus" ? job->num_gpus : job->gpus_per_node) = n;
  } else {
    double margin = 0;
    if (!absl::SimpleAtod(value, &margin) || !std::isfinite(margin) || margin < 0 || margin >= 1) {
      return DirectiveError(line, item, "expected a fraction in [0, 1)");
    }
    job->safety_margin = margin;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadDirectives(absl::string_view script, ScriptJob* job) {
  int line = 0;
  for (absl::string_view text : absl::StrSplit(script, '\n')) {
    ++line;
    text = absl::StripLeadingAsciiWhitespace(text);
    if (!absl::ConsumePrefix(&text, "#OOMGUARD")) continue;
    if (!text.empty() && !absl::ascii_isspace(static_cast<unsigned char>(text[0]))) continue;
    for (absl::string_view item :
         absl::StrSplit(text, absl::ByAnyChar(" \t\r"), absl::SkipEmpty())) {
      OOMGUARD_RETURN_IF_ERROR(ApplyDirective(item, line, job));
    }
  }
  return absl::OkStatus();
}

}  // namespace oomguard::job_script_internal
