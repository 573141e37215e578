#include "jobspec/job_field.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

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

}  // namespace oomguard
