// The `oomguard` command: estimate, plan, calibrate, serve, check, report, flags.
#include <iostream>
#include <string>
#include <vector>

#include "tools/calibrate_command.h"
#include "tools/check_command.h"
#include "tools/estimate_command.h"
#include "tools/flags_command.h"
#include "tools/plan_command.h"
#include "tools/report_command.h"
#include "tools/serve_command.h"

namespace {

constexpr char kUsage[] =
    "oomguard: per-rank GPU memory of Megatron-Core training jobs\n"
    "  oomguard estimate --gpus N [--gpu-memory-gib G] [--json] [--tree] -- <Megatron-LM args>\n"
    "  oomguard estimate --gpus N --preset NAME [Megatron-LM args overriding the preset]\n"
    "  oomguard plan --gpus N --gpu NAME [--gpus-per-node K] (--preset P | --hf-config F) [--top K]"
    " [--json] [Megatron-LM args]   (see plan --help)\n"
    "  oomguard serve [--grpc_address=127.0.0.1:50051 --metrics_address=... ; see serve --help]\n"
    "  oomguard check --server HOST:PORT [--gpu NAME] [--gpus N] (--script FILE | --job-file FILE |"
    " -- <Megatron-LM args>)   (see check --help)\n"
    "  oomguard report --server HOST:PORT --check-id ID [--log FILE] [--exit-code N]"
    " [--slurm-state STATE]   (what a checked job used and how it ended; see report --help)\n"
    "  oomguard calibrate [megatron_ci_h100.jsonl|h100_single_gpu_sweep.csv ...]\n"
    "  oomguard flags [--json] [--class CLASS] [--FLAG ...]   (what each Megatron-LM flag means"
    " to oomguard)\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "estimate") {
    std::string out, err;
    const int rc = oomguard::RunEstimateCommand(args, out, err);
    std::cout << out;
    if (!err.empty()) std::cerr << "oomguard estimate: " << err << "\n";
    return rc;
  }
  if (command == "plan") {
    std::string out, err;
    const int rc = oomguard::RunPlanCommand(args, out, err);
    std::cout << out;
    if (!err.empty()) std::cerr << "oomguard plan: " << err << "\n";
    return rc;
  }
  if (command == "calibrate") {
    std::string out, err;
    const int rc = oomguard::RunCalibrateCommand(args, out, err);
    std::cout << out;
    if (!err.empty()) std::cerr << "oomguard calibrate: " << err << "\n";
    return rc;
  }
  if (command == "flags") {
    std::string out, err;
    const int rc = oomguard::RunFlagsCommand(args, out, err);
    std::cout << out;
    if (!err.empty()) std::cerr << "oomguard flags: " << err << "\n";
    return rc;
  }
  if (command == "serve") return oomguard::RunServeCommand(argc - 1, argv + 1);
  if (command == "check") {
    std::string out, err;
    const int rc = oomguard::RunCheckCommand(args, out, err);
    std::cout << out << std::flush;
    std::cerr << err;
    return rc;
  }
  if (command == "report") {
    std::string out, err;
    const int rc = oomguard::RunReportCommand(args, out, err);
    std::cout << out << std::flush;
    std::cerr << err;
    return rc;
  }
  std::cerr << "oomguard: unknown command \"" << command << "\"\n" << kUsage;
  return 2;
}
