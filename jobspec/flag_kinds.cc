#include "jobspec/flag_kinds.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobspec/flag_resolution.h"

namespace oomguard {

using google::protobuf::FieldDescriptor;

void FlagTableBug(absl::string_view what) {
  std::fprintf(stderr, "oomguard: bug in the Megatron-LM flag table: %.*s\n",
               static_cast<int>(what.size()), what.data());
  std::abort();
}

JobField FieldAt(absl::string_view path) {
  absl::StatusOr<JobField> field = JobField::Find(path);
  if (!field.ok()) FlagTableBug(field.status().message());
  return *std::move(field);
}

JobField FieldAt(absl::string_view path, FieldDescriptor::CppType type, bool repeated) {
  JobField field = FieldAt(path);
  if (field.descriptor().cpp_type() != type || field.descriptor().is_repeated() != repeated) {
    FlagTableBug(absl::StrCat(path, " is a ", field.descriptor().cpp_type_name(),
                              field.descriptor().is_repeated() ? " list" : ""));
  }
  return field;
}

namespace {

// An enum field whose enum has every one of `words`.
JobField EnumFieldAt(absl::string_view path, const std::vector<FlagWord>& words,
                     bool repeated = false) {
  JobField field = FieldAt(path, FieldDescriptor::CPPTYPE_ENUM, repeated);
  for (const FlagWord& word : words) {
    if (field.descriptor().enum_type()->FindValueByNumber(word.value) == nullptr) {
      FlagTableBug(absl::StrCat(path, " has no value for the word ", word.word));
    }
  }
  return field;
}

using Words = std::optional<std::vector<std::string>>;

}  // namespace

MegatronFlag Uint(absl::string_view path) {
  const JobField field = FieldAt(path, FieldDescriptor::CPPTYPE_UINT32);
  return {.arity = FlagArity::kOne,
          .fields = {field.path()},
          .apply = [field](const FlagUse& flag, ParseState& s) -> absl::Status {
            OOMGUARD_ASSIGN_OR_RETURN(const uint32_t value, ParseUint32(flag));
            field.SetUint32(s.job, value);
            return absl::OkStatus();
          },
          .write = [field](const v1::JobSpec& job) -> Words {
            return std::vector<std::string>{absl::StrCat(field.GetUint32(job))};
          }};
}

MegatronFlag Real(absl::string_view path, Range range) {
  const JobField field = FieldAt(path, FieldDescriptor::CPPTYPE_DOUBLE);
  return {.arity = FlagArity::kOne,
          .fields = {field.path()},
          .apply = [field, range](const FlagUse& flag, ParseState& s) -> absl::Status {
            OOMGUARD_ASSIGN_OR_RETURN(const double value, ParseReal(flag, range));
            field.SetDouble(s.job, value);
            return absl::OkStatus();
          },
          .write = [field](const v1::JobSpec& job) -> Words {
            return std::vector<std::string>{FormatReal(field.GetDouble(job))};
          }};
}

MegatronFlag Switch(absl::string_view path, bool value) {
  const JobField field = FieldAt(path, FieldDescriptor::CPPTYPE_BOOL);
  return {.arity = FlagArity::kSwitch,
          .fields = {field.path()},
          .apply = [field, value](const FlagUse&, ParseState& s) -> absl::Status {
            field.SetBool(s.job, value);
            return absl::OkStatus();
          },
          .write = [field, value](const v1::JobSpec& job) -> Words {
            if (field.GetBool(job) != value) return std::nullopt;
            return std::vector<std::string>{};
          }};
}

MegatronFlag EnumSwitch(absl::string_view path, const google::protobuf::EnumDescriptor* type,
                        int value) {
  const JobField field = FieldAt(path, FieldDescriptor::CPPTYPE_ENUM);
  if (field.descriptor().enum_type() != type) {
    FlagTableBug(absl::StrCat(path, " is not a ", type->name()));
  }
  return {.arity = FlagArity::kSwitch,
          .fields = {field.path()},
          .apply = [field, value](const FlagUse&, ParseState& s) -> absl::Status {
            field.SetEnum(s.job, value);
            return absl::OkStatus();
          },
          .write = [field, value](const v1::JobSpec& job) -> Words {
            if (field.GetEnum(job) != value) return std::nullopt;
            return std::vector<std::string>{};
          }};
}

MegatronFlag Word(absl::string_view path, std::vector<FlagWord> words) {
  const JobField field = EnumFieldAt(path, words);
  return {.arity = FlagArity::kOne,
          .fields = {field.path()},
          .words = words,
          .apply = [field, words](const FlagUse& flag, ParseState& s) -> absl::Status {
            OOMGUARD_ASSIGN_OR_RETURN(const int value, ParseWord(flag, flag.value(), words));
            field.SetEnum(s.job, value);
            return absl::OkStatus();
          },
          .write = [field, words](const v1::JobSpec& job) -> Words {
            std::optional<absl::string_view> word = WordFor(words, field.GetEnum(job));
            if (!word) return std::nullopt;
            return std::vector<std::string>{std::string(*word)};
          }};
}

namespace {

// A list of `words` into a repeated enum field; `each_once` drops repeats.
MegatronFlag EnumList(absl::string_view path, std::vector<FlagWord> words, bool each_once) {
  const JobField field = EnumFieldAt(path, words, /*repeated=*/true);
  return {.arity = FlagArity::kList,
          .fields = {field.path()},
          .words = words,
          .apply = [field, words, each_once](const FlagUse& flag, ParseState& s) -> absl::Status {
            std::vector<int> values;
            for (absl::string_view word : flag.values) {
              OOMGUARD_ASSIGN_OR_RETURN(const int value, ParseWord(flag, word, words));
              if (!each_once || std::find(values.begin(), values.end(), value) == values.end()) {
                values.push_back(value);
              }
            }
            field.Clear(s.job);
            for (const int value : values) field.AddEnum(s.job, value);
            return absl::OkStatus();
          },
          .write = [field, words](const v1::JobSpec& job) -> Words {
            std::vector<std::string> out;
            for (const int value : field.GetEnums(job)) {
              std::optional<absl::string_view> word = WordFor(words, value);
              if (!word) return std::nullopt;
              out.emplace_back(*word);
            }
            return out;
          }};
}

}  // namespace

MegatronFlag WordList(absl::string_view path, std::vector<FlagWord> words) {
  return EnumList(path, std::move(words), /*each_once=*/true);
}

MegatronFlag WordSequence(absl::string_view path, std::vector<FlagWord> words) {
  return EnumList(path, std::move(words), /*each_once=*/false);
}

MegatronFlag UintList(absl::string_view path) {
  const JobField field = FieldAt(path, FieldDescriptor::CPPTYPE_UINT32, /*repeated=*/true);
  return {.arity = FlagArity::kList,
          .fields = {field.path()},
          .apply = [field](const FlagUse& flag, ParseState& s) -> absl::Status {
            field.Clear(s.job);
            for (absl::string_view word : flag.values) {
              OOMGUARD_ASSIGN_OR_RETURN(const uint32_t value, ParseUint32(flag, word));
              field.AddUint32(s.job, value);
            }
            return absl::OkStatus();
          },
          .write = [field](const v1::JobSpec& job) -> Words {
            std::vector<std::string> out;
            for (const uint32_t value : field.GetUint32s(job)) out.push_back(absl::StrCat(value));
            return out;
          }};
}

MegatronFlag Text(absl::string_view path) {
  const JobField field = FieldAt(path, FieldDescriptor::CPPTYPE_STRING);
  return {.arity = FlagArity::kOne,
          .fields = {field.path()},
          .apply = [field](const FlagUse& flag, ParseState& s) -> absl::Status {
            field.SetString(s.job, std::string(flag.value()));
            return absl::OkStatus();
          },
          .write = [field](const v1::JobSpec& job) -> Words {
            return std::vector<std::string>{field.GetString(job)};
          }};
}

MegatronFlag TextList(absl::string_view path) {
  const JobField field = FieldAt(path, FieldDescriptor::CPPTYPE_STRING, /*repeated=*/true);
  return {.arity = FlagArity::kList,
          .fields = {field.path()},
          .apply = [field](const FlagUse& flag, ParseState& s) -> absl::Status {
            field.Clear(s.job);
            for (absl::string_view value : flag.values) field.AddString(s.job, std::string(value));
            return absl::OkStatus();
          },
          .write = [field](const v1::JobSpec& job) -> Words { return field.GetStrings(job); }};
}

MegatronFlag EnableWithAnyValue(absl::string_view path) {
  MegatronFlag flag = Switch(path, true);
  flag.arity = FlagArity::kOne;
  flag.write = nullptr;  // Its value is not kept, so not written.
  return flag;
}

MegatronFlag AlsoRecord(MegatronFlag flag, void (*record)(ParseState&)) {
  flag.apply = [set = std::move(flag.apply), record](const FlagUse& use,
                                                     ParseState& s) -> absl::Status {
    OOMGUARD_RETURN_IF_ERROR(set(use, s));
    record(s);
    return absl::OkStatus();
  };
  return flag;
}

MegatronFlag Custom(FlagArity arity, std::vector<JobField> fields, FieldsHandler apply) {
  MegatronFlag flag{.arity = arity};
  for (const JobField& field : fields) flag.fields.push_back(field.path());
  flag.apply = [fields = std::move(fields), apply](const FlagUse& use, ParseState& s) {
    return apply(use, fields, s);
  };
  return flag;
}

MegatronFlag Resolved(FlagArity arity, std::vector<absl::string_view> paths, FlagHandler record) {
  MegatronFlag flag{.arity = arity, .apply = std::move(record)};
  for (absl::string_view path : paths) flag.fields.push_back(FieldAt(path).path());
  return flag;
}

MegatronFlag Unmapped(FlagArity arity, FlagHandler apply) {
  return {.arity = arity, .apply = std::move(apply)};
}

}  // namespace oomguard
