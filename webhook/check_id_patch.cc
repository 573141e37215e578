// The check id's JSONPatch (see check_id_patch.h).
#include "webhook/check_id_patch.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace oomguard::webhook {
namespace {

using json = nlohmann::json;

// The value at `pointer`, or nullptr when it is absent or null.
const json* Find(const json& object, const std::string& pointer) {
  const json::json_pointer at(pointer);
  if (!object.contains(at)) return nullptr;
  const json& value = object.at(at);
  return value.is_null() ? nullptr : &value;
}

// The pointer's parent ("" for a member of the document itself).
std::string Parent(const std::string& pointer) { return pointer.substr(0, pointer.rfind('/')); }

json Add(const std::string& path, json value) {
  return json{{"op", "add"}, {"path", path}, {"value", std::move(value)}};
}

// RFC 6901: '~' is "~0", '/' is "~1".
std::string PointerKey(absl::string_view key) {
  return absl::StrReplaceAll(key, {{"~", "~0"}, {"/", "~1"}});
}

void AnnotateMetadata(const json& object, const std::string& metadata, const std::string& id,
                      json& patch) {
  const json* found = Find(object, metadata);
  if (found == nullptr) {
    // A pod template without metadata: made, unless its template is missing.
    if (!metadata.empty() && Find(object, Parent(metadata)) == nullptr) return;
    patch.push_back(Add(metadata, json{{"annotations", {{kCheckIdAnnotation, id}}}}));
    return;
  }
  if (!found->is_object()) return;
  const std::string annotations = absl::StrCat(metadata, "/annotations");
  const json* present = Find(object, annotations);
  if (present == nullptr || !present->is_object()) {
    patch.push_back(Add(annotations, json{{kCheckIdAnnotation, id}}));
  } else {
    // "add" to a member that is there replaces its value.
    patch.push_back(Add(absl::StrCat(annotations, "/", PointerKey(kCheckIdAnnotation)), id));
  }
}

void MarkContainer(const json& object, const std::string& container, const std::string& id,
                   json& patch) {
  const json* found = Find(object, container);
  if (found == nullptr || !found->is_object()) return;
  const json entry = {{"name", kCheckIdEnv}, {"value", id}};
  const std::string env_path = absl::StrCat(container, "/env");
  const json* env = Find(object, env_path);
  if (env == nullptr || !env->is_array()) {
    patch.push_back(Add(env_path, json::array({entry})));
  } else {
    size_t at = env->size();
    for (size_t i = 0; i < env->size(); ++i) {
      const json& e = (*env)[i];
      if (e.is_object() && e.value("name", json()) == kCheckIdEnv) {
        at = i;
        break;
      }
    }
    if (at == env->size()) {
      patch.push_back(Add(absl::StrCat(env_path, "/-"), entry));
    } else {
      patch.push_back(
          json{{"op", "replace"}, {"path", absl::StrCat(env_path, "/", at)}, {"value", entry}});
    }
  }
  const json* policy = Find(object, absl::StrCat(container, "/", kTerminationMessagePolicy));
  if (policy == nullptr || *policy == "File") {
    patch.push_back(
        Add(absl::StrCat(container, "/", kTerminationMessagePolicy), kFallbackToLogsOnError));
  }
}

}  // namespace

json CheckIdPatch(const json& object, const WorkloadJob& job, absl::string_view check_id) {
  const std::string id(check_id);
  json patch = json::array();
  std::set<std::string> done;
  for (const std::string& metadata : job.pod_metadata) {
    if (done.insert(metadata).second) AnnotateMetadata(object, metadata, id, patch);
  }
  for (const std::string& container : job.training_containers) {
    if (done.insert(container).second) MarkContainer(object, container, id, patch);
  }
  return patch;
}

}  // namespace oomguard::webhook
