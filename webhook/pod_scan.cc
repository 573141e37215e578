// One pod template's launch, GPUs and GPU product (see pod_scan.h).
#include "webhook/pod_scan.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"

namespace oomguard::webhook {
namespace {

using json = nlohmann::json;

// A GPU quantity: "8" (how the API server writes quantities) or 8.
absl::StatusOr<uint64_t> ReadGpuQuantity(const JsonNode& node) {
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

// The nvidia.com/gpu of one container: limits, else requests.
absl::StatusOr<uint64_t> ContainerGpus(const JsonNode& container) {
  const JsonNode resources = container.Get("resources");
  OOMGUARD_RETURN_IF_ERROR(ExpectObject(resources));
  for (const char* field : {"limits", "requests"}) {
    const JsonNode amounts = resources.Get(field);
    OOMGUARD_RETURN_IF_ERROR(ExpectObject(amounts));
    const JsonNode gpus = amounts.Get(kGpuResource);
    if (gpus) return ReadGpuQuantity(gpus);
  }
  return 0;
}

// The container's literal env values, each expanded with the ones before it
// (as the kubelet does), taking what they produce from `budget`.
absl::StatusOr<std::map<std::string, std::string>> ReadEnv(const JsonNode& container,
                                                           size_t& budget) {
  std::map<std::string, std::string> env;
  const JsonNode list = container.Get("env");
  OOMGUARD_RETURN_IF_ERROR(ExpectArray(list));
  if (!list) return env;
  for (size_t i = 0; i < list.value->size(); ++i) {
    const JsonNode entry = list.At(i);
    OOMGUARD_RETURN_IF_ERROR(ExpectObject(entry));
    OOMGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> name, ReadString(entry.Get("name")));
    OOMGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> value,
                              ReadString(entry.Get("value")));
    if (!name.has_value() || entry.Get("valueFrom")) continue;
    absl::StatusOr<std::string> expanded =
        ExpandKubernetesReferences(value.value_or(""), env, budget);
    if (!expanded.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(entry.path, " (\"", *name, "\"): ", expanded.status().message()));
    }
    env[*name] = *std::move(expanded);
  }
  return env;
}

// The single value a required node affinity allows for the GPU product
// label, or empty.
absl::StatusOr<std::string> AffinityGpuProduct(const JsonNode& spec) {
  const JsonNode terms = spec.Get("affinity")
                             .Get("nodeAffinity")
                             .Get("requiredDuringSchedulingIgnoredDuringExecution")
                             .Get("nodeSelectorTerms");
  OOMGUARD_RETURN_IF_ERROR(ExpectArray(terms));
  if (!terms) return std::string();
  std::set<std::string> values;
  for (size_t t = 0; t < terms.value->size(); ++t) {
    const JsonNode expressions = terms.At(t).Get("matchExpressions");
    OOMGUARD_RETURN_IF_ERROR(ExpectArray(expressions));
    if (!expressions) continue;
    for (size_t e = 0; e < expressions.value->size(); ++e) {
      const JsonNode expression = expressions.At(e);
      const json* key = expression.Get("key").value;
      const json* op = expression.Get("operator").value;
      if (key == nullptr || *key != kGpuProductLabel || op == nullptr || *op != "In") continue;
      OOMGUARD_ASSIGN_OR_RETURN(const std::vector<std::string> in,
                                ReadStringList(expression.Get("values")));
      values.insert(in.begin(), in.end());
    }
  }
  return values.size() == 1 ? *values.begin() : std::string();
}

// A `$(NAME)` Kubernetes expanded inside a script's text (`bash -c "...
// --micro-batch-size $(MBS)"`) reaches the reader as its value, which it
// cannot tell from literal text: each launch word that holds the value of a
// reference `replaced` names (and that names no variable yet) names the
// reference, so errors about it never show the value (issue 25, item 12).
// A word holding the value by chance is named too: the message names a
// variable where it could have shown the word, never the reverse.
void NameReferencesInScriptWords(const std::set<std::string>& replaced,
                                 const std::map<std::string, std::string>& env, ScriptJob& script) {
  if (replaced.empty()) return;
  script.megatron_arg_sources.resize(script.megatron_args.size());
  for (size_t i = 0; i < script.megatron_args.size(); ++i) {
    std::string& sources = script.megatron_arg_sources[i];
    if (!sources.empty()) continue;
    for (const std::string& name : replaced) {
      const auto value = env.find(name);
      if (value == env.end() || value->second.empty()) continue;
      if (absl::StrContains(script.megatron_args[i], value->second)) {
        absl::StrAppend(&sources, sources.empty() ? "" : ", ", "$(", name, ")");
      }
    }
  }
}

}  // namespace

absl::StatusOr<PodScan> ScanPodSpec(const JsonNode& spec, const Deadline& deadline) {
  PodScan scan;
  OOMGUARD_RETURN_IF_ERROR(ExpectObject(spec));
  const JsonNode containers = spec.Get("containers");
  OOMGUARD_RETURN_IF_ERROR(ExpectArray(containers));
  const size_t n = containers ? containers.value->size() : 0;
  for (size_t i = 0; i < n; ++i) {
    const JsonNode container = containers.At(i);
    OOMGUARD_RETURN_IF_ERROR(ExpectObject(container));
    OOMGUARD_ASSIGN_OR_RETURN(const uint64_t gpus, ContainerGpus(container));
    scan.total_gpus += gpus;
    if (gpus > 0) scan.gpu_container_pointers.push_back(container.pointer);
    size_t budget = kMaxExpandedBytes;
    OOMGUARD_ASSIGN_OR_RETURN(auto env, ReadEnv(container, budget));
    OOMGUARD_ASSIGN_OR_RETURN(const std::vector<std::string> command,
                              ReadStringList(container.Get("command")));
    OOMGUARD_ASSIGN_OR_RETURN(const std::vector<std::string> args,
                              ReadStringList(container.Get("args")));
    std::vector<std::string> words = command;
    words.insert(words.end(), args.begin(), args.end());
    if (words.empty()) continue;
    OOMGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> name,
                              ReadString(container.Get("name")));
    const std::string where = absl::StrCat(container.path, " (\"", name.value_or(""), "\")");
    // Each word's env references: named in errors instead of their values.
    std::vector<std::string> word_sources(words.size());
    std::set<std::string> all_replaced;
    for (size_t w = 0; w < words.size(); ++w) {
      std::vector<std::string> replaced;
      absl::StatusOr<std::string> expanded =
          ExpandKubernetesReferences(words[w], env, budget, &replaced);
      if (!expanded.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " command/args: ", expanded.status().message()));
      }
      words[w] = *std::move(expanded);
      word_sources[w] = absl::StrJoin(
          replaced, ", ",
          [](std::string* out, const std::string& name) { absl::StrAppend(out, "$(", name, ")"); });
      all_replaced.insert(replaced.begin(), replaced.end());
    }
    absl::StatusOr<ScriptJob> script = ParseCommandWords(words, env, deadline, word_sources);
    // No command: the image's entrypoint is often a shell running the one
    // argument as a script.
    if (script.ok() && !script->found && command.empty() && words.size() == 1) {
      script = ParseCommandWords({"sh", "-c", words[0]}, env, deadline);
    }
    if (!script.ok()) {
      // The reader's code stays: a script it cannot read within its bounds
      // is not an invalid one.
      return absl::Status(script.status().code(),
                          absl::StrCat(where, " command/args: ", script.status().message()));
    }
    if (!script->found) continue;
    NameReferencesInScriptWords(all_replaced, env, *script);
    if (++scan.launches > 1) continue;
    scan.launch = true;
    scan.container = where;
    scan.launch_pointer = container.pointer;
    scan.launch_gpus = gpus;
    scan.env = std::move(env);
    scan.script = *std::move(script);
  }
  const JsonNode selector = spec.Get("nodeSelector");
  OOMGUARD_RETURN_IF_ERROR(ExpectObject(selector));
  const JsonNode product = selector.Get(kGpuProductLabel);
  OOMGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> selected, ReadString(product));
  if (selected.has_value() && !selected->empty()) {
    scan.gpu_product = *selected;
    scan.gpu_product_source = product.path;
  } else {
    OOMGUARD_ASSIGN_OR_RETURN(std::string affinity, AffinityGpuProduct(spec));
    if (!affinity.empty()) {
      scan.gpu_product = std::move(affinity);
      scan.gpu_product_source =
          absl::StrCat(spec.path, ".affinity (required node affinity on ", kGpuProductLabel, ")");
    }
  }
  return scan;
}

absl::StatusOr<std::string> ExpandKubernetesReferences(
    absl::string_view text, const std::map<std::string, std::string>& env, size_t& budget,
    std::vector<std::string>* replaced) {
  std::string out;
  const auto over = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("its $(NAME) references expand past ", kMaxExpandedBytes,
                     " bytes (the limit of one container's expanded env values and command "
                     "words)"));
  };
  out.reserve(std::min(text.size(), budget));
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= budget) return over();
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
    const absl::string_view piece =
        it != env.end() ? absl::string_view(it->second) : text.substr(i, close - i + 1);
    if (it != env.end() && replaced != nullptr &&
        std::find(replaced->begin(), replaced->end(), name) == replaced->end()) {
      replaced->push_back(name);
    }
    if (piece.size() > budget - out.size()) return over();
    absl::StrAppend(&out, piece);
    i = close;
  }
  if (out.size() > budget) return over();
  budget -= out.size();
  return out;
}

}  // namespace oomguard::webhook
