// The JobSpec written as Megatron-LM arguments (see megatron_args_writer.h).
#include "jobspec/megatron_args_writer.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "jobspec/job_field.h"
#include "jobspec/megatron_flags.h"

namespace oomguard {
namespace {

using google::protobuf::FieldDescriptor;

// A field of the table and the flags that write it, in table order.
struct WrittenField {
  JobField field;
  std::vector<const MegatronFlag*> writers;
};

// Every field the table sets, in table order (where a flag first names it).
class FieldIndex {
 public:
  FieldIndex() {
    for (const MegatronFlag& flag : MegatronFlags()) {
      for (const std::string& path : flag.fields) {
        auto [it, added] = index_.try_emplace(path, fields_.size());
        if (added) {
          absl::StatusOr<JobField> field = JobField::Find(path);
          if (!field.ok()) std::abort();  // The table checked its paths.
          fields_.push_back({*std::move(field), {}});
        }
        if (flag.write != nullptr) fields_[it->second].writers.push_back(&flag);
      }
    }
  }

  const std::vector<WrittenField>& fields() const { return fields_; }
  const WrittenField* Find(std::string_view path) const {
    auto it = index_.find(path);
    return it == index_.end() ? nullptr : &fields_[it->second];
  }

 private:
  std::vector<WrittenField> fields_;
  std::map<std::string, size_t, std::less<>> index_;
};

const FieldIndex& Fields() {
  static const FieldIndex* const kIndex = new FieldIndex;
  return *kIndex;
}

// The first writer of `f` that gives it its value in `job`: its spelling and
// values; null when none does.
const MegatronFlag* WriteWith(const WrittenField& f, const v1::JobSpec& job,
                              std::vector<std::string>& words) {
  for (const MegatronFlag* flag : f.writers) {
    std::optional<std::vector<std::string>> values = flag->write(job);
    if (!values.has_value()) continue;
    words.push_back(flag->Spelling());
    words.insert(words.end(), std::make_move_iterator(values->begin()),
                 std::make_move_iterator(values->end()));
    return flag;
  }
  return nullptr;
}

// Reports a bug in a caller's constant path on stderr and aborts.
[[noreturn]] void WriterBug(absl::string_view what) {
  std::fprintf(stderr, "oomguard: bug: writing Megatron-LM arguments: %.*s\n",
               static_cast<int>(what.size()), what.data());
  std::abort();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> WriteJobField(const v1::JobSpec& job,
                                                       std::string_view path) {
  const WrittenField* f = Fields().Find(path);
  const absl::string_view name(path.data(), path.size());
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrCat(name, ": no Megatron-LM flag sets this field"));
  }
  std::vector<std::string> words;
  if (!f->field.IsSet(job)) return words;
  if (WriteWith(*f, job, words) == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, ": no Megatron-LM flag gives this field the value it has"));
  }
  return words;
}

std::vector<std::string> WriteJobFields(const v1::JobSpec& job,
                                        const std::vector<std::string_view>& paths) {
  std::vector<std::string> words;
  for (std::string_view path : paths) {
    absl::StatusOr<std::vector<std::string>> field = WriteJobField(job, path);
    if (!field.ok()) WriterBug(field.status().message());
    words.insert(words.end(), field->begin(), field->end());
  }
  return words;
}

std::string SwitchFlagFor(std::string_view path) {
  const WrittenField* f = Fields().Find(path);
  if (f == nullptr || f->field.descriptor().cpp_type() != FieldDescriptor::CPPTYPE_BOOL) {
    WriterBug(absl::StrCat(absl::string_view(path.data(), path.size()), " is not a switch field"));
  }
  v1::JobSpec on;
  f->field.SetBool(&on, true);
  std::vector<std::string> words;
  if (WriteWith(*f, on, words) == nullptr || words.size() != 1) {
    WriterBug(absl::StrCat(absl::string_view(path.data(), path.size()), ": no switch turns it on"));
  }
  return words.front();
}

std::string DroppedFlagFor(std::string_view path) {
  const WrittenField* f = Fields().Find(path);
  if (f != nullptr && f->field.descriptor().cpp_type() == FieldDescriptor::CPPTYPE_BOOL) {
    return SwitchFlagFor(path);
  }
  if (f == nullptr || f->writers.empty()) {
    WriterBug(absl::StrCat(absl::string_view(path.data(), path.size()), ": no flag writes it"));
  }
  return f->writers.front()->Spelling();
}

WrittenArgs WriteMegatronArgs(const v1::JobSpec& job, const v1::JobSpec& base) {
  WrittenArgs out;
  std::set<std::string_view> written;
  for (const WrittenField& f : Fields().fields()) {
    const std::string& path = f.field.path();
    if (f.field.SameIn(job, base) || written.count(path) > 0) continue;
    const MegatronFlag* flag = f.field.IsSet(job) ? WriteWith(f, job, out.args) : nullptr;
    if (flag == nullptr) {
      out.unwritten.push_back(path);
      continue;
    }
    written.insert(flag->fields.begin(), flag->fields.end());
  }
  return out;
}

std::vector<std::string> ChangedFlagFields(const v1::JobSpec& base, const v1::JobSpec& job) {
  std::vector<std::string> changed;
  for (const WrittenField& f : Fields().fields()) {
    if (!f.field.SameIn(job, base)) changed.push_back(f.field.path());
  }
  return changed;
}

}  // namespace oomguard
