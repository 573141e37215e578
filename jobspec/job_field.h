// A JobSpec field named by its path ("parallelism.tensor_model_parallel_size",
// the proto field names joined by dots), set and read through the proto's
// reflection. It lets the flag table (megatron_flags.h) name the field a
// flag sets once, as data, and set it (parsing) and read it (writing,
// megatron_args_writer.h) from that name.
#ifndef OOMGUARD_JOBSPEC_JOB_FIELD_H_
#define OOMGUARD_JOBSPEC_JOB_FIELD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

class JobField {
 public:
  // The field at `path`. NotFound naming the path and the part that names
  // no field (or names a scalar where a message is needed).
  static absl::StatusOr<JobField> Find(absl::string_view path);

  const std::string& path() const { return path_; }
  const google::protobuf::FieldDescriptor& descriptor() const { return *leaf_; }

  // Setters of a singular field; the messages on the way are created. The
  // field's type must be the setter's (protobuf aborts otherwise).
  void SetUint32(v1::JobSpec* job, uint32_t value) const;
  void SetDouble(v1::JobSpec* job, double value) const;
  void SetBool(v1::JobSpec* job, bool value) const;
  void SetEnum(v1::JobSpec* job, int value) const;
  void SetString(v1::JobSpec* job, std::string value) const;

  // Appenders to a repeated field.
  void AddUint32(v1::JobSpec* job, uint32_t value) const;
  void AddEnum(v1::JobSpec* job, int value) const;
  void AddString(v1::JobSpec* job, std::string value) const;

  // Clears the field (unset, or an empty list).
  void Clear(v1::JobSpec* job) const;

  // Whether the field is set in `job`: present (a field with presence), not
  // its zero value (one without), or a list with entries.
  bool IsSet(const v1::JobSpec& job) const;

  // Whether the field is set alike in `a` and `b`: both unset, or both set
  // to the same value (the same entries, in order, for a list).
  bool SameIn(const v1::JobSpec& a, const v1::JobSpec& b) const;

  // Getters of a singular field (its default where `job` lacks it).
  uint32_t GetUint32(const v1::JobSpec& job) const;
  double GetDouble(const v1::JobSpec& job) const;
  bool GetBool(const v1::JobSpec& job) const;
  int GetEnum(const v1::JobSpec& job) const;
  std::string GetString(const v1::JobSpec& job) const;

  // The entries of a repeated field.
  std::vector<uint32_t> GetUint32s(const v1::JobSpec& job) const;
  std::vector<int> GetEnums(const v1::JobSpec& job) const;
  std::vector<std::string> GetStrings(const v1::JobSpec& job) const;

 private:
  JobField() = default;

  // The message in `job` that holds the field.
  google::protobuf::Message* MutableHolder(v1::JobSpec* job) const;
  // The same, read-only: a default instance where `job` lacks it.
  const google::protobuf::Message& Holder(const v1::JobSpec& job) const;

  std::string path_;
  // The message fields from JobSpec down to the holder.
  std::vector<const google::protobuf::FieldDescriptor*> messages_;
  const google::protobuf::FieldDescriptor* leaf_ = nullptr;
};

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_JOB_FIELD_H_
