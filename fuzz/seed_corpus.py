#!/usr/bin/env python3
"""Writes the seed corpus fuzz/corpus/<target>/ from what the repository
ships: the examples, the strings of the tests (argument lines, layouts,
patterns, config.json texts, job scripts, AdmissionReviews) and the
calibration cases (../shared/calibration/megatron_ci_h100.jsonl). Run from the
worktree root; protoc encodes the CheckRequest bytes. Each seed is named by
the SHA-1 of its content, as libFuzzer names the inputs it keeps."""

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = os.getcwd()
OUT = os.path.join(ROOT, "fuzz", "corpus")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def raw_strings(path):
    """The C++ raw string literals R"tag(...)tag" of a source file."""
    text = read(path)
    return [m.group(2) for m in re.finditer(r'R"([a-z]*)\((.*?)\)\1"', text, re.S)]


def quoted_strings(path):
    """Ordinary string literals (no escapes beyond \\" kept literally)."""
    return [m.group(1) for m in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', read(path))]


def constant_strings(path):
    """The values of `constexpr char kName[] = "..." "...";` in a source file,
    adjacent literals joined, escapes (\\n, \\xHH, \\", \\\\) read."""
    text = read(path)
    values = []
    for m in re.finditer(r'constexpr char k\w+\[\] =((?:\s*"(?:[^"\\\n]|\\.)*")+);', text):
        pieces = re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(1))
        values.append("".join(pieces).encode("latin-1").decode("unicode_escape"))
    return values


def training_logs():
    """Logs for the training log reader: the lines of its test (Megatron-LM's
    and Megatron-Bridge's memory lines, the CUDA OOM line, a Slurm stderr)
    and what tests/data/feedback holds from a GPU, alone and behind the
    launchers' prefixes, with CRLF and carriage returns."""
    lines = constant_strings("tests/feedback/training_log_reader_test.cc")
    stderr = [s for s in constant_strings("tests/tools/report_request_test.cc") if "[Rank" in s]
    logs = lines + stderr + [read("tests/data/feedback/" + f)
                             for f in ("h200_memory_lines.txt", "h200_oom_stderr.txt")]
    for prefix in ("0: ", "[default3]:", "1: [default1]:", "[rank5]: "):
        logs.append("".join(prefix + line + "\n" for line in lines))
    logs.append("\r\n".join(lines))
    logs.append("epoch 0:  10%|#  | 1/10\r" + lines[0] + "\r")
    logs.append(lines[0][:60] + lines[1])  # Two ranks' output interleaved.
    return logs


def write(target, seeds):
    folder = os.path.join(OUT, target)
    os.makedirs(folder, exist_ok=True)
    for seed in seeds:
        data = seed if isinstance(seed, bytes) else seed.encode("utf-8")
        name = hashlib.sha1(data).hexdigest()
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)


def calibration_cases(limit):
    path = os.path.join(ROOT, "..", "shared", "calibration", "megatron_ci_h100.jsonl")
    cases = [json.loads(line) for line in open(path, encoding="utf-8")]
    # Every family, then as many more as fit the limit.
    seen, picked = set(), []
    for case in cases:
        family = case["case"].split("/")[0]
        if family not in seen:
            seen.add(family)
            picked.append(case)
    for case in cases:
        if len(picked) >= limit:
            break
        if case not in picked:
            picked.append(case)
    return picked


def secret_env_reviews():
    """Issue 25 item 12: a Pod whose env value reaches a numeric flag through
    Kubernetes' $(NAME) and through a bash -c script's $NAME."""
    review = json.loads(read("tests/data/admission/pod_deepseek_v3_8gpu.json"))
    container = review["request"]["object"]["spec"]["containers"][0]
    container["env"] = [{"name": "WANDB_API_KEY", "value": "sk-secret-123"}]
    container["args"] = container["args"] + ["--micro-batch-size", "$(WANDB_API_KEY)"]
    by_reference = json.dumps(review)
    container["command"] = ["bash", "-c"]
    container["args"] = ["torchrun --nproc-per-node 8 pretrain_gpt.py "
                         "--micro-batch-size $WANDB_API_KEY"]
    return [by_reference, json.dumps(review)]


def main():
    cases = calibration_cases(24)
    lines = [" ".join(shlex.quote(w) for w in c["argv"]) for c in cases]
    for example in ("examples/deepseek_v3_256gpu.args", "examples/deepseek_v3_1024gpu.args"):
        lines.append(read(example))
    layouts = sorted({s for s in quoted_strings("tests/estimator/pipeline_layout_test.cc")
                      if s and re.fullmatch(r"[EtmL|()*0-9,]+", s)})
    patterns = sorted({s for s in quoted_strings("tests/jobspec/layer_pattern_test.cc")
                       if s and re.fullmatch(r"[\[\]()0-9*+ ]+", s)})
    lines += [
        "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
        "--max-position-embeddings 1024 --micro-batch-size 2 --pipeline-model-parallel-size 2 "
        "--pipeline-model-parallel-layout 'Et*4|t*4L' --bf16",
        "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --num-experts 8 "
        "--moe-layer-freq '([0]*1+[1]*3)' --moe-router-topk 2 --expert-model-parallel-size 2 "
        "--seq-length 512 --max-position-embeddings 512 --micro-batch-size 1",
    ]
    # Bytes that are not UTF-8 (a Linux path is bytes; common/valid_utf8.h):
    # in a path, in a value that matters, cut inside a character.
    not_utf8 = [b"/data/\xff\xfe/text_document", b"32\xff", b"/tok/\xc3(.model", b"\xed\xa0\x80",
                b"\xf4\x90\x80\x80"]
    lines_not_utf8 = [lines[-2].encode("utf-8") + b" --data-path " + not_utf8[0] +
                      b" --tokenizer-model '" + not_utf8[2] + b"'",
                      lines[-2].encode("utf-8") + b" --num-layers " + not_utf8[1]]
    write("megatron_args_fuzzer",
          lines + raw_strings("tests/jobspec/shell_words_test.cc") + lines_not_utf8)
    write("layout_pattern_fuzzer", layouts + patterns)

    configs = raw_strings("jobspec/preset_configs.inc") + raw_strings(
        "tests/jobspec/hf_config_test.cc") + raw_strings("tests/jobspec/config_json_test.cc")
    configs += [read("examples/hf/" + f) for f in sorted(os.listdir("examples/hf"))]
    write("hf_config_fuzzer", [c for c in configs if "{" in c])
    write("rl_config_fuzzer", [read("examples/rl/" + f) for f in sorted(os.listdir("examples/rl"))] +
          [s for s in raw_strings("tests/jobspec/rl_verl_config_test.cc") +
           raw_strings("tests/jobspec/rl_nemo_rl_config_test.cc") if ":" in s])

    scripts = []
    for path in ("tests/jobscript/job_script_test.cc", "tests/jobscript/launch_finder_test.cc",
                 "tests/jobscript/shell_variables_test.cc", "tests/tools/check_command_test.cc"):
        scripts += raw_strings(path)
    scripts.append("\0".join(["torchrun", "--nproc-per-node=8", "pretrain_gpt.py"] +
                             cases[0]["argv"]))
    scripts.append("\0".join(["bash", "-c", "python pretrain_gpt.py " + lines[0]]))
    scripts.append(b"#OOMGUARD preset=llama3-8b gpu=H100\xff gpus=8\ntorchrun pretrain_gpt.py " +
                   lines_not_utf8[0] + b"\n")
    scripts.append(b"\0".join([b"torchrun", b"pretrain_gpt.py", b"--data-path", not_utf8[0],
                                b"--num-layers", not_utf8[1]]))
    # Issue 25: the array-doubling script (tests/jobscript/job_script_test_util.h
    # ArrayDoublingScript), alone, in `srun bash -c` and as container words, and
    # the data blend of 32,768 pairs (DataBlendScript): the reader's work bound
    # and its words bound.
    doubling = "A=(a b)\n" + 'A+=("${A[@]}")\n' * 5000 + "torchrun pretrain_gpt.py --num-layers 2\n"
    scripts.append(doubling)
    scripts.append("#!/bin/bash\n#SBATCH --gpus=8\nsrun bash -c '" + doubling + "'\n")
    scripts.append("\0".join(["bash", "-c", doubling]))
    scripts.append("#!/bin/bash\ntorchrun pretrain_gpt.py --num-layers 2 --data-path" +
                   "".join(" 0.5 /d/c%d" % i for i in range(32768)) + "\n")
    write("job_script_fuzzer", scripts)

    reviews = [read("tests/data/admission/" + f)
               for f in sorted(os.listdir("tests/data/admission"))]
    # The API server writes bytes that are not UTF-8 as U+FFFD; raw bytes and
    # an escaped lone surrogate are what a hostile or broken client sends.
    pod = read("tests/data/admission/pod_deepseek_v3_8gpu.json")
    reviews += [pod.replace("/data/dsv3/text_document", "/data/\ufffd").encode("utf-8"),
                pod.encode("utf-8").replace(b"/data/dsv3/text_document", not_utf8[0]),
                pod.replace("/data/dsv3/text_document", "/data/\\udcff")]
    reviews += secret_env_reviews()
    write("admission_review_fuzzer", reviews)

    requests = []
    for case in [c for c in cases if isinstance(c["gpus"], int)][:12]:
        requests.append({"job": {"megatron": {"argv": case["argv"], "numGpus": case["gpus"]},
                                 "env": case.get("env", {})},
                         "gpuName": "h100"})
    requests += [
        # Issue 25 item 12: a word holding an env value, named in errors.
        {"job": {"megatron": {"preset": "llama3-8b", "numGpus": 8,
                              "argv": ["--micro-batch-size", "sk-secret-123"],
                              "argvSources": {"1": "$(WANDB_API_KEY)"}}},
         "gpuName": "h100"},
        {"job": {"megatron": {"preset": "deepseek-v3", "numGpus": 256,
                              "args": read("examples/deepseek_v3_256gpu.args")}},
         "gpuName": "h100", "policy": {"safetyMargin": 0.1}},
        {"job": {"megatron": {"hfConfigJson": read("examples/hf/qwen3_30b_a3b_config.json"),
                              "numGpus": 8, "argv": ["--micro-batch-size", "1"]},
                 "gpusPerNode": 8},
         "gpuMemoryBytes": "85899345920"},
        {"job": {"spec": {"model": {"numLayers": 2, "hiddenSize": 64, "numAttentionHeads": 2,
                                    "vocabSize": 1000},
                          "parallelism": {"numGpus": 1},
                          "training": {"microBatchSize": 1, "seqLength": 128}}},
         "gpuName": "a100-80gb"},
    ]
    llama = {"job": {"megatron": {"preset": "llama3-8b", "numGpus": 8,
                                  "argv": ["--seq-length", "4096", "--micro-batch-size", "1",
                                           "--data-path", "@0", "--num-layers", "@1"]},
                     "env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True@2"}},
             "gpuName": "H100@3"}
    json_not_utf8 = json.dumps(llama).encode("utf-8")
    for i, bytes_ in enumerate(not_utf8[:4]):
        json_not_utf8 = json_not_utf8.replace(b"@%d" % i, bytes_)
    write("check_request_json_fuzzer", [json.dumps(r) for r in requests] +
          [json_not_utf8, json.dumps(llama).replace("@0", "\\udcff")])
    # On the wire a string that is not UTF-8 does not parse: a gpu_name (field
    # 2) appended to a request, the last one read.
    write("check_request_proto_fuzzer", [encode(r) for r in requests] +
          [encode(requests[0]) + b"\x12\x05H100\xff"])
    # FuzzedDataProvider input: fixed pseudo-random bytes.
    write("estimator_fuzzer", [hashlib.sha256(bytes([i])).digest() * 4 for i in range(16)])
    write("training_log_reader_fuzzer", training_logs())
    write_dicts()


def dict_entry(data):
    """A libFuzzer dictionary entry: quoted, with \\, \" and \\xHH escapes."""
    out = []
    for b in data:
        if b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append("\\x%02X" % b)
    return '"' + "".join(out) + '"'


def dict_file(name, tokens):
    os.makedirs(os.path.join(ROOT, "fuzz", "dicts"), exist_ok=True)
    with open(os.path.join(ROOT, "fuzz", "dicts", name + ".dict"), "w", encoding="utf-8") as f:
        f.write("# Generated by fuzz/seed_corpus.py.\n")
        for token in sorted(set(tokens)):
            f.write(dict_entry(token.encode("utf-8")) + "\n")


def write_dicts():
    flags = re.findall(r'Add\("([a-z0-9-]+)"', read("jobspec/megatron_flags.cc"))
    flags += re.findall(r'\{"([a-z0-9-]+)", "', read("jobspec/ignored_flags.cc"))
    megatron = ["--" + f for f in flags] + ["=", "'", '"', "\\", " "]
    dict_file("megatron_args", megatron)
    grammar = ["E", "t", "m", "L", "|", "(", ")", "*", ",", "[", "]", "+", "[0]", "[1]", "*2"]
    dict_file("layout_pattern", grammar)
    json_tokens = ["{", "}", "[", "]", ":", ",", "true", "false", "null", '"', "\\u0000",
                   "1e400", "-0", "\ufeff"]
    hf_keys = re.findall(r'"([a-z_0-9]+)"', read("jobspec/hf_config.cc"))
    dict_file("hf_config", json_tokens + ['"%s"' % k for k in hf_keys])
    shell = ["#OOMGUARD ", "preset=", "gpu=", "gpus=", "gpus-per-node=", "safety-margin=", "skip",
             "torchrun", "python", "srun", "mpirun", "exec", "env", "export ", "declare -a ",
             "pretrain_gpt.py", "-m megatron.training.pretrain_gpt", "bash -c ", "$(", "`", "${",
             ":-", "[@]", "=(", "+=", "<<EOF", "\\\n", "'", '"', "$((", "unset "]
    dict_file("job_script", shell + ["--" + f for f in flags[:40]])
    proto_keys = []
    for proto in ("job", "admission", "service"):
        for field in re.findall(r"^\s+(?:optional |repeated )?[\w.<>, ]+ (\w+) = \d+;",
                                read("proto/oomguard/v1/%s.proto" % proto), re.M):
            camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), field)
            proto_keys += ['"%s"' % field, '"%s"' % camel]
    dict_file("check_request_json", json_tokens + proto_keys)
    k8s = re.findall(r'"([a-zA-Z][a-zA-Z_./-]+)"',
                     read("webhook/webhook_workload.cc") + read("webhook/admission_webhook.cc") +
                     read("webhook/pod_scan.cc") + read("webhook/workload_kinds.cc"))
    dict_file("admission_review", json_tokens + ['"%s"' % k for k in k8s])
    code = [line for line in read("feedback/training_log_reader.cc").splitlines()
            if not line.lstrip().startswith(("//", "#include"))]
    log_tokens = re.findall(r'"([^"\\]+)"', "\n".join(code))
    dict_file("training_log_reader", log_tokens +
              ["[Rank ", "] (after 2 iterations)", " | ", ": ", "\n", "\r", "0: ", "[default0]:",
               "[rank0]: ", "1e-05", "nan", "inf", "-1"])


def to_text_format(value, indent=""):
    """A JSON request (camelCase) as protobuf text format."""
    out = []
    for key, v in value.items():
        name = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), key)
        if isinstance(v, dict) and name == "env":
            for k, s in v.items():
                out.append(f"env {{ key: {json.dumps(k)} value: {json.dumps(s)} }}")
        elif isinstance(v, dict):
            out.append(f"{name} {{ {to_text_format(v)} }}")
        elif isinstance(v, list):
            out += [f"{name}: {json.dumps(x)}" for x in v]
        elif isinstance(v, bool):
            out.append(f"{name}: {'true' if v else 'false'}")
        elif isinstance(v, str) and name.endswith("_bytes"):
            out.append(f"{name}: {v}")
        else:
            out.append(f"{name}: {json.dumps(v)}")
    return " ".join(out)


def encode(request):
    result = subprocess.run(
        ["protoc", "-Iproto", "--encode=oomguard.v1.CheckRequest", "oomguard/v1/admission.proto"],
        input=to_text_format(request).encode("utf-8"), capture_output=True, cwd=ROOT)
    if result.returncode != 0:
        sys.exit("protoc: " + result.stderr.decode())
    return result.stdout


if __name__ == "__main__":
    main()
