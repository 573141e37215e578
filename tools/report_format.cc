#include "tools/report_format.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oomguard {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double Gib(uint64_t bytes) { return static_cast<double>(bytes) / kGiB; }

uint64_t OverheadBytes(const v1::RankReport& r) {
  return r.peak_device_bytes() - r.static_bytes() - r.activation_bytes() - r.transient_bytes();
}

// Minimal JSON writer: objects and arrays of numbers, strings and booleans.
class Json {
 public:
  void Open(char c) {
    Sep();
    out_ += c;
    first_ = true;
  }
  void Close(char c) {
    out_ += c;
    first_ = false;
  }
  void Key(absl::string_view k) {
    Sep();
    Str(k);
    out_ += ':';
    first_ = true;
  }
  void Num(absl::string_view k, uint64_t v) {
    Key(k);
    Sep();
    absl::StrAppend(&out_, v);
  }
  void Int(absl::string_view k, int64_t v) {
    Key(k);
    Sep();
    absl::StrAppend(&out_, v);
  }
  void Bool(absl::string_view k, bool v) {
    Key(k);
    Sep();
    out_ += v ? "true" : "false";
  }
  void Text(absl::string_view k, absl::string_view v) {
    Key(k);
    Sep();
    Str(v);
  }
  void Elem(absl::string_view v) {
    Sep();
    Str(v);
  }
  const std::string& str() const { return out_; }

 private:
  void Sep() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  void Str(absl::string_view s) {
    out_ += '"';
    for (char c : s) {
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            absl::StrAppendFormat(&out_, "\\u%04x", c);
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }
  std::string out_;
  bool first_ = true;
};

void TreeJson(const v1::ModuleNode& n, Json& j) {
  j.Open('{');
  j.Text("name", n.name());
  j.Text("type", n.type());
  j.Num("parameters", n.parameters());
  j.Num("activation_bytes", n.activation_bytes());
  j.Num("repeat", std::max<uint32_t>(n.repeat(), 1));
  j.Key("children");
  j.Open('[');
  for (const v1::ModuleNode& c : n.children()) TreeJson(c, j);
  j.Close(']');
  j.Close('}');
}

void TreeText(const v1::ModuleNode& n, int depth, std::string& out) {
  const double mi = 1024.0 * 1024.0;
  std::string label = n.repeat() > 1 ? absl::StrCat(n.name(), ": ", n.repeat(), " x ", n.type())
                                     : absl::StrCat(n.name(), ": ", n.type());
  absl::StrAppendFormat(&out, "%*s%s /* n_params=%.2fM act=%.2f MiB */\n", 2 * depth, "", label,
                        static_cast<double>(n.parameters()) / mi,
                        static_cast<double>(n.activation_bytes()) / mi);
  for (const v1::ModuleNode& c : n.children()) TreeText(c, depth + 1, out);
}

}  // namespace

std::string FormatTable(const v1::EstimateReport& rep, uint64_t capacity) {
  std::string out = absl::StrFormat(
      "%d GPUs: TP %d, PP %d, VPP %d, CP %d, EP %d, ETP %d, DP %d, expert DP %d; %d "
      "micro-batches per iteration; padded vocab %d\n\n",
      rep.num_gpus(), rep.tensor_parallel(), rep.pipeline_parallel(), rep.virtual_pipeline_chunks(),
      rep.context_parallel(), rep.expert_parallel(), rep.expert_tensor_parallel(),
      rep.data_parallel(), rep.expert_data_parallel(), rep.num_microbatches(),
      rep.padded_vocab_size());
  absl::StrAppendFormat(&out, "%7s %10s %10s %10s %10s %10s %10s %10s%s\n", "pp_rank", "params(B)",
                        "static", "activation", "transient", "peak_alloc", "overheads", "peak_dev",
                        capacity ? "  vs GPU" : "");
  for (const v1::RankReport& r : rep.ranks()) {
    std::string fit;
    if (capacity) {
      fit = r.peak_device_bytes() <= capacity ? "  fits" : "  DOES NOT FIT";
    }
    absl::StrAppendFormat(&out, "%7d %10.3f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f%s\n",
                          r.pp_rank(), static_cast<double>(r.parameters()) / 1e9,
                          Gib(r.static_bytes()), Gib(r.activation_bytes()),
                          Gib(r.transient_bytes()), Gib(r.peak_allocated_bytes()),
                          Gib(OverheadBytes(r)), Gib(r.peak_device_bytes()), fit);
  }
  out +=
      "(memory in GiB; peak_alloc = what torch.cuda.max_memory_allocated reports, peak_dev = "
      "what the GPU must hold)\n";
  if (rep.ranks_size() > 0) {
    const v1::RankReport& w = rep.ranks(rep.worst_rank());
    absl::StrAppendFormat(&out, "\nworst rank %d: %.2f GiB", w.pp_rank(),
                          Gib(w.peak_device_bytes()));
    if (capacity) {
      const double head =
          (static_cast<double>(capacity) - static_cast<double>(w.peak_device_bytes())) / kGiB;
      absl::StrAppendFormat(&out, " of %.2f GiB: %s (headroom %.2f GiB)", Gib(capacity),
                            head >= 0 ? "fits" : "does not fit", head);
    }
    out += "\n  overheads:";
    for (const v1::Overhead& o : w.overheads()) {
      absl::StrAppendFormat(&out, " %s %.2f%s;", o.name(), Gib(o.bytes()),
                            o.in_allocated() ? "*" : "");
    }
    out += " (GiB; * = inside peak_alloc)\n";
  }
  for (const std::string& n : rep.notes()) absl::StrAppend(&out, "note: ", n, "\n");
  return out;
}

std::string FormatTree(const v1::EstimateReport& rep) {
  std::string out;
  for (const v1::ModuleNode& n : rep.rank_trees()) TreeText(n, 0, out);
  return out;
}

std::string FormatJson(const v1::EstimateReport& rep, uint64_t capacity) {
  Json j;
  j.Open('{');
  j.Num("num_gpus", rep.num_gpus());
  j.Num("tensor_parallel", rep.tensor_parallel());
  j.Num("pipeline_parallel", rep.pipeline_parallel());
  j.Num("virtual_pipeline_chunks", rep.virtual_pipeline_chunks());
  j.Num("context_parallel", rep.context_parallel());
  j.Num("expert_parallel", rep.expert_parallel());
  j.Num("expert_tensor_parallel", rep.expert_tensor_parallel());
  j.Num("data_parallel", rep.data_parallel());
  j.Num("expert_data_parallel", rep.expert_data_parallel());
  j.Num("num_microbatches", rep.num_microbatches());
  j.Num("padded_vocab_size", rep.padded_vocab_size());
  j.Num("worst_rank", rep.worst_rank());
  if (capacity) j.Num("capacity_bytes", capacity);
  j.Key("ranks");
  j.Open('[');
  for (const v1::RankReport& r : rep.ranks()) {
    j.Open('{');
    j.Num("pp_rank", r.pp_rank());
    j.Num("parameters", r.parameters());
    j.Num("dense_parameters", r.dense_parameters());
    j.Num("expert_parameters", r.expert_parameters());
    j.Num("static_bytes", r.static_bytes());
    const v1::StaticBytes& s = r.static_();
    j.Num("dense_param_bytes", s.dense_param_bytes());
    j.Num("dense_grad_bytes", s.dense_grad_bytes());
    j.Num("dense_optimizer_bytes", s.dense_optimizer_bytes());
    j.Num("expert_param_bytes", s.expert_param_bytes());
    j.Num("expert_grad_bytes", s.expert_grad_bytes());
    j.Num("expert_optimizer_bytes", s.expert_optimizer_bytes());
    j.Num("host_optimizer_bytes", s.host_optimizer_bytes());
    j.Num("activation_bytes", r.activation_bytes());
    j.Num("transient_bytes", r.transient_bytes());
    j.Num("peak_allocated_bytes", r.peak_allocated_bytes());
    j.Num("peak_device_bytes", r.peak_device_bytes());
    if (capacity) {
      j.Int("headroom_bytes",
            static_cast<int64_t>(capacity) - static_cast<int64_t>(r.peak_device_bytes()));
    }
    j.Key("overheads");
    j.Open('[');
    for (const v1::Overhead& o : r.overheads()) {
      j.Open('{');
      j.Text("name", o.name());
      j.Num("bytes", o.bytes());
      j.Bool("in_allocated", o.in_allocated());
      j.Close('}');
    }
    j.Close(']');
    j.Key("chunks");
    j.Open('[');
    for (const v1::ChunkReport& c : r.chunks()) {
      j.Open('{');
      j.Num("chunk", c.chunk());
      j.Num("virtual_stage", c.virtual_stage());
      j.Num("num_decoder_layers", c.num_decoder_layers());
      j.Num("num_mtp_layers", c.num_mtp_layers());
      j.Bool("has_embedding", c.has_embedding());
      j.Bool("has_loss", c.has_loss());
      j.Num("parameters", c.parameters());
      j.Num("in_flight_microbatches", c.in_flight_microbatches());
      j.Num("activation_bytes_per_microbatch", c.activation_bytes_per_microbatch());
      j.Num("activation_bytes", c.activation_bytes());
      j.Close('}');
    }
    j.Close(']');
    j.Close('}');
  }
  j.Close(']');
  if (rep.rank_trees_size() > 0) {
    j.Key("trees");
    j.Open('[');
    for (const v1::ModuleNode& n : rep.rank_trees()) TreeJson(n, j);
    j.Close(']');
  }
  j.Key("notes");
  j.Open('[');
  for (const std::string& n : rep.notes()) j.Elem(n);
  j.Close(']');
  j.Close('}');
  return j.str() + "\n";
}

}  // namespace oomguard
