// Every enum in a JobSpec must hold a value its .proto declares. proto3
// enums are open: a client can send `activation = 999` and the parser keeps
// it, so validation refuses such values (naming the field path and the
// value) before anything reads them.
#ifndef OOMGUARD_ESTIMATOR_KNOWN_ENUMS_H_
#define OOMGUARD_ESTIMATOR_KNOWN_ENUMS_H_

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace oomguard {

// InvalidArgument "model.activation = 999: not a value of oomguard.v1.
// Activation" for the first enum field (singular or repeated, at any depth)
// of `message` whose value its enum type does not declare.
absl::Status CheckEnumsKnown(const google::protobuf::Message& message);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_KNOWN_ENUMS_H_
