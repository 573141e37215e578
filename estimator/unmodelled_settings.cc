// The wording of the settings oomguard does not model (see
// unmodelled_settings.h).
#include "estimator/unmodelled_settings.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oomguard {
namespace {

// A verdict line names at most this many; the response lists them all.
constexpr int kNamedInVerdict = 3;

}  // namespace

std::string UnmodelledSettingName(const v1::UnmodelledSetting& setting) {
  return setting.value().empty() ? setting.flag()
                                 : absl::StrCat(setting.flag(), " ", setting.value());
}

std::string UnmodelledSettingNote(const v1::UnmodelledSetting& setting) {
  return absl::StrCat(UnmodelledSettingName(setting), " is not modelled (", setting.reason(),
                      "): estimated as if it were absent");
}

std::vector<std::string> UnmodelledSettingNotes(const v1::JobSpec& job) {
  std::vector<std::string> notes;
  for (const v1::UnmodelledSetting& setting : job.unmodelled_settings()) {
    notes.push_back(UnmodelledSettingNote(setting));
  }
  return notes;
}

std::string UnmodelledSettingList(const v1::JobSpec& job) {
  std::vector<std::string> names;
  const int count = job.unmodelled_settings_size();
  for (int i = 0; i < count && i < kNamedInVerdict; ++i) {
    names.push_back(UnmodelledSettingName(job.unmodelled_settings(i)));
  }
  std::string list = absl::StrJoin(names, ", ");
  if (count > kNamedInVerdict) absl::StrAppend(&list, " and ", count - kNamedInVerdict, " more");
  return list;
}

absl::Status NotJudgedUnmodelled(const v1::JobSpec& job) {
  // Every name first, then why: a surface that cuts a long message short
  // (a Kubernetes warning) still names them all.
  std::vector<std::string> names, reasons;
  for (const v1::UnmodelledSetting& setting : job.unmodelled_settings()) {
    names.push_back(UnmodelledSettingName(setting));
    reasons.push_back(absl::StrCat(names.back(), ": ", setting.reason(), "."));
  }
  return absl::UnimplementedError(absl::StrCat(
      "oomguard does not model ", absl::StrJoin(names, ", "), ", so the job is not judged. ",
      absl::StrJoin(reasons, " "), " To judge it as if ",
      names.size() > 1 ? "they were" : "it were",
      " absent: policy.judge_unmodelled (oomguard check --judge-unmodelled, or the server's "
      "--judge_unmodelled)."));
}

}  // namespace oomguard
