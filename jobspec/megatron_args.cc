#include "jobspec/megatron_args.h"

#include <algorithm>
#include <cstddef>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "jobspec/flag_resolution.h"
#include "jobspec/flag_values.h"
#include "jobspec/ignored_flags.h"
#include "jobspec/megatron_flags.h"

namespace oomguard {
namespace {

bool IsFlagToken(absl::string_view token) { return absl::StartsWith(token, "--"); }

// Whether `token` can be a flag's value. As in argparse, a token starting
// with "-" is a value only when it looks like a negative number ("-4",
// "-.5") or is "-" alone; other tokens starting with "-" are options.
bool IsValueToken(absl::string_view token) {
  if (!absl::StartsWith(token, "-") || token == "-") return true;
  const char next = token[1];
  return absl::ascii_isdigit(static_cast<unsigned char>(next)) || next == '.';
}

// A run of argument words with the variables they hold the values of
// (MegatronJob.argv_sources; `sources` empty or as long as `words`).
struct ArgWords {
  absl::Span<const std::string> words;
  absl::Span<const std::string> sources;

  absl::string_view source(size_t i) const {
    return i < sources.size() ? absl::string_view(sources[i]) : absl::string_view();
  }
  // Words [pos, pos + n), with their sources.
  ArgWords Sub(size_t pos, size_t n) const {
    return ArgWords{words.subspan(pos, n), sources.empty() ? sources : sources.subspan(pos, n)};
  }
};

// Applies one flag of the table; returns how many of the `following`
// tokens it took as values. `token_source`: the variable the flag's word
// holds the value of (its inline value's source).
absl::StatusOr<size_t> ApplyKnownFlag(const MegatronFlag& flag, FlagUse& use,
                                      std::optional<absl::string_view> inline_value,
                                      absl::string_view token_source, ArgWords following,
                                      ParseState& s) {
  size_t taken = 0;
  switch (flag.arity) {
    case FlagArity::kSwitch:
      if (inline_value.has_value() || !following.words.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            use.display, " takes no value, got ",
            inline_value.has_value() ? ShownWord(*inline_value, token_source)
                                     : ShownWord(following.words[0], following.source(0))));
      }
      break;
    case FlagArity::kOne:
      if (inline_value.has_value()) {
        use.values.push_back(*inline_value);
        use.sources.push_back(token_source);
      } else if (!following.words.empty()) {
        use.values.push_back(following.words[0]);
        use.sources.push_back(following.source(0));
        taken = 1;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(use.display, ": missing value"));
      }
      break;
    case FlagArity::kList:
      if (inline_value.has_value()) {
        use.values.push_back(*inline_value);
        use.sources.push_back(token_source);
      } else {
        for (size_t i = 0; i < following.words.size(); ++i) {
          use.values.push_back(following.words[i]);
          use.sources.push_back(following.source(i));
        }
        taken = following.words.size();
      }
      break;
  }
  // A choice value oomguard does not model is not applied: the job is
  // estimated as if the flag were absent, and says so.
  const std::string name = CanonicalFlagName(use.display);
  for (const absl::string_view value : use.values) {
    if (std::optional<absl::string_view> reason = UnmodelledChoiceReason(name, value)) {
      s.Unmodelled(absl::StrCat("--", name), value, *reason);
      return taken;
    }
  }
  OOMGUARD_RETURN_IF_ERROR(flag.apply(use, s));
  return taken;
}

// Applies the flag `token` ("--name" or "--name=value"); `following` are the
// value-like tokens after it. Returns how many of them it took.
absl::StatusOr<size_t> ApplyFlag(absl::string_view token, absl::string_view token_source,
                                 ArgWords following, ParseState& s) {
  absl::string_view body = token.substr(2);
  std::optional<absl::string_view> inline_value;
  if (const size_t eq = body.find('='); eq != absl::string_view::npos) {
    inline_value = body.substr(eq + 1);
    body = body.substr(0, eq);
  }
  if (body.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty flag name in ", ShownWord(token, token_source)));
  }
  FlagUse use{absl::StrCat("--", body), {}};
  if (const MegatronFlag* flag = FindMegatronFlag(use.display); flag != nullptr) {
    if (flag->unimplemented) {
      const std::string name = CanonicalFlagName(use.display);
      const std::string message =
          absl::StrCat(use.display, ": ", UnimplementedFlagReason(name).value_or("not modelled"));
      return MegatronRefusesFlag(name) ? absl::InvalidArgumentError(message)
                                       : absl::UnimplementedError(message);
    }
    return ApplyKnownFlag(*flag, use, inline_value, token_source, following, s);
  }
  // Skipped flag: its values are whatever value-like tokens follow. One that
  // may change memory (not modelled, or unknown) is recorded in the job.
  const std::string name = CanonicalFlagName(use.display);
  if (std::optional<absl::string_view> reason = UnmodelledFlagReason(name)) {
    s.Unmodelled(absl::StrCat("--", name), "", *reason);
  } else if (!IsSilentFlag(name)) {
    s.Unmodelled(EscapedValue(absl::StrCat("--", name)), "", UnknownFlagReason());
  }
  return following.words.size();
}

}  // namespace

absl::Status ApplyMegatronArgs(absl::Span<const std::string> args, ArgsMode mode, v1::JobSpec* job,
                               std::vector<std::string>* notes,
                               absl::Span<const std::string> arg_sources) {
  if (job == nullptr) return absl::InvalidArgumentError("job is null");
  if (!arg_sources.empty() && arg_sources.size() != args.size()) {
    return absl::InvalidArgumentError("the argument sources do not match the arguments");
  }
  const ArgWords all{args, arg_sources};
  ParseState state{.mode = mode, .job = job, .notes = notes};
  absl::string_view last_flag;
  size_t pos = 0;
  while (pos < args.size()) {
    const absl::string_view token = args[pos];
    if (!IsFlagToken(token)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument ", ShownWord(token, all.source(pos)),
                       last_flag.empty() ? " (flags start with \"--\")"
                                         : absl::StrCat(" after ", EscapedValue(last_flag))));
    }
    size_t end = pos + 1;
    while (end < args.size() && IsValueToken(args[end])) ++end;
    OOMGUARD_ASSIGN_OR_RETURN(
        const size_t taken,
        ApplyFlag(token, all.source(pos), all.Sub(pos + 1, end - pos - 1), state));
    last_flag = token;
    pos += 1 + taken;
  }
  return ResolveFlags(state);
}

bool MayChangeMemory(std::string_view std_unresolved) {
  const absl::string_view unresolved(std_unresolved.data(), std_unresolved.size());
  if (!absl::StartsWith(unresolved, "--")) {
    // A whole word from an expansion ("$EXTRA_ARGS") may be any flags; one
    // starting with literal text is the value of the flag before it.
    const absl::string_view word = absl::StripLeadingAsciiWhitespace(
        unresolved.substr(std::min(unresolved.find_first_not_of("\"'"), unresolved.size())));
    return word.empty() || word[0] == '$' || word[0] == '`' || word[0] == '-';
  }
  const absl::string_view flag = unresolved.substr(0, unresolved.find_first_of(" ="));
  if (flag.find_first_of("$`\"'") != absl::string_view::npos) return true;
  const std::string_view name(flag.data(), flag.size());
  if (const MegatronFlag* read = FindMegatronFlag(name); read != nullptr) {
    return read->unimplemented || !read->fields.empty();
  }
  // A flag the table does not read: only a silent one cannot; one not
  // modelled or unknown would make the job one oomguard does not judge.
  return !IsSilentFlag(CanonicalFlagName(name));
}

}  // namespace oomguard
