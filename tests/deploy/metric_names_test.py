#!/usr/bin/python3
"""The Grafana dashboard and the Prometheus rules against the real server.

    /usr/bin/python3 tests/deploy/metric_names_test.py --server-binary BUILD/tools/oomguard_server_for_test

Starts the built `oomguard serve` on loopback (with an SQLite store, so that
checks are kept and reports taken), makes a few calls and reports what two
admitted jobs used (one of them died of CUDA OOM), scrapes its /metrics, and
checks that deploy/grafana/oomguard.json and
deploy/prometheus/rules/oomguard.rules.yml
  - name only metrics the server exports (plus Prometheus' `up` and the
    rules' own recording rules), group and match only labels it exports,
    and only label values it can produce (methods, verdicts, gRPC codes);
  - evaluate, in a real Prometheus (/usr/bin/prometheus) scraping that
    server with the rules loaded: every rule without error and with the
    values the calls imply, every dashboard query without error and with
    data.
Also checks that the rules' unit tests cover every alert firing and not
firing. Exits 77 (skipped) only when /usr/bin/python3 lacks grpc or yaml;
the live-Prometheus test skips only when prometheus is not installed.
"""

import argparse
import importlib.util
import json
import math
import os
import re
import shutil
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "testing"))
sys.path.insert(1, os.path.join(SOURCE_DIR, "clients", "python"))

import prometheus_server  # pylint: disable=wrong-import-position
import python_client_server  # pylint: disable=wrong-import-position

_MISSING = [m for m in ("grpc", "yaml") if importlib.util.find_spec(m) is None]
if _MISSING:
    print(f"skipped: {sys.executable} lacks {', '.join(_MISSING)} (apt-get install "
          "python3-grpcio python3-yaml)")
    sys.exit(python_client_server.SKIP)

import yaml  # noqa: E402  pylint: disable=wrong-import-position

from oomguard_client import Client, OomguardError  # noqa: E402  pylint: disable=wrong-import-position

DASHBOARD = os.path.join(SOURCE_DIR, "deploy", "grafana", "oomguard.json")
RULES = os.path.join(SOURCE_DIR, "deploy", "prometheus", "rules", "oomguard.rules.yml")
RULES_TEST = os.path.join(SOURCE_DIR, "deploy", "prometheus", "rules", "oomguard.rules.test.yml")

GRPC_CODES = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
              "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
              "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
              "UNAUTHENTICATED"}
# Labels Prometheus adds to every scraped series, and the `up` series.
TARGET_LABELS = {"job", "instance"}
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool",
                   "and", "or", "unless", "inf", "nan"}

# The Check caches' series (service/cache_metrics.h).
CACHE_FAMILIES = ("oomguard_cache_lookups_total", "oomguard_cache_entries", "oomguard_cache_bytes")
# The feedback loop's series (service/feedback_metrics.h).
FEEDBACK_FAMILIES = ("oomguard_feedback_reports_total", "oomguard_estimate_error_ratio_bucket",
                     "oomguard_measured_peaks_total", "oomguard_measured_peaks_under_bound_total",
                     "oomguard_admitted_then_oom_total", "oomguard_learned_bound_widening_ratio")

OPTIONS = None
SERVER = None
STORE_DIR = None
SCRAPE = None  # Exposition of the server: {metric name: {label: set(values)}}.

# Calls made before the scrape: one Check that fits, one that does not, one
# invalid Check, one Estimate, ListGpus and ListPresets; then two more Checks
# that fit (over HTTP/JSON), what their jobs used (report_feedback) and, for
# the second, a CUDA OOM.
LLAMA_FITS = ("--tensor-model-parallel-size 1 --use-distributed-optimizer --seq-length 4096 "
              "--micro-batch-size 1 --recompute-granularity full --recompute-method uniform "
              "--recompute-num-layers 1")
DEEPSEEK_8 = "--expert-model-parallel-size 8 --seq-length 4096 --micro-batch-size 1"


def make_calls(server):
    with Client(server.address, timeout=10.0) as client:
        verdicts = [
            client.check(args=LLAMA_FITS, num_gpus=8, preset="llama3-8b").verdict,
            client.check(args=DEEPSEEK_8, num_gpus=8, preset="deepseek-v3").verdict,
        ]
        assert verdicts == ["FITS", "DOES_NOT_FIT"], verdicts
        try:
            client.check(args="", num_gpus=0, preset="llama3-8b")
            raise AssertionError("a Check with num_gpus 0 succeeded")
        except OomguardError as error:
            assert error.code_name == "INVALID_ARGUMENT", error
        client.estimate(args=LLAMA_FITS, num_gpus=8, preset="llama3-8b")
        client.list_gpus()
        client.list_presets()
    report_feedback(server)


def report_feedback(server):
    """Two admitted checks and their reports: the first ran (its rank 0's
    allocator peak from Megatron's log, a GPU's device peak from DCGM), the
    second died of CUDA OOM (the admitted-then-OOM counter)."""
    check = {"job": {"megatron": {"preset": "llama3-8b", "numGpus": 8, "args": LLAMA_FITS}},
             "gpuName": "H100-SXM-80GB"}
    ran, oom = (server.http_json("POST", "/v1/check", check) for _ in range(2))
    assert ran["verdict"] == oom["verdict"] == "VERDICT_FITS", (ran["verdict"], oom["verdict"])
    for report in (
            {"checkId": ran["checkId"], "source": "MEASUREMENT_SOURCE_MEGATRON_LOG",
             "outcome": "JOB_OUTCOME_RAN", "ranks": [{"rank": 0, "maxAllocatedBytes": str(30 << 30)}]},
            {"checkId": ran["checkId"], "source": "MEASUREMENT_SOURCE_DCGM",
             "ranks": [{"device": "node1/0", "deviceUsedBytes": str(40 << 30)}]},
            {"checkId": oom["checkId"], "source": "MEASUREMENT_SOURCE_MEGATRON_LOG",
             "outcome": "JOB_OUTCOME_CUDA_OOM",
             "detail": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."}):
        server.http_json("POST", "/v1/report", report)


def parse_exposition(text):
    """{metric name: {label name: set(values)}} of a text exposition."""
    series = {}
    sample = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+\S+")
    label = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        match = sample.match(line)
        if not match:
            continue
        labels = series.setdefault(match.group(1), {})
        for name, value in label.findall(match.group(2) or ""):
            labels.setdefault(name, set()).add(value)
    return series


def strip_promql(expr):
    """`expr` with strings, matchers, ranges, grouping clauses, offsets and
    numbers removed: what is left are functions, operators and metric names."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    s = re.sub(r"\{[^{}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    s = re.sub(r"\boffset\s+[-\w$]+", " ", s)
    s = re.sub(r"(?<![\w:.])\d+(?:\.\d*)?(?:[eE][+-]?\d+)?", " ", s)
    return s


def metric_names(expr):
    s = strip_promql(expr)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", s):
        token = match.group(0)
        if s[match.end():].lstrip().startswith("("):
            continue  # A function or an aggregation.
        if token.lower() in PROMQL_KEYWORDS or token == "e":
            continue
        names.add(token)
    return names


def label_matchers(expr):
    """[(metric or None, label, op, value)] of every {...} in `expr`."""
    out = []
    for match in re.finditer(r"([A-Za-z_:][A-Za-z0-9_:]*)?\s*\{([^{}]*)\}", expr):
        for name, op, value in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"',
                                          match.group(2)):
            out.append((match.group(1), name, op, value))
    return out


def grouping_labels(expr):
    labels = set()
    for clause in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)",
                             expr):
        labels.update(l.strip() for l in clause.split(",") if l.strip())
    return labels


def dashboard_targets(dashboard):
    """[(panel title, expr)] of every panel query, rows included."""
    out = []

    def walk(panels):
        for panel in panels:
            for target in panel.get("targets", []):
                if target.get("expr"):
                    out.append((panel.get("title", "?"), target["expr"]))
            walk(panel.get("panels", []))

    walk(dashboard["panels"])
    return out


def dashboard_variable_queries(dashboard):
    """[(name, metric selector, label)] of the label_values(...) variables."""
    out = []
    for variable in dashboard["templating"]["list"]:
        if variable.get("type") != "query":
            continue
        query = variable["query"]
        query = query.get("query") if isinstance(query, dict) else query
        match = re.fullmatch(r"\s*label_values\((.*),\s*([A-Za-z_]\w*)\)\s*", query)
        assert match, f"variable {variable['name']}: unsupported query {query!r}"
        out.append((variable["name"], match.group(1), match.group(2)))
    return out


def substitute_grafana_variables(expr):
    return (expr.replace("$__rate_interval", "1m").replace("$__range", "5m")
            .replace("${job}", "oomguard").replace("$job", "oomguard")
            .replace("${instance}", ".*").replace("$instance", ".*"))


def load_rules():
    with open(RULES, encoding="utf-8") as f:
        return [rule for group in yaml.safe_load(f)["groups"] for rule in group["rules"]]


def setUpModule():  # pylint: disable=invalid-name
    global SERVER, SCRAPE, STORE_DIR  # pylint: disable=global-statement
    STORE_DIR = tempfile.mkdtemp(prefix="oomguard-store-")
    SERVER = python_client_server.Server(OPTIONS.server_binary, extra_flags=[
        f"--store=sqlite:{STORE_DIR}/checks.db", "--allow_unauthenticated_reports",
        "--http_address=127.0.0.1:0"])
    make_calls(SERVER)
    SCRAPE = parse_exposition(SERVER.metrics())


def tearDownModule():  # pylint: disable=invalid-name
    SERVER.close()
    shutil.rmtree(STORE_DIR, ignore_errors=True)


class ExportedNamesTest(unittest.TestCase):
    """Static checks against the names and labels of the real /metrics."""

    def known_metrics(self):
        known = set(SCRAPE) | {"up"}
        return known

    def check_expr(self, where, expr, extra_metrics=()):
        known = self.known_metrics() | set(extra_metrics)
        for name in metric_names(expr):
            self.assertIn(name, known, f"{where}: metric {name} is not exported by the server "
                                       f"(exports: {sorted(SCRAPE)})\n  {expr}")
        known_labels = set(TARGET_LABELS) | {"le"}
        for labels in SCRAPE.values():
            known_labels |= set(labels)
        for label in grouping_labels(expr):
            self.assertIn(label, known_labels, f"{where}: label {label} does not exist\n  {expr}")
        for metric, label, op, value in label_matchers(expr):
            self.assertIn(label, known_labels, f"{where}: label {label} does not exist\n  {expr}")
            if "$" in value or label in TARGET_LABELS:
                continue
            if op in ("=~", "!~") and re.search(r"[.*+?()\[\]{}^\\]", value):
                continue  # A real regex: not a list of values.
            if label == "code":
                allowed = GRPC_CODES
            else:
                # The metric's own values; for a recording rule (or no
                # metric name), the values any exported metric has.
                families = [n for n in SCRAPE if metric and n.startswith(metric)] or list(SCRAPE)
                allowed = set().union(*(SCRAPE[n].get(label, set()) for n in families))
            for alternative in value.split("|") if op in ("=~", "!~") else [value]:
                self.assertIn(alternative, allowed,
                              f"{where}: {label}{op}\"{value}\": {alternative!r} is not a value "
                              f"the server exports ({sorted(allowed)})\n  {expr}")

    def test_scrape_has_the_documented_metrics(self):
        for name in ("oomguard_requests_total", "oomguard_request_duration_seconds_bucket",
                     "oomguard_verdicts_total", "oomguard_estimated_peak_bytes_bucket",
                     "oomguard_build_info") + CACHE_FAMILIES + FEEDBACK_FAMILIES:
            self.assertIn(name, SCRAPE)
        self.assertEqual(SCRAPE["oomguard_feedback_reports_total"]["source"],
                         {"megatron_log", "dcgm"})
        self.assertEqual(SCRAPE["oomguard_feedback_reports_total"]["outcome"],
                         {"ran", "unspecified", "cuda_oom"})
        self.assertEqual(SCRAPE["oomguard_measured_peaks_total"]["measure"], {"allocated", "device"})
        self.assertEqual(SCRAPE["oomguard_admitted_then_oom_total"]["family"], {"dense"})
        for name in CACHE_FAMILIES:  # The server's defaults enable all three.
            self.assertEqual(SCRAPE[name]["cache"], {"response", "check_result", "plan"})
        self.assertEqual(SCRAPE["oomguard_cache_lookups_total"]["result"], {"hit", "miss"})
        self.assertEqual(SCRAPE["oomguard_verdicts_total"]["verdict"],
                         {"FITS", "FITS_WITH_SETTINGS", "DOES_NOT_FIT"})
        self.assertLessEqual({"Check", "Estimate", "ListGpus", "ListPresets"},
                             SCRAPE["oomguard_requests_total"]["method"])
        self.assertEqual(SCRAPE["oomguard_requests_total"]["code"], {"OK", "INVALID_ARGUMENT"})

    def test_dashboard_queries_use_exported_names(self):
        with open(DASHBOARD, encoding="utf-8") as f:
            dashboard = json.load(f)
        targets = dashboard_targets(dashboard)
        self.assertGreaterEqual(len(targets), 10)
        used = set()
        for title, expr in targets:
            with self.subTest(panel=title, expr=expr):
                self.check_expr(f"dashboard panel {title!r}", expr)
            used |= metric_names(expr)
        for name, selector, label in dashboard_variable_queries(dashboard):
            with self.subTest(variable=name):
                self.check_expr(f"dashboard variable {name}", selector)
                self.assertIn(label, TARGET_LABELS | set().union(*SCRAPE.values()))
        # Every metric the server exports is on the dashboard.
        for family in ("oomguard_requests_total", "oomguard_request_duration_seconds_bucket",
                       "oomguard_verdicts_total", "oomguard_estimated_peak_bytes_bucket",
                       "oomguard_build_info") + CACHE_FAMILIES + FEEDBACK_FAMILIES:
            self.assertIn(family, used)

    def test_dashboard_structure(self):
        with open(DASHBOARD, encoding="utf-8") as f:
            dashboard = json.load(f)
        self.assertGreaterEqual(dashboard["schemaVersion"], 37)
        self.assertEqual(dashboard["uid"], "oomguard")
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        self.assertEqual(variables["datasource"]["type"], "datasource")
        self.assertEqual(variables["datasource"]["query"], "prometheus")
        ids = []
        titles = set()
        for panel in dashboard["panels"]:
            ids.append(panel["id"])
            titles.add(panel["title"])
            grid = panel["gridPos"]
            self.assertLessEqual(grid["x"] + grid["w"], 24, panel["title"])
            if panel["type"] == "row":
                continue
            self.assertEqual(panel["datasource"], {"type": "prometheus", "uid": "${datasource}"})
            for target in panel["targets"]:
                self.assertEqual(target["datasource"]["uid"], "${datasource}", panel["title"])
                self.assertIn('job=~"$job"', target["expr"], panel["title"])
                self.assertIn('instance=~"$instance"', target["expr"], panel["title"])
        self.assertEqual(len(ids), len(set(ids)))
        for want in ("Request rate by method and code", "Error ratio",
                     "Latency p50 / p90 / p99 by method", "Verdict mix",
                     "Estimated worst-rank peak distribution", "Build info",
                     "Measured against the estimate", "Admitted jobs that ran out of GPU memory",
                     "Measured peaks under the bound"):
            self.assertIn(want, titles)
        heatmap = next(p for p in dashboard["panels"] if p["type"] == "heatmap")
        self.assertEqual(heatmap["targets"][0]["format"], "heatmap")
        self.assertIn("oomguard_estimated_peak_bytes_bucket", heatmap["targets"][0]["expr"])

    def test_rules_use_exported_names(self):
        rules = load_rules()
        recorded = {rule["record"] for rule in rules if "record" in rule}
        for rule in rules:
            name = rule.get("record") or rule.get("alert")
            with self.subTest(rule=name):
                self.check_expr(f"rule {name}", rule["expr"], extra_metrics=recorded)
        for name in recorded:
            self.assertRegex(name, r"^[a-z_]+:[a-z_]+:[a-z0-9_]+$")  # level:metric:operations

    def test_rules_tests_cover_every_alert_firing_and_not(self):
        alerts = {rule["alert"] for rule in load_rules() if "alert" in rule}
        self.assertEqual(alerts, {"OomguardDown", "OomguardTargetMissing",
                                  "OomguardHighErrorRate", "OomguardLatencySLO",
                                  "OomguardRejectionSpike", "OomguardAdmissionTrafficStopped",
                                  "OomguardAdmittedJobRanOutOfMemory"})
        with open(RULES_TEST, encoding="utf-8") as f:
            tests = yaml.safe_load(f)["tests"]
        firing, quiet = set(), set()
        for test in tests:
            for case in test.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
        self.assertEqual(firing, alerts, "alerts without a firing test")
        self.assertEqual(quiet, alerts, "alerts without a not-firing test")


class LivePrometheusTest(unittest.TestCase):
    """The rules and the dashboard's queries in a real Prometheus."""

    @classmethod
    def setUpClass(cls):
        if not os.access(OPTIONS.prometheus, os.X_OK):
            raise unittest.SkipTest(f"{OPTIONS.prometheus} is not installed")
        cls.dir = tempfile.mkdtemp(prefix="oomguard-prom-")
        cls.prometheus = prometheus_server.PrometheusServer(
            OPTIONS.prometheus, cls.dir, rule_files=[RULES],
            scrape_configs="  - job_name: oomguard\n    static_configs:\n"
                           f"      - targets: ['127.0.0.1:{SERVER.metrics_port}']\n")
        try:
            # A first scrape, so that the counters' increase after it shows in rate().
            cls.prometheus.wait_for('up{job="oomguard"} == 1')
            make_calls(SERVER)
            cls.prometheus.wait_for("job:oomguard_verdicts_rejected:ratio_rate5m > 0")
            # Two admitted jobs died of CUDA OOM, one per round of calls: the
            # first created the counter's series at 1 before the first scrape.
            cls.prometheus.wait_for("job_family_gpu:oomguard_admitted_then_oom:increase7d == 2")
            cls.prometheus.wait_for(
                'ALERTS{alertname="OomguardAdmittedJobRanOutOfMemory",alertstate="firing"}')
            cls.prometheus.wait_for("job:oomguard_estimated_peak_bytes:p50_rate1h > 0")
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.prometheus.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def values(self, expr):
        return {tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__")):
                float(r["value"][1]) for r in self.prometheus.query(expr)}

    def test_every_rule_evaluates(self):
        groups = self.prometheus.api("rules")["data"]["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        self.assertEqual(len(rules), len(load_rules()))
        for rule in rules:
            self.assertEqual(rule["health"], "ok", f"{rule['name']}: {rule.get('lastError')}")

    def test_recorded_values(self):
        rates = self.values("job_method_code:oomguard_requests:rate5m")
        for method, code in (("Check", "OK"), ("Check", "INVALID_ARGUMENT"), ("Estimate", "OK"),
                             ("ListGpus", "OK"), ("ListPresets", "OK")):
            key = (("code", code), ("job", "oomguard"), ("method", method))
            self.assertGreater(rates.get(key, 0), 0, f"{method} {code}: {rates}")
        # Only OK and INVALID_ARGUMENT happened: no server errors.
        self.assertEqual(self.values("job:oomguard_request_errors:ratio_rate5m"),
                         {(("job", "oomguard"),): 0.0})
        # Three FITS and one DOES_NOT_FIT per round of calls.
        for window in ("5m", "1d"):
            (ratio,) = self.values(f"job:oomguard_verdicts_rejected:ratio_rate{window}").values()
            self.assertAlmostEqual(ratio, 0.25, places=6, msg=window)
        p99 = self.values('job_method:oomguard_request_duration_seconds:p99_rate5m{method="Check"}')
        (latency,) = p99.values()
        self.assertTrue(0 < latency <= 1, latency)
        (peak,) = self.values("job:oomguard_estimated_peak_bytes:p50_rate1h").values()
        self.assertTrue(8 * 2**30 <= peak <= 1024 * 2**30, peak)

    def test_every_recording_rule_has_data(self):
        for rule in load_rules():
            if "record" in rule:
                with self.subTest(rule=rule["record"]):
                    self.assertTrue(self.prometheus.query(rule["record"]), "no data")

    def test_recorded_feedback(self):
        (oom,) = self.values("job_family_gpu:oomguard_admitted_then_oom:increase7d").items()
        self.assertEqual(dict(oom[0])["job"], "oomguard")
        self.assertEqual(dict(oom[0])["family"], "dense")
        self.assertEqual(oom[1], 2)
        (under,) = self.values("job:oomguard_measured_peaks_under_bound:ratio_rate7d").values()
        self.assertTrue(0 <= under <= 1, under)
        reports = self.values("job_source_outcome:oomguard_feedback_reports:increase1d")
        self.assertEqual({(dict(k)["source"], dict(k)["outcome"]) for k in reports},
                         {("megatron_log", "ran"), ("dcgm", "unspecified"),
                          ("megatron_log", "cuda_oom")})

    def test_only_the_admitted_then_oom_alert_fires(self):
        alerts = self.prometheus.query("ALERTS")
        self.assertEqual([(a["metric"]["alertname"], a["metric"]["alertstate"],
                           a["metric"]["job"], a["metric"]["family"]) for a in alerts],
                         [("OomguardAdmittedJobRanOutOfMemory", "firing", "oomguard", "dense")])

    def test_dashboard_counts_both_admitted_jobs_that_ran_out_of_memory(self):
        with open(DASHBOARD, encoding="utf-8") as f:
            dashboard = json.load(f)
        (expr,) = [e for t, e in dashboard_targets(dashboard)
                   if t == "Admitted jobs that ran out of GPU memory"]
        result = self.prometheus.query(substitute_grafana_variables(expr))
        self.assertEqual([float(r["value"][1]) for r in result], [2])

    def test_dashboard_queries_return_data(self):
        with open(DASHBOARD, encoding="utf-8") as f:
            dashboard = json.load(f)
        for title, expr in dashboard_targets(dashboard):
            with self.subTest(panel=title, expr=expr):
                result = self.prometheus.query(substitute_grafana_variables(expr))
                self.assertTrue(result, "no data")
                values = [float(r["value"][1]) for r in result]
                self.assertTrue(any(not math.isnan(v) for v in values), values)
        for name, selector, label in dashboard_variable_queries(dashboard):
            with self.subTest(variable=name):
                result = self.prometheus.query(substitute_grafana_variables(selector))
                self.assertIn("oomguard", {r["metric"].get("job") for r in result})
                self.assertTrue(all(label in r["metric"] for r in result), result)


def main():
    global OPTIONS  # pylint: disable=global-statement
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--prometheus", default="/usr/bin/prometheus")
    OPTIONS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
