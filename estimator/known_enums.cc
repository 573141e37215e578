#include "estimator/known_enums.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"

namespace oomguard {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

absl::Status Unknown(const std::string& path, const FieldDescriptor& field, int value) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, " = ", value, ": not a value of ", field.enum_type()->full_name()));
}

absl::Status CheckAt(const Message& message, const std::string& prefix) {
  const Reflection& reflection = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);  // Only the fields that are set.
  for (const FieldDescriptor* field : fields) {
    const std::string path = absl::StrCat(prefix, field->name());
    if (field->type() == FieldDescriptor::TYPE_ENUM) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
          const int value = reflection.GetRepeatedEnumValue(message, field, i);
          if (field->enum_type()->FindValueByNumber(value) == nullptr) {
            return Unknown(absl::StrCat(path, "[", i, "]"), *field, value);
          }
        }
      } else {
        const int value = reflection.GetEnumValue(message, field);
        if (field->enum_type()->FindValueByNumber(value) == nullptr) {
          return Unknown(path, *field, value);
        }
      }
    } else if (field->type() == FieldDescriptor::TYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
          OOMGUARD_RETURN_IF_ERROR(CheckAt(reflection.GetRepeatedMessage(message, field, i),
                                           absl::StrCat(path, "[", i, "].")));
        }
      } else {
        OOMGUARD_RETURN_IF_ERROR(
            CheckAt(reflection.GetMessage(message, field), absl::StrCat(path, ".")));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckEnumsKnown(const Message& message) { return CheckAt(message, ""); }

}  // namespace oomguard
