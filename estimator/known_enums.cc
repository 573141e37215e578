#include "estimator/known_enums.h"

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"

namespace oomguard {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The fields of each message type that can hold an enum value: its enum
// fields and its message fields whose type has such fields, at any depth.
// Worked out once per type from the descriptors, so that a check reads only
// those fields (a JobSpec has a dozen of them among its ~150).
class EnumFieldIndex {
 public:
  // The reference stays valid: entries are never changed or removed, and
  // node_hash_map does not move them.
  const std::vector<const FieldDescriptor*>& Of(const Descriptor* type) {
    absl::MutexLock lock(&mu_);
    return Build(type);
  }

 private:
  const std::vector<const FieldDescriptor*>& Build(const Descriptor* type)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (auto it = index_.find(type); it != index_.end()) return it->second;
    in_progress_.insert(type);
    std::vector<const FieldDescriptor*> fields;
    for (int i = 0; i < type->field_count(); ++i) {
      const FieldDescriptor* field = type->field(i);
      if (field->type() == FieldDescriptor::TYPE_ENUM ||
          (field->type() == FieldDescriptor::TYPE_MESSAGE && HoldsEnums(field->message_type()))) {
        fields.push_back(field);
      }
    }
    in_progress_.erase(type);
    return index_.emplace(type, std::move(fields)).first->second;
  }

  bool HoldsEnums(const Descriptor* type) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // A type that refers back to one being worked out counts as holding
    // enums: the check then reads a field it might not have needed to.
    return in_progress_.contains(type) || !Build(type).empty();
  }

  absl::Mutex mu_;
  absl::node_hash_map<const Descriptor*, std::vector<const FieldDescriptor*>> index_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<const Descriptor*> in_progress_ ABSL_GUARDED_BY(mu_);
};

EnumFieldIndex& Index() {
  static EnumFieldIndex* const index = new EnumFieldIndex();
  return *index;
}

// Where a field sits: its parent's place, its own field and, in a repeated
// field, its index. Spelled out ("model.layers[2].activation") only for an
// error, so that a valid JobSpec builds no strings.
struct FieldPath {
  const FieldPath* parent = nullptr;
  const FieldDescriptor* field = nullptr;
  int index = -1;  // In a repeated field; -1 otherwise.

  std::string ToString() const {
    std::string out = parent != nullptr ? absl::StrCat(parent->ToString(), ".") : "";
    absl::StrAppend(&out, field->name());
    if (index >= 0) absl::StrAppend(&out, "[", index, "]");
    return out;
  }
};

absl::Status Unknown(const FieldPath& path, int value) {
  return absl::InvalidArgumentError(absl::StrCat(path.ToString(), " = ", value, ": not a value of ",
                                                 path.field->enum_type()->full_name()));
}

absl::Status CheckAt(const Message& message, const FieldPath* parent) {
  const Reflection& reflection = *message.GetReflection();
  for (const FieldDescriptor* field : Index().Of(message.GetDescriptor())) {
    if (field->type() == FieldDescriptor::TYPE_ENUM) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
          const int value = reflection.GetRepeatedEnumValue(message, field, i);
          if (field->enum_type()->FindValueByNumber(value) == nullptr) {
            return Unknown(FieldPath{parent, field, i}, value);
          }
        }
      } else {
        // An unset enum reads its default, which its type declares.
        const int value = reflection.GetEnumValue(message, field);
        if (field->enum_type()->FindValueByNumber(value) == nullptr) {
          return Unknown(FieldPath{parent, field}, value);
        }
      }
    } else if (field->is_repeated()) {
      for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
        const FieldPath path{parent, field, i};
        OOMGUARD_RETURN_IF_ERROR(CheckAt(reflection.GetRepeatedMessage(message, field, i), &path));
      }
    } else if (reflection.HasField(message, field)) {
      const FieldPath path{parent, field};
      OOMGUARD_RETURN_IF_ERROR(CheckAt(reflection.GetMessage(message, field), &path));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckEnumsKnown(const Message& message) { return CheckAt(message, nullptr); }

}  // namespace oomguard
