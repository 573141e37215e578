// Kubernetes workload objects -> Megatron-LM job (see webhook_workload.h).
#include "webhook/webhook_workload.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "jobscript/job_script.h"
#include "jobspec/megatron_args.h"

namespace oomguard::webhook {
namespace {

using json = nlohmann::json;

// Bounds far above any real object; they keep the arithmetic exact.
constexpr uint64_t kMaxGpusPerContainer = 4096;
constexpr uint64_t kMaxReplicas = 1000000;
constexpr uint64_t kMaxWorldSize = std::numeric_limits<uint32_t>::max();

// A JSON value (nullptr: absent or null) and its path, for messages.
struct Node {
  const json* value = nullptr;
  std::string path;

  explicit operator bool() const { return value != nullptr; }

  Node Get(absl::string_view key) const {
    const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
      return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    Node child{nullptr, plain ? absl::StrCat(path, path.empty() ? "" : ".", key)
                              : absl::StrCat(path, "[\"", key, "\"]")};
    if (value != nullptr && value->is_object()) {
      auto it = value->find(key);
      if (it != value->end() && !it->is_null()) child.value = &*it;
    }
    return child;
  }

  Node At(size_t i) const {
    return Node{value != nullptr && value->is_array() ? &(*value)[i] : nullptr,
                absl::StrCat(path, "[", i, "]")};
  }
};

// `value` in JSON, cut short for messages.
std::string Show(const json& value) {
  std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 64) s = absl::StrCat(s.substr(0, 61), "...");
  return s;
}

absl::Status Malformed(const Node& node, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(node.path, " = ", Show(*node.value), ": ", what));
}

// Type checks: absent is fine (the callers decide), a value of another type
// is InvalidArgument.
absl::Status ExpectObject(const Node& node) {
  if (node && !node.value->is_object()) return Malformed(node, "expected an object");
  return absl::OkStatus();
}
absl::Status ExpectArray(const Node& node) {
  if (node && !node.value->is_array()) return Malformed(node, "expected a list");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> ReadString(const Node& node) {
  if (!node) return std::optional<std::string>();
  if (!node.value->is_string()) return Malformed(node, "expected a string");
  return std::optional<std::string>(node.value->get<std::string>());
}

// A JSON integer >= 0 (parsed text holds them unsigned, built values signed).
std::optional<uint64_t> WholeNumber(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value.get<int64_t>());
  }
  return std::nullopt;
}

// A count (replicas, parallelism): absent = `fallback`.
absl::StatusOr<uint64_t> ReadCount(const Node& node, uint64_t fallback) {
  if (!node) return fallback;
  if (!node.value->is_number_integer()) return Malformed(node, "expected a whole number");
  std::optional<uint64_t> n = WholeNumber(*node.value);
  if (n.has_value() && *n <= kMaxReplicas) return *n;
  return Malformed(node, absl::StrCat("must be in [0, ", kMaxReplicas, "]"));
}

// A GPU quantity: "8" (how the API server writes quantities) or 8.
absl::StatusOr<uint64_t> ReadGpuQuantity(const Node& node) {
  if (!node) return 0;
  uint64_t n = 0;
  bool ok = false;
  if (node.value->is_number_integer()) {
    const std::optional<uint64_t> whole = WholeNumber(*node.value);
    ok = whole.has_value();
    n = whole.value_or(0);
  } else if (node.value->is_string()) {
    const std::string& s = node.value->get_ref<const std::string&>();
    ok = !s.empty() && s.size() <= 6 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         absl::SimpleAtoi(s, &n);
  }
  if (!ok || n > kMaxGpusPerContainer) {
    return Malformed(node,
                     absl::StrCat("not a whole number of GPUs in [0, ", kMaxGpusPerContainer, "]"));
  }
  return n;
}

absl::StatusOr<std::optional<std::string>> ReadAnnotation(const Node& metadata,
                                                          absl::string_view key) {
  const Node annotations = metadata.Get("annotations");
  if (absl::Status s = ExpectObject(annotations); !s.ok()) return s;
  return ReadString(annotations.Get(key));
}

// The nvidia.com/gpu of one container: limits, else requests.
absl::StatusOr<uint64_t> ContainerGpus(const Node& container) {
  const Node resources = container.Get("resources");
  if (absl::Status s = ExpectObject(resources); !s.ok()) return s;
  for (const char* field : {"limits", "requests"}) {
    const Node amounts = resources.Get(field);
    if (absl::Status s = ExpectObject(amounts); !s.ok()) return s;
    const Node gpus = amounts.Get(kGpuResource);
    if (gpus) return ReadGpuQuantity(gpus);
  }
  return 0;
}

absl::StatusOr<std::vector<std::string>> ReadWords(const Node& node) {
  std::vector<std::string> words;
  if (absl::Status s = ExpectArray(node); !s.ok()) return s;
  if (!node) return words;
  for (size_t i = 0; i < node.value->size(); ++i) {
    absl::StatusOr<std::optional<std::string>> word = ReadString(node.At(i));
    if (!word.ok()) return word.status();
    if (!word->has_value()) return Malformed(node.At(i), "expected a string");
    words.push_back(**std::move(word));
  }
  return words;
}

// The container's literal env values, each expanded with the ones before it
// (as the kubelet does).
absl::StatusOr<std::map<std::string, std::string>> ReadEnv(const Node& container) {
  std::map<std::string, std::string> env;
  const Node list = container.Get("env");
  if (absl::Status s = ExpectArray(list); !s.ok()) return s;
  if (!list) return env;
  for (size_t i = 0; i < list.value->size(); ++i) {
    const Node entry = list.At(i);
    if (absl::Status s = ExpectObject(entry); !s.ok()) return s;
    absl::StatusOr<std::optional<std::string>> name = ReadString(entry.Get("name"));
    if (!name.ok()) return name.status();
    absl::StatusOr<std::optional<std::string>> value = ReadString(entry.Get("value"));
    if (!value.ok()) return value.status();
    if (!name->has_value() || entry.Get("valueFrom")) continue;
    env[**name] = ExpandKubernetesReferences(value->value_or(""), env);
  }
  return env;
}

// `export NAME='value'` lines for the container's env, so that a shell
// script sees them as the shell would.
std::string ExportLines(const std::map<std::string, std::string>& env) {
  std::string lines;
  for (const auto& [name, value] : env) {
    const bool identifier = !name.empty() &&
                            !absl::ascii_isdigit(static_cast<unsigned char>(name[0])) &&
                            std::all_of(name.begin(), name.end(), [](char c) {
                              return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
                            });
    if (!identifier) continue;
    absl::StrAppend(&lines, "export ", name, "='", absl::StrReplaceAll(value, {{"'", "'\\''"}}),
                    "'\n");
  }
  return lines;
}

// Reads a container's words. `bash -c SCRIPT` (the form ParseCommandWords
// hands to ParseJobScript: a shell, then an option cluster holding `c`,
// within the first words) gets the env exported in front of SCRIPT.
absl::StatusOr<ScriptJob> ReadLaunch(std::vector<std::string> words,
                                     const std::map<std::string, std::string>& env) {
  auto is_shell = [](absl::string_view word) {
    const size_t slash = word.rfind('/');
    const absl::string_view name = slash == absl::string_view::npos ? word : word.substr(slash + 1);
    return name == "bash" || name == "sh";
  };
  auto is_dash_c = [](absl::string_view word) {
    return word.size() >= 2 && word[0] == '-' && word[1] != '-' && absl::StrContains(word, 'c') &&
           std::all_of(word.begin() + 1, word.end(),
                       [](char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); });
  };
  for (size_t k = 0; k + 2 < words.size() && k < 4; ++k) {
    if (is_shell(words[k]) && is_dash_c(words[k + 1])) {
      words[k + 2] = absl::StrCat(ExportLines(env), words[k + 2]);
      break;
    }
  }
  return ParseCommandWords(words);
}

// What one pod template says.
struct PodScan {
  bool launch = false;
  ScriptJob script;
  std::string container;
  std::map<std::string, std::string> env;
  uint64_t launch_gpus = 0;
  uint64_t total_gpus = 0;
  int launches = 0;
  std::string gpu_product;  // From the node selector or affinity.
  std::string gpu_product_source;

  uint64_t PodGpus() const { return launch ? launch_gpus : total_gpus; }
};

// The single value a required node affinity allows for the GPU product
// label, or empty.
absl::StatusOr<std::string> AffinityGpuProduct(const Node& spec) {
  const Node terms = spec.Get("affinity")
                         .Get("nodeAffinity")
                         .Get("requiredDuringSchedulingIgnoredDuringExecution")
                         .Get("nodeSelectorTerms");
  if (absl::Status s = ExpectArray(terms); !s.ok()) return s;
  if (!terms) return std::string();
  std::set<std::string> values;
  for (size_t t = 0; t < terms.value->size(); ++t) {
    const Node expressions = terms.At(t).Get("matchExpressions");
    if (absl::Status s = ExpectArray(expressions); !s.ok()) return s;
    if (!expressions) continue;
    for (size_t e = 0; e < expressions.value->size(); ++e) {
      const Node expression = expressions.At(e);
      const json* key = expression.Get("key").value;
      const json* op = expression.Get("operator").value;
      if (key == nullptr || *key != kGpuProductLabel || op == nullptr || *op != "In") continue;
      absl::StatusOr<std::vector<std::string>> in = ReadWords(expression.Get("values"));
      if (!in.ok()) return in.status();
      values.insert(in->begin(), in->end());
    }
  }
  return values.size() == 1 ? *values.begin() : std::string();
}

absl::StatusOr<PodScan> ScanPodSpec(const Node& spec) {
  PodScan scan;
  if (absl::Status s = ExpectObject(spec); !s.ok()) return s;
  const Node containers = spec.Get("containers");
  if (absl::Status s = ExpectArray(containers); !s.ok()) return s;
  const size_t n = containers ? containers.value->size() : 0;
  for (size_t i = 0; i < n; ++i) {
    const Node container = containers.At(i);
    if (absl::Status s = ExpectObject(container); !s.ok()) return s;
    absl::StatusOr<uint64_t> gpus = ContainerGpus(container);
    if (!gpus.ok()) return gpus.status();
    scan.total_gpus += *gpus;
    absl::StatusOr<std::map<std::string, std::string>> env = ReadEnv(container);
    if (!env.ok()) return env.status();
    absl::StatusOr<std::vector<std::string>> command = ReadWords(container.Get("command"));
    if (!command.ok()) return command.status();
    absl::StatusOr<std::vector<std::string>> args = ReadWords(container.Get("args"));
    if (!args.ok()) return args.status();
    std::vector<std::string> words = *command;
    words.insert(words.end(), args->begin(), args->end());
    if (words.empty()) continue;
    for (std::string& word : words) word = ExpandKubernetesReferences(word, *env);
    absl::StatusOr<std::optional<std::string>> name = ReadString(container.Get("name"));
    if (!name.ok()) return name.status();
    const std::string where = absl::StrCat(container.path, " (\"", name->value_or(""), "\")");
    absl::StatusOr<ScriptJob> script = ReadLaunch(words, *env);
    // No command: the image's entrypoint is often a shell running the one
    // argument as a script.
    if (script.ok() && !script->found && command->empty() && words.size() == 1) {
      script = ReadLaunch({"sh", "-c", words[0]}, *env);
    }
    if (!script.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " command/args: ", script.status().message()));
    }
    if (!script->found) continue;
    if (++scan.launches > 1) continue;
    scan.launch = true;
    scan.container = where;
    scan.launch_gpus = *gpus;
    scan.env = *std::move(env);
    scan.script = *std::move(script);
  }
  const Node selector = spec.Get("nodeSelector");
  if (absl::Status s = ExpectObject(selector); !s.ok()) return s;
  const Node product = selector.Get(kGpuProductLabel);
  absl::StatusOr<std::optional<std::string>> selected = ReadString(product);
  if (!selected.ok()) return selected.status();
  if (selected->has_value() && !(*selected)->empty()) {
    scan.gpu_product = **selected;
    scan.gpu_product_source = product.path;
  } else {
    absl::StatusOr<std::string> affinity = AffinityGpuProduct(spec);
    if (!affinity.ok()) return affinity.status();
    if (!affinity->empty()) {
      scan.gpu_product = *affinity;
      scan.gpu_product_source =
          absl::StrCat(spec.path, ".affinity (required node affinity on ", kGpuProductLabel, ")");
    }
  }
  return scan;
}

// A set of identical pods of the object, running at once.
struct PodGroup {
  Node metadata;  // The template's.
  Node spec;      // A PodSpec.
  uint64_t pods = 1;
};

// Pods of a batch/v1 JobSpec running at once.
absl::StatusOr<uint64_t> JobPods(const Node& job_spec) {
  if (absl::Status s = ExpectObject(job_spec); !s.ok()) return s;
  absl::StatusOr<uint64_t> parallelism = ReadCount(job_spec.Get("parallelism"), 1);
  if (!parallelism.ok()) return parallelism.status();
  const Node completions_node = job_spec.Get("completions");
  absl::StatusOr<uint64_t> completions = ReadCount(completions_node, *parallelism);
  if (!completions.ok()) return completions.status();
  return std::min(*parallelism, *completions);
}

absl::StatusOr<PodGroup> PodTemplateGroup(const Node& pod_template, uint64_t pods) {
  if (absl::Status s = ExpectObject(pod_template); !s.ok()) return s;
  PodGroup group{pod_template.Get("metadata"), pod_template.Get("spec"), pods};
  if (absl::Status s = ExpectObject(group.metadata); !s.ok()) return s;
  return group;
}

absl::StatusOr<std::vector<PodGroup>> PodGroups(const Node& object, WorkloadKind kind) {
  const Node spec = object.Get("spec");
  if (absl::Status s = ExpectObject(spec); !s.ok()) return s;
  std::vector<PodGroup> groups;
  switch (kind) {
    case WorkloadKind::kPod:
      groups.push_back(PodGroup{object.Get("metadata"), spec, 1});
      break;
    case WorkloadKind::kJob: {
      absl::StatusOr<uint64_t> pods = JobPods(spec);
      if (!pods.ok()) return pods.status();
      absl::StatusOr<PodGroup> group = PodTemplateGroup(spec.Get("template"), *pods);
      if (!group.ok()) return group.status();
      groups.push_back(*std::move(group));
      break;
    }
    case WorkloadKind::kPyTorchJob: {
      const Node replica_specs = spec.Get("pytorchReplicaSpecs");
      if (absl::Status s = ExpectObject(replica_specs); !s.ok()) return s;
      if (!replica_specs) break;
      // Master first: it is rank 0 and usually holds the full launch.
      std::vector<std::string> types;
      for (const auto& [type, unused] : replica_specs.value->items()) types.push_back(type);
      std::stable_partition(types.begin(), types.end(),
                            [](const std::string& t) { return t == "Master"; });
      for (const std::string& type : types) {
        const Node replica = replica_specs.Get(type);
        if (absl::Status s = ExpectObject(replica); !s.ok()) return s;
        if (!replica) continue;
        absl::StatusOr<uint64_t> replicas = ReadCount(replica.Get("replicas"), 1);
        if (!replicas.ok()) return replicas.status();
        absl::StatusOr<PodGroup> group = PodTemplateGroup(replica.Get("template"), *replicas);
        if (!group.ok()) return group.status();
        groups.push_back(*std::move(group));
      }
      break;
    }
    case WorkloadKind::kJobSet: {
      const Node jobs = spec.Get("replicatedJobs");
      if (absl::Status s = ExpectArray(jobs); !s.ok()) return s;
      const size_t n = jobs ? jobs.value->size() : 0;
      for (size_t i = 0; i < n; ++i) {
        const Node job = jobs.At(i);
        if (absl::Status s = ExpectObject(job); !s.ok()) return s;
        absl::StatusOr<uint64_t> replicas = ReadCount(job.Get("replicas"), 1);
        if (!replicas.ok()) return replicas.status();
        const Node job_template = job.Get("template");
        if (absl::Status s = ExpectObject(job_template); !s.ok()) return s;
        const Node job_spec = job_template.Get("spec");
        absl::StatusOr<uint64_t> pods = JobPods(job_spec);
        if (!pods.ok()) return pods.status();
        absl::StatusOr<PodGroup> group =
            PodTemplateGroup(job_spec.Get("template"), *replicas * *pods);
        if (!group.ok()) return group.status();
        groups.push_back(*std::move(group));
      }
      break;
    }
  }
  return groups;
}

// The kind and name of the object's controller, or empty.
absl::StatusOr<std::string> Controller(const Node& metadata) {
  const Node owners = metadata.Get("ownerReferences");
  if (absl::Status s = ExpectArray(owners); !s.ok()) return s;
  const size_t n = owners ? owners.value->size() : 0;
  for (size_t i = 0; i < n; ++i) {
    const Node owner = owners.At(i);
    const json* controller = owner.Get("controller").value;
    if (controller == nullptr || *controller != true) continue;
    absl::StatusOr<std::optional<std::string>> kind = ReadString(owner.Get("kind"));
    if (!kind.ok()) return kind.status();
    absl::StatusOr<std::optional<std::string>> name = ReadString(owner.Get("name"));
    if (!name.ok()) return name.status();
    return absl::StrCat(kind->value_or("?"), "/", name->value_or("?"));
  }
  return std::string();
}

absl::StatusOr<uint32_t> ReadGpusPerNode(const Node& metadata) {
  absl::StatusOr<std::optional<std::string>> value =
      ReadAnnotation(metadata, kGpusPerNodeAnnotation);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return 0;
  uint32_t n = 0;
  if (!absl::SimpleAtoi(**value, &n) || n == 0 || n > kMaxGpusPerContainer) {
    return Malformed(metadata.Get("annotations").Get(kGpusPerNodeAnnotation),
                     absl::StrCat("must be a whole number in [1, ", kMaxGpusPerContainer, "]"));
  }
  return n;
}

WorkloadJob NotJudged(std::string reason) {
  WorkloadJob job;
  job.not_judged = std::move(reason);
  return job;
}

}  // namespace

std::optional<WorkloadKind> WorkloadKindOf(absl::string_view group, absl::string_view kind) {
  if (group.empty() && kind == "Pod") return WorkloadKind::kPod;
  if (group == "batch" && kind == "Job") return WorkloadKind::kJob;
  if (group == "kubeflow.org" && kind == "PyTorchJob") return WorkloadKind::kPyTorchJob;
  if (group == "jobset.x-k8s.io" && kind == "JobSet") return WorkloadKind::kJobSet;
  return std::nullopt;
}

absl::string_view WorkloadKindName(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kPod:
      return "Pod";
    case WorkloadKind::kJob:
      return "Job";
    case WorkloadKind::kPyTorchJob:
      return "PyTorchJob";
    case WorkloadKind::kJobSet:
      return "JobSet";
  }
  return "?";
}

std::string ExpandKubernetesReferences(absl::string_view text,
                                       const std::map<std::string, std::string>& env) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 == text.size()) {
      out.push_back(text[i]);
      continue;
    }
    if (text[i + 1] == '$') {  // "$$" is an escaped '$'.
      out.push_back('$');
      ++i;
      continue;
    }
    const size_t close = text[i + 1] == '(' ? text.find(')', i + 2) : absl::string_view::npos;
    if (close == absl::string_view::npos) {
      out.push_back('$');
      continue;
    }
    const std::string name(text.substr(i + 2, close - i - 2));
    auto it = env.find(name);
    if (it != env.end()) {
      out += it->second;
    } else {
      absl::StrAppend(&out, text.substr(i, close - i + 1));
    }
    i = close;
  }
  return out;
}

absl::StatusOr<WorkloadJob> ReadWorkload(const json& object_json, WorkloadKind kind) {
  const Node object{&object_json, ""};
  if (!object_json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("object = ", Show(object_json), ": expected an object"));
  }
  const Node metadata = object.Get("metadata");
  if (absl::Status s = ExpectObject(metadata); !s.ok()) return s;

  absl::StatusOr<std::optional<std::string>> skip = ReadAnnotation(metadata, kSkipAnnotation);
  if (!skip.ok()) return skip.status();
  if (skip->has_value() && absl::EqualsIgnoreCase(**skip, "true")) {
    return NotJudged(absl::StrCat("annotation ", kSkipAnnotation));
  }
  if (kind == WorkloadKind::kPod || kind == WorkloadKind::kJob) {
    absl::StatusOr<std::string> controller = Controller(metadata);
    if (!controller.ok()) return controller.status();
    if (!controller->empty() &&
        (kind == WorkloadKind::kPod || !absl::StartsWith(*controller, "CronJob/"))) {
      return NotJudged(absl::StrCat("controlled by ", *controller));
    }
  }

  absl::StatusOr<std::vector<PodGroup>> groups = PodGroups(object, kind);
  if (!groups.ok()) return groups.status();
  std::vector<PodScan> scans;
  const PodGroup* launch_group = nullptr;
  const PodScan* launch = nullptr;
  uint64_t world = 0;
  for (const PodGroup& group : *groups) {
    absl::StatusOr<PodScan> scan = ScanPodSpec(group.spec);
    if (!scan.ok()) return scan.status();
    scans.push_back(*std::move(scan));
    const uint64_t per_pod = scans.back().PodGpus();
    // Checked before multiplying: the factors come from the object.
    if (per_pod > kMaxWorldSize ||
        (per_pod > 0 && group.pods > (kMaxWorldSize - world) / per_pod)) {
      return absl::InvalidArgumentError(absl::StrCat(
          group.spec.path, ": the object asks for more than ", kMaxWorldSize, " GPUs"));
    }
    world += group.pods * per_pod;
    if (world > kMaxWorldSize) {
      return absl::InvalidArgumentError(absl::StrCat(
          group.spec.path, ": the object asks for more than ", kMaxWorldSize, " GPUs"));
    }
  }
  for (size_t i = 0; i < scans.size(); ++i) {
    if (scans[i].launch) {
      launch_group = &(*groups)[i];
      launch = &scans[i];
      break;
    }
  }
  if (launch == nullptr) return NotJudged("no Megatron-LM launch");
  const ScriptJob& script = launch->script;
  if (script.skip) return NotJudged("#OOMGUARD skip");

  WorkloadJob job;
  job.judge = true;
  job.container = launch->container;
  job.megatron_args = script.megatron_args;
  job.safety_margin = script.safety_margin;
  for (const char* name : {"PYTORCH_CUDA_ALLOC_CONF", "NCCL_GRAPH_REGISTER"}) {
    if (auto it = launch->env.find(name); it != launch->env.end()) job.env[name] = it->second;
  }
  for (const auto& [name, value] : script.env) job.env[name] = value;
  for (const std::string& word : script.unresolved) {
    if (MayChangeMemory(word)) job.unresolved.push_back(word);
  }
  if (launch->launches > 1) {
    job.warnings.push_back(absl::StrCat("oomguard: ", launch->launches,
                                        " containers of one pod launch Megatron-LM; judged "
                                        "the first, ",
                                        job.container));
  }

  // World size.
  job.num_gpus = static_cast<uint32_t>(world);
  if (script.num_gpus > 0) {
    if (kind != WorkloadKind::kPod && world > 0 && script.num_gpus != world) {
      job.warnings.push_back(absl::StrCat("oomguard: judged with ", script.num_gpus,
                                          " GPUs from #OOMGUARD gpus=; the object requests ", world,
                                          " ", kGpuResource));
    }
    job.num_gpus = script.num_gpus;
  }
  if (job.num_gpus == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        job.container, " launches Megatron-LM but the object requests no ", kGpuResource,
        " (set resources.limits[\"", kGpuResource, "\"] or an #OOMGUARD gpus=N directive)"));
  }

  // Model and GPUs per node.
  absl::StatusOr<std::optional<std::string>> preset = ReadAnnotation(metadata, kPresetAnnotation);
  if (!preset.ok()) return preset.status();
  job.preset = preset->value_or(script.preset);
  absl::StatusOr<uint32_t> per_node = ReadGpusPerNode(metadata);
  if (!per_node.ok()) return per_node.status();
  job.gpus_per_node = *per_node > 0              ? *per_node
                      : script.gpus_per_node > 0 ? script.gpus_per_node
                                                 : static_cast<uint32_t>(launch->launch_gpus);

  // GPU type.
  for (const Node* annotated : {&metadata, &launch_group->metadata}) {
    absl::StatusOr<std::optional<std::string>> gpu = ReadAnnotation(*annotated, kGpuAnnotation);
    if (!gpu.ok()) return gpu.status();
    if (gpu->has_value() && !(*gpu)->empty()) {
      job.gpu = **gpu;
      job.gpu_source = annotated->Get("annotations").Get(kGpuAnnotation).path;
      break;
    }
  }
  if (job.gpu.empty() && !script.gpu.empty()) {
    job.gpu = script.gpu;
    job.gpu_source = absl::StrCat(job.container, " #OOMGUARD gpu=");
  }
  if (job.gpu.empty() && !launch->gpu_product.empty()) {
    job.gpu = launch->gpu_product;
    job.gpu_source = launch->gpu_product_source;
  }
  if (job.gpu.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the GPU type is unknown: set annotation ", kGpuAnnotation,
                     " (e.g. H100-SXM-80GB) or nodeSelector ", kGpuProductLabel));
  }
  return job;
}

}  // namespace oomguard::webhook
