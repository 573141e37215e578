#!/usr/bin/python3
"""The web page as a person uses it, in headless Chromium (Selenium).

Starts `oomguard serve --http_address` on loopback, opens the page, pastes the
shipped DeepSeek-V3 example (examples/deepseek_v3_256gpu.args: preset
deepseek-v3, 256 H100s, 8 per node) and checks what a person sees: 8 bars (one
per pipeline rank), the line at the GPU's usable memory, the verdict line,
a recommendation with the bytes it saves, the configurations that fit, the
numbers on hover, a module tree per rank, a link that reproduces the job, and no Content-Security-Policy
violation. Then a bad job (0 GPUs) shows the error naming the field, and the
same job pasted as an sbatch script gives the same verdict (its GPU count
from #OOMGUARD, then, the form's left empty, from its launch line), and a preset
with the layout form (TP 2, PP 2, ...) gives 2 bars. Then the RL mode: a
veRL config pasted (examples/rl/verl_qwen3_30b_a3b.yaml), a bar per phase per pipeline rank stacked
by term as the server's answer (POST /v1/check, asked directly too) itemises
them, the usable line, the upper bounds, the binding phase, the terms with
their keys in a table and on hover, the host memory, the notes, a link that
reproduces it, and a bad key's error naming the field; slime's shipped
argument line split into words as a shell would. Then a check the server kept (it runs with an
SQLite store): the answer links its record; the record at /#check=ID after two reports (Megatron's
log lines on ranks of both pipeline stages, one over the bound; a DCGM device) shows, per stage,
the estimate beside the largest measured peak, the error and the bound, the device measurement
against the largest stage, and the reports; an unknown id shows the error. Every file the page
loaded came from the server.
Saves a screenshot of the answer, of the error and of the RL answer to
--out-dir and prints their paths.

Exits 77 (skipped) when chromium, chromedriver or python3-selenium is absent.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77


def find_browser():
    try:
        import selenium  # noqa: F401
    except ImportError:
        return None, None, "python3-selenium is not installed"
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        return None, None, "chromium or chromium-driver is not installed"
    return browser, driver, None


def start_server(binary, log_path, flags=()):
    log = open(log_path, "w")
    server = subprocess.Popen(
        [binary, "--grpc_address=127.0.0.1:0", "--metrics_address=", "--http_address=127.0.0.1:0",
         "--threads=2", *flags], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 15
    while time.time() < deadline:
        with open(log_path) as f:
            match = re.search(r"msg=listening .*http_port=(\d+)", f.read())
        if match:
            return server, int(match.group(1))
        if server.poll() is not None:
            break
        time.sleep(0.05)
    server.kill()
    with open(log_path) as f:
        raise AssertionError(f"the server did not start:\n{f.read()}")


def post_json(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.load(reply)


def get_json(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as reply:
        return json.load(reply)


def gib(n):
    """page.js's gib(): GiB with 0, 1 or 2 decimals."""
    g = n / 2**30
    return f"{g:.{0 if n >= 100 * 2**30 else 1 if n >= 10 * 2**30 else 2}f} GiB"


def error_percent(estimate, measured):
    """check_record.js's errorPercent(): (estimate - measured) / measured."""
    e = 100 * (estimate - measured) / measured
    return ("+" if e >= 0 else "") + f"{e:.1f}%"


def check_record_mode(page, wait, port, out_dir):
    """A kept check's record at /#check=ID: measured beside the estimate."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready

    # The page's last check (llama3-8b, TP 2 PP 2 on 8 GPUs) was kept: its
    # answer links the record.
    link = page.find_element(By.ID, "check-link-a")
    assert page.find_element(By.ID, "check-link").is_displayed()
    check_id = link.text
    assert re.fullmatch(r"[0-9a-f]{32}", check_id), check_id
    assert link.get_attribute("href").endswith(f"#check={check_id}"), link.get_attribute("href")

    before = get_json(port, f"/v1/checks/{check_id}")
    stages = before["estimate"]
    assert [s.get("ppRank", 0) for s in stages] == [0, 1], stages
    per_stage = before["gpusPerPipelineStage"]
    assert per_stage == 4, before
    # Megatron's log: ranks 0 and 1 on stage 0 (under the bound), rank 4 on
    # stage 1 (over it); DCGM: one device without a rank.
    alloc0 = int(stages[0]["peakAllocatedBytes"])
    upper1 = int(stages[1]["peakAllocatedUpperBytes"])
    measured = {0: alloc0 * 9 // 10, 1: alloc0 * 8 // 10, per_stage: upper1 + 2**30}
    post_json(port, "/v1/report", {
        "checkId": check_id, "source": "MEASUREMENT_SOURCE_MEGATRON_LOG", "outcome": "JOB_OUTCOME_RAN",
        "ranks": [{"rank": r, "maxAllocatedBytes": str(b)} for r, b in measured.items()]})
    device_used = 70 * 2**30
    post_json(port, "/v1/report", {
        "checkId": check_id, "source": "MEASUREMENT_SOURCE_DCGM",
        "ranks": [{"device": "llama-0/3", "deviceUsedBytes": str(device_used)}]})
    record = get_json(port, f"/v1/checks/{check_id}")
    assert len(record["reports"]) == 2, record

    link.click()
    wait.until(ready.visibility_of_element_located((By.ID, "record")))
    assert not page.find_element(By.ID, "job-form").is_displayed()
    assert not page.find_element(By.ID, "result").is_displayed()
    assert page.find_element(By.ID, "record-id").text == check_id
    rows = page.find_elements(By.CSS_SELECTOR, "#record-stages tr.stage")
    assert len(rows) == 2, len(rows)
    for row, estimate in zip(rows, record["estimate"]):
        stage = estimate.get("ppRank", 0)
        cell = lambda name: row.find_element(By.CSS_SELECTOR, f"td.{name}").text
        est, upper = int(estimate["peakAllocatedBytes"]), int(estimate["peakAllocatedUpperBytes"])
        peak = max(b for r, b in measured.items() if r // per_stage == stage)
        assert cell("est-allocated") == f"{gib(est)} (at most {gib(upper)})", cell("est-allocated")
        assert cell("meas-allocated") == gib(peak), (stage, cell("meas-allocated"))
        assert cell("err-allocated") == error_percent(est, peak), (stage, cell("err-allocated"))
        assert cell("bound-allocated") == ("under the bound" if peak <= upper else "OVER the bound")
        assert cell("ranks-measured") == str(sum(1 for r in measured if r // per_stage == stage))
        # Megatron's log line has no device figure.
        assert cell("meas-device") == "—", cell("meas-device")
    assert rows[0].find_element(By.CSS_SELECTOR, "td.bound-allocated").text == "under the bound"
    assert rows[1].find_element(By.CSS_SELECTOR, "td.bound-allocated").text == "OVER the bound"
    # The device, against the largest stage's device estimate.
    (device,) = page.find_elements(By.CSS_SELECTOR, "#record-devices tr.device")
    largest = max(record["estimate"], key=lambda s: int(s["peakDeviceBytes"]))
    assert device.find_element(By.CSS_SELECTOR, "td.meas-device").text == gib(device_used)
    assert device.find_element(By.CSS_SELECTOR, "td.err-device").text == \
        error_percent(int(largest["peakDeviceBytes"]), device_used)
    reports = page.find_elements(By.CSS_SELECTOR, "#record-reports tr.report")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in reports] == ["megatron log", "dcgm"], \
        [r.text for r in reports]
    facts = page.find_element(By.ID, "record-facts").text
    assert "Outcome\nran" in facts and "Cluster\npage-test" in facts, facts
    assert not page.find_element(By.ID, "error").is_displayed()
    shot = os.path.join(out_dir, "http_page_test_record.png")
    page.save_screenshot(shot)
    print(f"screenshot: {shot}")

    # An id nobody kept: the error, no record.
    page.get(f"http://127.0.0.1:{port}/#check={'0' * 32}")
    wait.until(ready.visibility_of_element_located((By.ID, "error")))
    assert not page.find_element(By.ID, "record").is_displayed()
    error = page.find_element(By.ID, "error").text
    assert "0" * 32 in error, error


def check_rl_mode(page, wait, port, args):
    """The RL mode: a veRL config pasted, the answer drawn phase by phase."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import Select

    # The shipped veRL example: seed 000's RL story, which does not fit.
    config_path = os.path.join(args.source_dir, "examples", "rl", "verl_qwen3_30b_a3b.yaml")
    with open(config_path) as f:
        config = f.read()
    # What the server answers for it, asked directly.
    expected = post_json(port, "/v1/check", {"job": {"rl": {"configYaml": config}},
                                             "gpuName": "H100-SXM-80GB"})
    step = expected["rlStep"]
    phases = step["phases"]
    assert len(phases) >= 3, phases

    # Pretraining's inputs give way to the RL ones.
    page.find_element(By.ID, "mode-rl").click()
    assert not page.find_element(By.ID, "job-text").is_displayed()
    assert not page.find_element(By.ID, "gpus-per-node").is_displayed()
    assert not page.find_element(By.ID, "layout").is_displayed()
    assert page.find_element(By.ID, "num-gpus").get_attribute("placeholder") == "the config's"
    Select(page.find_element(By.ID, "preset")).select_by_value("")
    page.find_element(By.ID, "num-gpus").clear()
    box = page.find_element(By.ID, "rl-config")
    box.clear()
    box.send_keys(config)
    Select(page.find_element(By.ID, "gpu")).select_by_value("H100-SXM-80GB")
    page.find_element(By.ID, "check").click()
    wait.until(lambda p: p.find_element(By.ID, "rl-result").is_displayed())
    assert not page.find_element(By.ID, "megatron-result").is_displayed()
    assert not page.find_element(By.ID, "error").is_displayed()
    verdict = page.find_element(By.ID, "verdict").text
    assert verdict == "oomguard: " + expected["summary"], (verdict, expected["summary"])

    # A bar per phase per rank, stacked by the rank's terms of that phase.
    bars = page.find_elements(By.CSS_SELECTOR, "#rl-chart svg g.rl-bar")
    want = [(p["phase"], r) for p in phases for r in p["ranks"]]
    assert len(bars) == len(want), (len(bars), len(want))
    scales = []
    for bar, (phase, rank) in zip(bars, want):
        assert bar.get_attribute("data-phase") == phase
        assert bar.get_attribute("data-rank") == str(rank.get("ppRank", 0))
        terms = [t for t in rank["terms"] if int(t.get("bytes", 0)) > 0]
        parts = bar.find_elements(By.TAG_NAME, "rect")
        assert len(parts) == len(terms), (phase, len(parts), len(terms))
        stacked = sum(int(t["bytes"]) for t in terms)
        assert stacked == int(rank["peakDeviceBytes"]), (phase, stacked, rank["peakDeviceBytes"])
        # Each part's height is its term's bytes, on the chart's one scale.
        for part, term in zip(parts, terms):
            scale = float(part.get_attribute("height")) / int(term["bytes"])
            scales.append(scale)
        upper = int(rank["peakDeviceUpperBytes"])
        ticks = bar.find_elements(By.CSS_SELECTOR, "line.upper-bound")
        assert len(ticks) == (1 if upper > stacked else 0), phase
        if ticks:
            assert int(ticks[0].get_attribute("data-bytes")) == upper
            assert float(ticks[0].get_attribute("y1")) < min(float(r.get_attribute("y")) for r in parts)
    assert max(scales) - min(scales) <= 1e-6 * max(scales), (min(scales), max(scales))
    assert len(page.find_elements(By.ID, "rl-capacity-line")) == 1
    labels = [t.text for t in page.find_elements(By.CSS_SELECTOR, "#rl-chart text.capacity-label")]
    assert labels == ["usable 79.1 GiB"], labels
    # The binding phase, named in the chart and above it.
    binding = page.find_elements(By.CSS_SELECTOR, "#rl-chart g.rl-phase.binding")
    assert len(binding) == 1 and binding[0].get_attribute("data-phase") == step["bindingPhase"], step
    assert page.find_element(By.ID, "rl-binding").text.startswith("Binding phase: "), \
        page.find_element(By.ID, "rl-binding").text
    # The legend names every term.
    legend = page.find_element(By.ID, "rl-legend").text
    for p in phases:
        for r in p["ranks"]:
            for t in r["terms"]:
                if int(t.get("bytes", 0)) > 0:
                    assert t["name"] in legend, (t["name"], legend)

    # Each phase's worst rank's terms with their keys, the binding one open.
    tables = page.find_elements(By.CSS_SELECTOR, "#rl-terms details.rl-phase-terms")
    assert [t.get_attribute("data-phase") for t in tables] == [p["phase"] for p in phases]
    for table, p in zip(tables, phases):
        shown = p["phase"] == step["bindingPhase"] or bool(p.get("failure"))
        assert (table.get_attribute("open") is not None) == shown, p["phase"]
        if p.get("failure"):
            assert p["failure"] in table.find_element(By.CSS_SELECTOR, "p.failure").text
    opened = next(t for t in tables if t.get_attribute("data-phase") == step["bindingPhase"])
    worst = next(r for r in next(p for p in phases if p["phase"] == step["bindingPhase"])["ranks"]
                 if r.get("ppRank", 0) == next(p for p in phases
                                               if p["phase"] == step["bindingPhase"]).get("worstRank", 0))
    rows = opened.find_elements(By.CSS_SELECTOR, "tr.term")
    assert len(rows) == len(worst["terms"]), (len(rows), worst["terms"])
    for row, term in zip(rows, worst["terms"]):
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        assert cells[0] == term["name"] and cells[2] == term.get("key", ""), (cells, term)

    # Hovering a bar shows that rank's terms with their keys.
    keyed = next(i for i, (_, r) in enumerate(want) if any(t.get("key") for t in r["terms"]))
    ActionChains(page).move_to_element(bars[keyed]).perform()
    wait.until(ready.visibility_of_element_located((By.ID, "tooltip")))
    tip = page.find_element(By.ID, "tooltip").text
    term = next(t for t in want[keyed][1]["terms"] if t.get("key"))
    assert term["name"] in tip and term["key"] in tip and "Peak on the GPU" in tip, tip

    host = page.find_element(By.ID, "rl-host-bytes").text
    host_bytes = int(step.get("hostBytesPerNode", 0))
    assert ("per node" in host) if host_bytes else host == "Nothing is offloaded to host memory.", host
    notes = [n.text for n in page.find_elements(By.CSS_SELECTOR, "#notes li")]
    assert notes[:len(step.get("notes", []))] == step.get("notes", []), notes
    settings = [r.text for r in page.find_elements(By.CSS_SELECTOR, "#recommendations li.recommendation code")]
    assert settings and settings == [r["setting"] for r in expected["recommendations"]], settings
    # A phase that cannot run says so under its bars, with the reason.
    for p in phases:
        label = page.find_element(By.CSS_SELECTOR, f"#rl-chart g.rl-phase[data-phase='{p['phase']}'] text.phase-label")
        assert label.text.endswith(" (fails)") == bool(p.get("failure")), (label.text, p.get("failure"))

    shot = os.path.join(args.out_dir, "http_page_test_rl.png")
    page.save_screenshot(shot)
    print(f"screenshot: {shot}")

    # The link reproduces the RL job.
    link = page.current_url
    assert "mode=rl" in link, link
    page.get("about:blank")
    page.get(link)
    wait.until(lambda p: len(p.find_elements(By.CSS_SELECTOR, "#rl-chart svg g.rl-bar")) == len(want))
    assert page.find_element(By.ID, "verdict").text == verdict
    assert page.find_element(By.ID, "rl-input").is_displayed()

    # A bad value: the error names the field and the key.
    box = page.find_element(By.ID, "rl-config")
    box.clear()
    box.send_keys(config.replace("gpu_memory_utilization: 0.5", "gpu_memory_utilization: high"))
    page.find_element(By.ID, "check").click()
    wait.until(ready.visibility_of_element_located((By.ID, "error")))
    error = page.find_element(By.ID, "error").text
    assert error.startswith("job.rl") and "actor_rollout_ref.rollout.gpu_memory_utilization" in error, error

    # slime's shipped argument line, pasted: split by the page as shlex
    # splits it, the same answer as the words sent directly.
    with open(os.path.join(args.source_dir, "examples", "rl", "slime_qwen3_30b_a3b.args")) as f:
        slime = f.read()
    expected = post_json(port, "/v1/check", {"job": {"rl": {"argv": shlex.split(slime, comments=True)}},
                                             "gpuName": "H100-SXM-80GB"})
    box.clear()
    box.send_keys(slime)
    page.find_element(By.ID, "check").click()
    wait.until(ready.visibility_of_element_located((By.ID, "result")))
    assert page.find_element(By.ID, "verdict").text == "oomguard: " + expected["summary"]
    count = sum(len(p["ranks"]) for p in expected["rlStep"]["phases"])
    assert len(page.find_elements(By.CSS_SELECTOR, "#rl-chart svg g.rl-bar")) == count

    # An argument line becomes RlJob.argv, split as a shell splits it.
    words = page.execute_script("return rlJobSource({'rl-config': arguments[0], 'rl-framework': 'RL_FRAMEWORK_SLIME', "
                                "'rl-hf-config': '', preset: 'qwen3-8b', 'num-gpus': '8'})",
                                "python3 train.py --colocate \\\n  --rollout-function-path 'a b' "
                                "--x \"c\\\"d\" # a comment\n--y e\\ f")
    assert words == {"rl": {"argv": ["python3", "train.py", "--colocate", "--rollout-function-path",
                                     "a b", "--x", 'c"d', "--y", "e f"],
                            "framework": "RL_FRAMEWORK_SLIME", "preset": "qwen3-8b", "numGpus": 8}}, words
    unclosed = page.execute_script("try { rlJobSource({'rl-config': \"--x 'a\", 'rl-framework': '', "
                                   "'rl-hf-config': '', preset: '', 'num-gpus': ''}); return null; } "
                                   "catch (e) { return e.message; }")
    assert unclosed == "job.rl.argv: a ' is not closed", unclosed

    # Back to a training step: its inputs again.
    page.find_element(By.ID, "mode-megatron").click()
    assert page.find_element(By.ID, "job-text").is_displayed()
    assert not page.find_element(By.ID, "rl-input").is_displayed()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()

    browser, driver_path, missing = find_browser()
    if missing:
        print(f"skipped: {missing}")
        return SKIP

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import Select, WebDriverWait

    with open(os.path.join(args.source_dir, "examples", "deepseek_v3_256gpu.args")) as f:
        example = f.read()
    os.makedirs(args.out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="oomguard_page_test_")
    # The server keeps its checks (a record per check, reports taken
    # without credentials on loopback).
    server, port = start_server(args.server_binary, os.path.join(work, "server.log"),
                                (f"--store=sqlite:{work}/checks.db", "--cluster=page-test",
                                 "--allow_unauthenticated_reports"))
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,2200", f"--user-data-dir={work}/profile"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    page = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        wait = WebDriverWait(page, 20)
        url = f"http://127.0.0.1:{port}/"
        page.get(url)
        wait.until(lambda p: p.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")

        # The shipped example, as a person fills the form.
        page.find_element(By.ID, "job-text").send_keys(example)
        Select(page.find_element(By.ID, "preset")).select_by_value("deepseek-v3")
        for field, value in (("num-gpus", "256"), ("gpus-per-node", "8")):
            box = page.find_element(By.ID, field)
            box.clear()
            box.send_keys(value)
        Select(page.find_element(By.ID, "gpu")).select_by_value("H100-SXM-80GB")
        page.find_element(By.ID, "check").click()
        wait.until(ready.visibility_of_element_located((By.ID, "result")))
        wait.until(lambda p: len(p.find_elements(By.CSS_SELECTOR, "#trees > details")) == 8)

        bars = page.find_elements(By.CSS_SELECTOR, "#chart svg g.rank-bar")
        assert len(bars) == 8, f"{len(bars)} bars, want one per pipeline rank (8)"
        for bar in bars:
            parts = bar.find_elements(By.TAG_NAME, "rect")
            assert len(parts) >= 5, f"a bar of {len(parts)} parts"
            # The upper bound: a tick above the bar's top (the point peak).
            ticks = bar.find_elements(By.CSS_SELECTOR, "line.upper-bound")
            assert len(ticks) == 1, f"{len(ticks)} upper-bound ticks on a bar"
            bar_top = min(float(r.get_attribute("y")) for r in parts)
            assert float(ticks[0].get_attribute("y1")) < bar_top, "the upper bound is not above the bar"
        legend = page.find_element(By.ID, "legend").text
        assert "Upper bound (95% coverage)" in legend, legend
        capacity = page.find_elements(By.ID, "capacity-line")
        assert len(capacity) == 1, "no line at the GPU's usable memory"
        capacity_label = page.find_element(By.CSS_SELECTOR, "text.capacity-label").text
        assert capacity_label.startswith("usable 79.1 GiB"), capacity_label
        verdict = page.find_element(By.ID, "verdict").text
        assert verdict.startswith("oomguard: Does not fit: PP rank 7 peaks at"), verdict
        assert re.search(r"peaks at \d+\.\d GiB \(95% bound; point estimate \d+\.\d GiB\) "
                         r"of 79\.1 GiB usable on H100-SXM-80GB", verdict), verdict
        recommendations = page.find_elements(By.CSS_SELECTOR, "#recommendations li.recommendation")
        assert recommendations, "no recommendation"
        first = recommendations[0].text
        assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in first, first
        assert re.search(r"saves \d+(\.\d+)? GiB", first), first
        # Every peak the page states is labelled the way the verdict is.
        assert re.search(r"→ worst rank \d+(\.\d+)? GiB \(95% bound\)", first), first
        assert any("--tensor-model-parallel-size 2" in r.text for r in recommendations), \
            [r.text for r in recommendations]
        # The job does not fit: the planner's configurations that fit on the
        # same 256 GPUs, each with its arguments.
        alternatives = page.find_elements(By.CSS_SELECTOR, "#alternatives li.alternative")
        assert alternatives, "no configuration that fits"
        for alternative in alternatives:
            assert re.search(r"^TP \d+ PP \d+ .*tokens/GPU/s predicted, worst rank "
                             r"\d+(\.\d+)? GiB \(95% bound\)\n"
                             r"--tensor-model-parallel-size \d+ ", alternative.text), alternative.text
        legend = page.find_element(By.ID, "legend").text
        for part in ("Parameters (dense)", "Optimizer states (expert)", "Activations",
                     "Overheads"):
            assert part in legend, legend

        # Hovering a bar shows its numbers.
        ActionChains(page).move_to_element(bars[7]).perform()
        wait.until(ready.visibility_of_element_located((By.ID, "tooltip")))
        tip = page.find_element(By.ID, "tooltip").text
        assert "PP rank 7" in tip and "Peak on the GPU" in tip and "GiB" in tip, tip

        # A module tree per rank, collapsible.
        tree = page.find_elements(By.CSS_SELECTOR, "#trees > details")[0]
        tree.find_element(By.TAG_NAME, "summary").click()
        assert "params" in tree.text, tree.text

        shot = os.path.join(args.out_dir, "http_page_test.png")
        page.save_screenshot(shot)
        print(f"screenshot: {shot}")

        # The URL holds the job: opening it again shows the same answer.
        link = page.current_url
        assert "preset=deepseek-v3" in link and "num-gpus=256" in link, link
        page.get("about:blank")
        page.get(link)
        wait.until(lambda p: len(p.find_elements(By.CSS_SELECTOR, "#chart svg g.rank-bar")) == 8)
        assert page.find_element(By.ID, "verdict").text == verdict

        # A bad job: the error names the field.
        box = page.find_element(By.ID, "num-gpus")
        box.clear()
        box.send_keys("0")
        page.find_element(By.ID, "check").click()
        wait.until(ready.visibility_of_element_located((By.ID, "error")))
        error = page.find_element(By.ID, "error").text
        assert "job.megatron.num_gpus" in error and "world size is required" in error, error
        assert not page.find_element(By.ID, "result").is_displayed()
        error_shot = os.path.join(args.out_dir, "http_page_test_error.png")
        page.save_screenshot(error_shot)
        print(f"screenshot: {error_shot}")

        # A pasted sbatch script, read by the server (never run): its
        # #OOMGUARD line gives the GPU count the form's 0 lacks.
        script = ("#!/bin/bash\n#SBATCH --nodes=32\n#OOMGUARD preset=deepseek-v3 gpus=256\n"
                  "srun torchrun --nproc-per-node 8 pretrain_gpt.py "
                  + example.replace("\n", " ").replace("Et|(tt|)*30mL", "'Et|(tt|)*30mL'") + "\n")
        text = page.find_element(By.ID, "job-text")
        text.clear()
        text.send_keys(script)
        page.find_element(By.ID, "check").click()
        wait.until(ready.visibility_of_element_located((By.ID, "result")))
        wait.until(lambda p: len(p.find_elements(By.CSS_SELECTOR, "#chart svg g.rank-bar")) == 8)
        assert page.find_element(By.ID, "verdict").text == verdict
        assert not page.find_element(By.ID, "error").is_displayed()

        # With the GPU count left empty, the script's own: none stated (a
        # bare python launch) is an error naming the field; torchrun on each
        # of #SBATCH's 32 nodes x 8 processes is 256 ranks.
        page.find_element(By.ID, "num-gpus").clear()
        sized = script.replace(" gpus=256", "")
        for launch, shown in (("python", "error"),
                              ("srun torchrun --nnodes $SLURM_NNODES --nproc-per-node 8", "result")):
            text.clear()
            text.send_keys(sized.replace("srun torchrun --nproc-per-node 8", launch))
            page.find_element(By.ID, "check").click()
            wait.until(ready.visibility_of_element_located((By.ID, shown)))
            if shown == "error":
                error = page.find_element(By.ID, "error").text
                assert "gpus: the job's GPU count is unknown" in error, error
        assert page.find_element(By.ID, "verdict").text == verdict
        assert not page.find_element(By.ID, "error").is_displayed()

        # A preset and the short form, nothing pasted: 2 pipeline ranks.
        page.find_element(By.ID, "job-text").clear()
        Select(page.find_element(By.ID, "preset")).select_by_value("llama3-8b")
        page.find_element(By.CSS_SELECTOR, "#layout summary").click()
        for field, value in (("num-gpus", "8"), ("f-tp", "2"), ("f-pp", "2"), ("f-mbs", "1"),
                             ("f-gbs", "64"), ("f-seq", "4096")):
            box = page.find_element(By.ID, field)
            box.clear()
            box.send_keys(value)
        Select(page.find_element(By.ID, "f-recompute")).select_by_value("selective")
        Select(page.find_element(By.ID, "f-precision")).select_by_value("bf16")
        page.find_element(By.ID, "check").click()
        wait.until(lambda p: len(p.find_elements(By.CSS_SELECTOR, "#chart svg g.rank-bar")) == 2)
        assert "f-tp=2" in page.current_url, page.current_url
        assert page.find_element(By.ID, "verdict").text.startswith("oomguard: "), \
            page.find_element(By.ID, "verdict").text

        check_record_mode(page, wait, port, args.out_dir)
        page.get(url)
        wait.until(lambda p: p.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
        check_rl_mode(page, wait, port, args)

        # Every file the page loaded came from the server itself.
        origin = f"http://127.0.0.1:{port}/"
        loaded = page.execute_script(
            "return performance.getEntriesByType('resource').map((e) => e.name)")
        assert loaded and all(name.startswith(origin) for name in loaded), loaded

        # Nothing the page did broke its Content-Security-Policy.
        problems = [e["message"] for e in page.get_log("browser")
                    if e["level"] == "SEVERE" and "400" not in e["message"]
                    and "404" not in e["message"]]
        assert not problems, problems
    finally:
        page.quit()
        server.terminate()
        server.wait(timeout=15)
        shutil.rmtree(work, ignore_errors=True)
    print("ok: 8 bars, capacity line, verdict, recommendations, alternatives, hover, trees, link, "
          "field error, script, check record, RL phases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
