#include "jobspec/job_field.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/reflection.h"

namespace oomguard {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

absl::StatusOr<JobField> JobField::Find(absl::string_view path) {
  JobField field;
  field.path_ = std::string(path);
  const Descriptor* message = v1::JobSpec::descriptor();
  for (absl::string_view name : absl::StrSplit(path, '.')) {
    if (message == nullptr) {
      return absl::NotFoundError(absl::StrCat("JobSpec field path \"", path,
                                              "\": ", field.leaf_->name(), " is not a message"));
    }
    const FieldDescriptor* part = message->FindFieldByName(std::string(name));
    if (part == nullptr) {
      return absl::NotFoundError(absl::StrCat("JobSpec field path \"", path,
                                              "\": ", message->name(), " has no field ", name));
    }
    if (field.leaf_ != nullptr) field.messages_.push_back(field.leaf_);
    field.leaf_ = part;
    message = part->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !part->is_repeated()
                  ? part->message_type()
                  : nullptr;
  }
  return field;
}

Message* JobField::MutableHolder(v1::JobSpec* job) const {
  Message* holder = job;
  for (const FieldDescriptor* part : messages_) {
    holder = holder->GetReflection()->MutableMessage(holder, part);
  }
  return holder;
}

void JobField::SetUint32(v1::JobSpec* job, uint32_t value) const {
  Message* holder = MutableHolder(job);
  holder->GetReflection()->SetUInt32(holder, leaf_, value);
}

void JobField::SetDouble(v1::JobSpec* job, double value) const {
  Message* holder = MutableHolder(job);
  holder->GetReflection()->SetDouble(holder, leaf_, value);
}

void JobField::SetBool(v1::JobSpec* job, bool value) const {
  Message* holder = MutableHolder(job);
  holder->GetReflection()->SetBool(holder, leaf_, value);
}

void JobField::SetEnum(v1::JobSpec* job, int value) const {
  Message* holder = MutableHolder(job);
  holder->GetReflection()->SetEnumValue(holder, leaf_, value);
}

void JobField::SetString(v1::JobSpec* job, std::string value) const {
  Message* holder = MutableHolder(job);
  holder->GetReflection()->SetString(holder, leaf_, std::move(value));
}

void JobField::AddUint32(v1::JobSpec* job, uint32_t value) const {
  Message* holder = MutableHolder(job);
  holder->GetReflection()->AddUInt32(holder, leaf_, value);
}

void JobField::AddEnum(v1::JobSpec* job, int value) const {
  Message* holder = MutableHolder(job);
  holder->GetReflection()->AddEnumValue(holder, leaf_, value);
}

void JobField::AddString(v1::JobSpec* job, std::string value) const {
  Message* holder = MutableHolder(job);
  holder->GetReflection()->AddString(holder, leaf_, std::move(value));
}

void JobField::Clear(v1::JobSpec* job) const {
  Message* holder = MutableHolder(job);
  holder->GetReflection()->ClearField(holder, leaf_);
}

const Message& JobField::Holder(const v1::JobSpec& job) const {
  const Message* holder = &job;
  for (const FieldDescriptor* part : messages_) {
    holder = &holder->GetReflection()->GetMessage(*holder, part);
  }
  return *holder;
}

bool JobField::IsSet(const v1::JobSpec& job) const {
  const Message& holder = Holder(job);
  return leaf_->is_repeated() ? holder.GetReflection()->FieldSize(holder, leaf_) > 0
                              : holder.GetReflection()->HasField(holder, leaf_);
}

bool JobField::SameIn(const v1::JobSpec& a, const v1::JobSpec& b) const {
  if (IsSet(a) != IsSet(b)) return false;
  if (leaf_->is_repeated()) {
    switch (leaf_->cpp_type()) {
      case FieldDescriptor::CPPTYPE_UINT32:
        return GetUint32s(a) == GetUint32s(b);
      case FieldDescriptor::CPPTYPE_ENUM:
        return GetEnums(a) == GetEnums(b);
      default:
        return GetStrings(a) == GetStrings(b);
    }
  }
  switch (leaf_->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT32:
      return GetUint32(a) == GetUint32(b);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return GetDouble(a) == GetDouble(b);
    case FieldDescriptor::CPPTYPE_BOOL:
      return GetBool(a) == GetBool(b);
    case FieldDescriptor::CPPTYPE_ENUM:
      return GetEnum(a) == GetEnum(b);
    default:
      return GetString(a) == GetString(b);
  }
}

uint32_t JobField::GetUint32(const v1::JobSpec& job) const {
  const Message& holder = Holder(job);
  return holder.GetReflection()->GetUInt32(holder, leaf_);
}

double JobField::GetDouble(const v1::JobSpec& job) const {
  const Message& holder = Holder(job);
  return holder.GetReflection()->GetDouble(holder, leaf_);
}

bool JobField::GetBool(const v1::JobSpec& job) const {
  const Message& holder = Holder(job);
  return holder.GetReflection()->GetBool(holder, leaf_);
}

int JobField::GetEnum(const v1::JobSpec& job) const {
  const Message& holder = Holder(job);
  return holder.GetReflection()->GetEnumValue(holder, leaf_);
}

std::string JobField::GetString(const v1::JobSpec& job) const {
  const Message& holder = Holder(job);
  return holder.GetReflection()->GetString(holder, leaf_);
}

std::vector<uint32_t> JobField::GetUint32s(const v1::JobSpec& job) const {
  const Message& holder = Holder(job);
  const auto& values = holder.GetReflection()->GetRepeatedFieldRef<uint32_t>(holder, leaf_);
  return std::vector<uint32_t>(values.begin(), values.end());
}

std::vector<int> JobField::GetEnums(const v1::JobSpec& job) const {
  const Message& holder = Holder(job);
  const google::protobuf::Reflection& r = *holder.GetReflection();
  std::vector<int> values;
  for (int i = 0; i < r.FieldSize(holder, leaf_); ++i) {
    values.push_back(r.GetRepeatedEnumValue(holder, leaf_, i));
  }
  return values;
}

std::vector<std::string> JobField::GetStrings(const v1::JobSpec& job) const {
  const Message& holder = Holder(job);
  const auto& values = holder.GetReflection()->GetRepeatedFieldRef<std::string>(holder, leaf_);
  return std::vector<std::string>(values.begin(), values.end());
}

}  // namespace oomguard
