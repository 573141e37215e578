// A JobSpec field named by its path ("parallelism.tensor_model_parallel_size",
// the proto field names joined by dots), set through the proto's
// reflection. It lets the flag table (megatron_flags.h) name the field a
// flag sets once, as data, and set it from that name.
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

 private:
  JobField() = default;

  // The message in `job` that holds the field.
  google::protobuf::Message* MutableHolder(v1::JobSpec* job) const;

  std::string path_;
  // The message fields from JobSpec down to the holder.
  std::vector<const google::protobuf::FieldDescriptor*> messages_;
  const google::protobuf::FieldDescriptor* leaf_ = nullptr;
};

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_JOB_FIELD_H_
