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
with the layout form (TP 2, PP 2, ...) gives 2 bars. Saves a
screenshot of the answer and of the error to --out-dir and prints their
paths.

Exits 77 (skipped) when chromium, chromedriver or python3-selenium is absent.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

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


def start_server(binary, log_path):
    log = open(log_path, "w")
    server = subprocess.Popen(
        [binary, "--grpc_address=127.0.0.1:0", "--metrics_address=", "--http_address=127.0.0.1:0",
         "--threads=2"], stdout=log, stderr=subprocess.STDOUT)
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
    server, port = start_server(args.server_binary, os.path.join(work, "server.log"))
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

        # Nothing the page did broke its Content-Security-Policy.
        problems = [e["message"] for e in page.get_log("browser")
                    if e["level"] == "SEVERE" and "400" not in e["message"]]
        assert not problems, problems
    finally:
        page.quit()
        server.terminate()
        server.wait(timeout=15)
        shutil.rmtree(work, ignore_errors=True)
    print("ok: 8 bars, capacity line, verdict, recommendations, alternatives, hover, trees, link, "
          "field error, script")
    return 0


if __name__ == "__main__":
    sys.exit(main())
