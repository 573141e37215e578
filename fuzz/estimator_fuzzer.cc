// Fuzzes the estimator on valid-looking jobs and checks what every report
// must satisfy (estimator/report_invariants.h). The input decodes into a
// JobSpec: a preset's model (or a small model of its own), then a bounded
// number of fields of JobSpec, any of them (found through the proto's
// reflection, so a new knob is fuzzed without editing this file), set to
// values a real job might carry (mostly small powers of two, declared enum
// values, fractions), and a world size its parallelism divides. A job the
// estimator accepts must satisfy CheckReportInvariants; so must the same job
// grown 2-8x in its micro-batch, sequence, layers, hidden size or experts
// (estimator/grown_job.h), which must also not shrink any count of any rank
// (CheckGrowsWith). A violation aborts.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "estimator/grown_job.h"
#include "fuzz/fuzz_checks.h"
#include "jobspec/presets.h"

namespace oomguard::fuzz {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// A settable leaf of JobSpec: the path of sub-message fields to it, then it.
struct Leaf {
  std::vector<const FieldDescriptor*> path;
  const FieldDescriptor* field;
};

void CollectLeaves(const Descriptor* descriptor, std::vector<const FieldDescriptor*>& path,
                   std::vector<Leaf>& leaves) {
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->name() == "num_gpus" || field->name() == "name") continue;
    if (field->type() == FieldDescriptor::TYPE_MESSAGE && !field->is_repeated()) {
      path.push_back(field);
      CollectLeaves(field->message_type(), path, leaves);
      path.pop_back();
    } else {
      leaves.push_back(Leaf{path, field});
    }
  }
}

const std::vector<Leaf>& Leaves() {
  static const std::vector<Leaf>* leaves = [] {
    auto* all = new std::vector<Leaf>;
    std::vector<const FieldDescriptor*> path;
    CollectLeaves(v1::JobSpec::descriptor(), path, *all);
    return all;
  }();
  return *leaves;
}

// A count a job might hold: mostly small or a power of two, sometimes
// anything up to 2^31.
uint32_t Count(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      return in.ConsumeIntegralInRange<uint32_t>(0, 16);
    case 1:
      return uint32_t{1} << in.ConsumeIntegralInRange<int>(0, 20);
    case 2:
      return in.ConsumeIntegralInRange<uint32_t>(1, 1024) * 64;
    default:
      return in.ConsumeIntegralInRange<uint32_t>(0, uint32_t{1} << 31);
  }
}

const char* const kLayouts[] = {"Et|tL",      "Ettt|ttttL",   "E|(tt|)*2L",
                                "Et*3|t*3mL", "Et|(tt|)*3mL", "E|t|t|L"};
const char* const kModuleNames[] = {"core_attn", "attn_norm",  "mlp_norm", "expert_fc1",
                                    "moe_act",   "attn_proj",  "mlp",      "moe",
                                    "layernorm", "mla_up_proj"};

void SetLeaf(FuzzedDataProvider& in, const Leaf& leaf, v1::JobSpec& job) {
  Message* message = &job;
  for (const FieldDescriptor* step : leaf.path) {
    message = message->GetReflection()->MutableMessage(message, step);
  }
  const Reflection* r = message->GetReflection();
  const FieldDescriptor* f = leaf.field;
  if (f->is_repeated()) {
    r->ClearField(message, f);
    const int n = f->type() == FieldDescriptor::TYPE_UINT32 ? in.ConsumeIntegralInRange<int>(0, 128)
                                                            : in.ConsumeIntegralInRange<int>(0, 4);
    for (int i = 0; i < n; ++i) {
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_UINT32:
          r->AddUInt32(message, f, in.ConsumeIntegralInRange<uint32_t>(0, 1));
          break;
        case FieldDescriptor::CPPTYPE_ENUM: {
          const auto* e = f->enum_type();
          r->AddEnum(message, f, e->value(in.ConsumeIntegralInRange<int>(0, e->value_count() - 1)));
          break;
        }
        case FieldDescriptor::CPPTYPE_STRING:
          r->AddString(message, f,
                       in.ConsumeBool() ? std::string(in.PickValueInArray(kModuleNames))
                                        : in.ConsumeRandomLengthString(16));
          break;
        default:
          return;
      }
    }
    return;
  }
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT32:
      r->SetUInt32(message, f, Count(in));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      r->SetBool(message, f, in.ConsumeBool());
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      r->SetDouble(message, f,
                   in.ConsumeBool() ? in.ConsumeProbability<double>()
                                    : in.ConsumeFloatingPointInRange<double>(-1.0, 4.0));
      break;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* e = f->enum_type();
      r->SetEnum(message, f, e->value(in.ConsumeIntegralInRange<int>(0, e->value_count() - 1)));
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      r->SetString(message, f,
                   in.ConsumeBool() ? std::string(in.PickValueInArray(kLayouts))
                                    : in.ConsumeRandomLengthString(32));
      break;
    default:
      break;
  }
}

void Fuzz(FuzzedDataProvider& in) {
  v1::JobSpec job;
  const std::vector<PresetInfo>& presets = ListPresets();
  const size_t preset = in.ConsumeIntegralInRange<size_t>(0, presets.size());
  if (preset < presets.size()) {
    absl::StatusOr<v1::ModelSpec> model = FindPreset(presets[preset].name);
    Expect(model.ok(), "FindPreset " + presets[preset].name);
    *job.mutable_model() = *model;
  } else {
    v1::ModelSpec& model = *job.mutable_model();
    const uint32_t heads = uint32_t{1} << in.ConsumeIntegralInRange<int>(0, 6);
    model.set_num_layers(in.ConsumeIntegralInRange<uint32_t>(1, 64));
    model.set_num_attention_heads(heads);
    model.set_hidden_size(heads * (uint32_t{16} << in.ConsumeIntegralInRange<int>(0, 4)));
    model.set_vocab_size(in.ConsumeIntegralInRange<uint32_t>(1, 256) * 512);
  }
  job.mutable_training()->set_micro_batch_size(uint32_t{1} << in.ConsumeIntegralInRange<int>(0, 6));
  job.mutable_training()->set_seq_length(uint32_t{128} << in.ConsumeIntegralInRange<int>(0, 8));
  const int changes = in.ConsumeIntegralInRange<int>(0, 12);
  for (int i = 0; i < changes && in.remaining_bytes() > 0; ++i) {
    SetLeaf(in, Leaves()[in.ConsumeIntegralInRange<size_t>(0, Leaves().size() - 1)], job);
  }
  const uint32_t world = WorldSizeFor(job, uint32_t{1} << in.ConsumeIntegralInRange<int>(0, 4));
  if (world == 0) return;
  job.mutable_parallelism()->set_num_gpus(world);

  const bool module_tree = in.ConsumeBool();
  absl::StatusOr<v1::EstimateReport> report = EstimateChecked(job, module_tree);
  if (!report.ok()) return;

  // The same job grown along one size (estimator/grown_job.h: never past
  // its 32-bit field, where it would wrap around to a smaller job).
  const Growth growth = in.PickValueInArray(kGrowths);
  const std::optional<v1::JobSpec> grown =
      GrownJob(job, growth, in.ConsumeIntegralInRange<uint32_t>(2, 8));
  if (!grown) return;
  absl::StatusOr<v1::EstimateReport> larger = EstimateChecked(*grown, module_tree);
  if (!larger.ok()) return;
  const absl::Status grows = CheckGrowsWith(*report, *larger);
  Expect(grows.ok(), std::string("CheckGrowsWith, ") + GrowthName(growth) +
                         " grown: " + grows.ToString() + "\njob: " + job.ShortDebugString() +
                         "\ngrown: " + grown->ShortDebugString());
}

}  // namespace
}  // namespace oomguard::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  oomguard::fuzz::Fuzz(in);
  return 0;
}
