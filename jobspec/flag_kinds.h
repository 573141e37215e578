// The kinds of entry in the Megatron-LM flag table (megatron_flags.h): how a
// flag reads its values and sets the JobSpec field it names by path (an
// integer, a bounded real, a switch, an enum word, a list of words, text)
// and writes the field back as those values (MegatronFlag::write, for
// megatron_args_writer.h), or records itself for the resolution of the
// flags that depend on each other (flag_resolution.h; not written). Each
// kind takes the field's path once and sets and reads the field from it
// (job_field.h). The table is compiled in: a path that
// names no field of the kind's type is a bug in it, which aborts the
// process when the table is first built (FlagTableBug).
#ifndef OOMGUARD_JOBSPEC_FLAG_KINDS_H_
#define OOMGUARD_JOBSPEC_FLAG_KINDS_H_

#include <functional>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/generated_enum_reflection.h"
#include "jobspec/flag_values.h"
#include "jobspec/job_field.h"
#include "jobspec/megatron_flags.h"

namespace oomguard {

// Reports a bug in the flag table on stderr and aborts.
[[noreturn]] void FlagTableBug(absl::string_view what);

// The JobSpec field at `path`; with a type, one of that type (and a list or
// not).
JobField FieldAt(absl::string_view path);
JobField FieldAt(absl::string_view path, google::protobuf::FieldDescriptor::CppType type,
                 bool repeated = false);

// A one-value flag: a non-negative integer.
MegatronFlag Uint(absl::string_view path);

// A one-value flag: a number in `range`.
MegatronFlag Real(absl::string_view path, Range range);

// A switch that sets a bool field to `value`.
MegatronFlag Switch(absl::string_view path, bool value);

// A switch that sets an enum field of `type` to `value`.
MegatronFlag EnumSwitch(absl::string_view path, const google::protobuf::EnumDescriptor* type,
                        int value);
template <typename E>
requires std::is_enum_v<E> MegatronFlag Switch(absl::string_view path, E value) {
  return EnumSwitch(path, google::protobuf::GetEnumDescriptor<E>(), value);
}

// A one-value flag whose value is one of `words`.
MegatronFlag Word(absl::string_view path, std::vector<FlagWord> words);

// A list flag whose values are `words`, each kept once, in order.
MegatronFlag WordList(absl::string_view path, std::vector<FlagWord> words);

// A list flag whose values are `words`, every one kept, in order (one per
// layer, say).
MegatronFlag WordSequence(absl::string_view path, std::vector<FlagWord> words);

// A list flag of non-negative integers, kept in order.
MegatronFlag UintList(absl::string_view path);

// A one-value flag kept as text.
MegatronFlag Text(absl::string_view path);

// A list flag kept as text, one entry per value.
MegatronFlag TextList(absl::string_view path);

// A one-value flag that turns a bool field on whatever its value (the value
// is not modelled).
MegatronFlag EnableWithAnyValue(absl::string_view path);

// `flag`, which also records in the parse state that it was given.
MegatronFlag AlsoRecord(MegatronFlag flag, void (*record)(ParseState&));

// A flag with a handler of its own that sets `fields` (given to it).
using FieldsHandler = absl::Status (*)(const FlagUse&, absl::Span<const JobField>, ParseState&);
MegatronFlag Custom(FlagArity arity, std::vector<JobField> fields, FieldsHandler apply);

// A flag recorded in the parse state by `record`, whose `paths` the
// resolution sets (flag_resolution.h).
using FlagHandler = std::function<absl::Status(const FlagUse&, ParseState&)>;
MegatronFlag Resolved(FlagArity arity, std::vector<absl::string_view> paths, FlagHandler record);

// A flag read without setting any field.
MegatronFlag Unmapped(FlagArity arity, FlagHandler apply);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_FLAG_KINDS_H_
