// A check's record on the page (at /#check=ID): GET /v1/checks/{check_id}
// answers feedback.proto's CheckRecord in protobuf's JSON mapping
// (lowerCamelCase names, 64-bit integers as strings, enums by name, zero
// fields left out). Shown: what was judged, then per pipeline stage the
// estimate the verdict compared beside what the job's reports measured
// there (each global rank r on stage r / gpusPerPipelineStage, Megatron-LM's
// default rank order, as feedback.proto says), the error
// (estimate - measured) / measured and whether the measured peak stayed
// under the upper bound; measurements that name a device but no rank (DCGM)
// against the largest stage; and the reports as they came.
"use strict";

// The two comparisons a measurement allows (feedback.proto's
// RankMeasurement): the allocator's peak against the estimate's allocated
// peak, the device's used memory against its device peak.
const MEASURES = [
  { id: "allocated", label: "allocated", measured: "maxAllocatedBytes", estimate: "peakAllocatedBytes", upper: "peakAllocatedUpperBytes" },
  { id: "device", label: "on the device", measured: "deviceUsedBytes", estimate: "peakDeviceBytes", upper: "peakDeviceUpperBytes" },
];

function enumWord(value, prefix) {
  return value ? value.replace(prefix, "").toLowerCase().replaceAll("_", " ") : "";
}

// The largest value of `field` over `measurements`, or undefined.
function largest(measurements, field) {
  let best;
  for (const m of measurements) {
    if (m[field] !== undefined && (best === undefined || Number(m[field]) > best)) best = Number(m[field]);
  }
  return best;
}

// "+12.3%" for an estimate above the measurement.
function errorPercent(estimate, measured) {
  if (!measured) return "";
  const e = (100 * (estimate - measured)) / measured;
  return (e >= 0 ? "+" : "") + e.toFixed(1) + "%";
}

// The measurements of every report: those with a rank by pipeline stage,
// the others (a device only) apart.
function measurementsByStage(record) {
  const perStage = Math.max(1, num(record, "gpusPerPipelineStage"));
  const stages = new Map();
  const devices = [];
  for (const report of record.reports || []) {
    for (const m of report.ranks || []) {
      const measured = Object.assign({ source: report.source }, m);
      if (m.rank === undefined) {
        devices.push(measured);
        continue;
      }
      const stage = Math.floor(Number(m.rank) / perStage);
      if (!stages.has(stage)) stages.set(stage, []);
      stages.get(stage).push(measured);
    }
  }
  return { stages, devices };
}

// The cells of one comparison: the estimate (and its bound), the measured
// peak, the error and whether it stayed under the bound.
function comparisonCells(estimate, measure, measured) {
  const est = num(estimate, measure.estimate);
  const upper = num(estimate, measure.upper);
  const cells = [
    el("td", { class: `num est-${measure.id}` }, est ? `${gib(est)} (at most ${gib(upper)})` : "—"),
    el("td", { class: `num meas-${measure.id}` }, measured === undefined ? "—" : gib(measured)),
  ];
  if (measured === undefined || !est) {
    cells.push(el("td", { class: `num err-${measure.id}` }, ""), el("td", { class: `bound-${measure.id}` }, ""));
  } else {
    const under = measured <= (upper || est);
    cells.push(el("td", { class: `num err-${measure.id}` }, errorPercent(est, measured)),
      el("td", { class: `bound-${measure.id} ${under ? "under" : "over"}` }, under ? "under the bound" : "OVER the bound"));
  }
  return cells;
}

function comparisonHeader() {
  const row = el("tr", {}, el("th", { scope: "col" }, "PP stage"));
  for (const m of MEASURES) {
    row.append(el("th", { scope: "col" }, `Estimate, ${m.label}`), el("th", { scope: "col" }, `Measured, ${m.label}`),
      el("th", { scope: "col" }, "Error"), el("th", { scope: "col" }, "Bound"));
  }
  row.append(el("th", { scope: "col" }, "Ranks measured"));
  return row;
}

function showRecordFacts(record) {
  const facts = [
    ["Checked", record.checkedAt || ""],
    ["Verdict", enumWord(record.verdict, "VERDICT_")],
    ["GPU", `${record.gpuName || ""} (${gib(num(record, "usableBytes"))} usable)`],
    ["GPUs", String(num(record, "numGpus"))],
    ["Model family", record.family || ""],
    ["Cluster", record.cluster || ""],
    ["oomguard", record.oomguardVersion || ""],
    ["Outcome", enumWord(record.outcome, "JOB_OUTCOME_") || "not reported"],
  ];
  const handle = record.handle || {};
  if (handle.kubernetesWorkload) {
    facts.push(["Kubernetes", `${handle.kubernetesKind || "workload"} ${handle.kubernetesNamespace}/${handle.kubernetesWorkload}`]);
  }
  if (handle.slurmJobId) facts.push(["Slurm job", handle.slurmJobId]);
  if (record.learnedWidening) facts.push(["Bound widened by", `${(100 * record.learnedWidening).toFixed(1)}% (learned)`]);
  $("record-facts").replaceChildren(...facts.filter(([, v]) => v !== "")
    .flatMap(([k, v]) => [el("dt", {}, k), el("dd", { "data-fact": k }, v)]));
}

function showRecordStages(record, stages) {
  const table = $("record-stages");
  table.replaceChildren(comparisonHeader());
  for (const estimate of record.estimate || []) {
    const stage = num(estimate, "ppRank");
    const measured = stages.get(stage) || [];
    const row = el("tr", { class: "stage", "data-stage": String(stage) }, el("th", { scope: "row" }, String(stage)));
    for (const m of MEASURES) row.append(...comparisonCells(estimate, m, largest(measured, m.measured)));
    row.append(el("td", { class: "num ranks-measured" }, String(measured.length)));
    table.append(row);
  }
}

// Device-only measurements (DCGM's "<pod>/<gpu>"): the job's largest stage
// is the one they are compared with.
function showRecordDevices(record, devices) {
  const stages = record.estimate || [];
  const largestStage = stages.reduce((a, b) => (num(b, "peakDeviceBytes") > num(a, "peakDeviceBytes") ? b : a), stages[0] || {});
  const device = MEASURES.find((m) => m.id === "device");
  const table = $("record-devices");
  table.replaceChildren(el("tr", {}, el("th", { scope: "col" }, "Device"), el("th", { scope: "col" }, "Source"),
    el("th", { scope: "col" }, "Estimate (largest stage)"), el("th", { scope: "col" }, "Measured"),
    el("th", { scope: "col" }, "Error"), el("th", { scope: "col" }, "Bound")));
  for (const m of devices) {
    table.append(el("tr", { class: "device" }, el("td", {}, m.device || ""), el("td", {}, enumWord(m.source, "MEASUREMENT_SOURCE_")),
      ...comparisonCells(largestStage, device, m.deviceUsedBytes === undefined ? undefined : Number(m.deviceUsedBytes))));
  }
  table.hidden = devices.length === 0;
  $("record-devices-title").hidden = devices.length === 0;
}

function showRecordReports(record) {
  const reports = record.reports || [];
  const table = $("record-reports");
  table.replaceChildren(el("tr", {}, el("th", { scope: "col" }, "Received"), el("th", { scope: "col" }, "Source"),
    el("th", { scope: "col" }, "Reporter"), el("th", { scope: "col" }, "Measurements"), el("th", { scope: "col" }, "Outcome"),
    el("th", { scope: "col" }, "Detail")));
  for (const r of reports) {
    const outcome = enumWord(r.outcome, "JOB_OUTCOME_") + (r.oomPhase ? ` (${r.oomPhase})` : "");
    table.append(el("tr", { class: "report" }, el("td", {}, r.receivedAt || ""), el("td", {}, enumWord(r.source, "MEASUREMENT_SOURCE_")),
      el("td", {}, r.reporter || ""), el("td", { class: "num" }, String((r.ranks || []).length)), el("td", {}, outcome),
      el("td", { class: "detail" }, r.detail ? el("code", {}, r.detail) : "")));
  }
  table.hidden = reports.length === 0;
  $("record-no-reports").hidden = reports.length > 0;
}

// Shows the record of check `id` in place of the form and its answer.
async function showCheckRecord(id) {
  $("job-form").hidden = true;
  $("result").hidden = true;
  $("record").hidden = true;
  try {
    const record = await callApi(`/v1/checks/${encodeURIComponent(id)}`);
    $("error").hidden = true;
    $("record-id").textContent = record.checkId;
    showRecordFacts(record);
    const { stages, devices } = measurementsByStage(record);
    showRecordStages(record, stages);
    showRecordDevices(record, devices);
    showRecordReports(record);
    $("record").hidden = false;
  } catch (error) {
    showError(error);
  }
}

// After a check the server kept: the link to its record.
function showCheckLink(check) {
  const link = $("check-link");
  link.hidden = !check.checkId;
  if (check.checkId) {
    const a = $("check-link-a");
    a.href = `#check=${check.checkId}`;
    a.textContent = check.checkId;
  }
}

// Following a record's link (or typing one) shows it; the form is back when
// the fragment holds a job again.
window.addEventListener("hashchange", () => {
  const state = stateFromFragment();
  if (state && state.check !== undefined) {
    showCheckRecord(state.check);
  } else {
    $("record").hidden = true;
    $("job-form").hidden = false;
  }
});
