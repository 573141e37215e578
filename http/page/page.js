// The oomguard page: reads the job from the form (or the URL's fragment),
// asks the server's HTTP/JSON API (/v1/check for the verdict, or
// /v1/check_script for a pasted script, which the server reads; /v1/estimate
// for the module trees), and draws the answer: the verdict line, the
// recommendations, one stacked SVG bar per pipeline rank against the GPU's
// usable memory, and a module tree per rank. In RL mode the job is an RL
// step's config (rl_step.js builds it and draws the phases). Loaded as a file
// (the page's Content-Security-Policy allows no inline script); nothing comes
// from elsewhere. At /#check=ID it shows a kept check's record instead
// (check_record.js).
"use strict";

const GiB = 1024 * 1024 * 1024;
const SVG_NS = "http://www.w3.org/2000/svg";

// The parts of one rank's peak, bottom to top (report.proto's RankReport).
const SEGMENTS = [
  { id: "dense-params", label: "Parameters (dense)", bytes: (r) => num(r.static, "denseParamBytes") },
  { id: "dense-grads", label: "Gradients (dense)", bytes: (r) => num(r.static, "denseGradBytes") },
  { id: "dense-optimizer", label: "Optimizer states (dense)", bytes: (r) => num(r.static, "denseOptimizerBytes") },
  { id: "expert-params", label: "Parameters (expert)", bytes: (r) => num(r.static, "expertParamBytes") },
  { id: "expert-grads", label: "Gradients (expert)", bytes: (r) => num(r.static, "expertGradBytes") },
  { id: "expert-optimizer", label: "Optimizer states (expert)", bytes: (r) => num(r.static, "expertOptimizerBytes") },
  { id: "activations", label: "Activations", bytes: (r) => num(r, "activationBytes") },
  { id: "transients", label: "Transients", bytes: (r) => num(r, "transientBytes") },
  // The optimizer step's fp32 gradient copies, where they outgrow the
  // activations and transients (the peak is the larger of the two).
  {
    id: "optimizer-step", label: "Optimizer step (beyond activations)",
    bytes: (r) => Math.max(0, num(r, "optimizerStepBytes") - num(r, "activationBytes") - num(r, "transientBytes")),
  },
  { id: "overheads", label: "Overheads (CUDA, NCCL, allocator, ...)", bytes: (r) => (r.overheads || []).reduce((s, o) => s + num(o, "bytes"), 0) },
];

// protobuf's JSON mapping leaves zero fields out and writes 64-bit integers
// as strings.
function num(message, field) {
  return message && message[field] !== undefined ? Number(message[field]) : 0;
}

function gib(bytes) {
  return (bytes / GiB).toFixed(bytes >= 100 * GiB ? 0 : bytes >= 10 * GiB ? 1 : 2) + " GiB";
}

// A peak the verdict compares, labelled as every surface labels it
// (admission/peak_wording.h): "272 GiB (95% bound)".
function comparedPeak(bytes, check) {
  return `${gib(bytes)} (${check.comparedPeakLabel})`;
}

function $(id) {
  return document.getElementById(id);
}

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes || {})) node.setAttribute(k, v);
  for (const child of children) node.append(child);
  return node;
}

function svg(tag, attributes, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attributes || {})) node.setAttribute(k, String(v));
  for (const child of children) node.append(child);
  return node;
}

// ---------------------------------------------------------------------------
// The job: form <-> URL fragment <-> request.

const FORM_FIELDS = ["preset", "num-gpus", "gpus-per-node", "gpu", "judge-unmodelled", "f-tp", "f-pp",
  "f-vpp", "f-cp", "f-ep", "f-etp", "f-mbs", "f-gbs", "f-seq", "f-recompute", "f-precision",
  "rl-config", "rl-framework", "rl-hf-config"];

// The mode: "rl" for an RL step, "" for a Megatron-LM training step (the
// fragment leaves the default out, so older links read the same).
function readForm() {
  const state = { job: $("job-text").value, mode: $("mode-rl").checked ? "rl" : "" };
  for (const id of FORM_FIELDS) state[id] = $(id).value;
  return state;
}

function writeForm(state) {
  if (state.job !== undefined) $("job-text").value = state.job;
  for (const id of FORM_FIELDS) {
    if (state[id] !== undefined && state[id] !== null) $(id).value = state[id];
  }
  $(state.mode === "rl" ? "mode-rl" : "mode-megatron").checked = true;
  showMode();
  if (FORM_FIELDS.some((id) => id.startsWith("f-") && state[id])) $("layout").open = true;
  if (state["rl-hf-config"]) $("rl-model").open = true;
}

// Shows the inputs of the mode chosen; the fields both modes read (preset,
// GPUs, GPU, unmodelled settings) stay.
function showMode() {
  const rl = $("mode-rl").checked;
  $("megatron-input").hidden = rl;
  $("rl-input").hidden = !rl;
  for (const node of document.querySelectorAll(".megatron-only")) node.hidden = rl;
  // RlJob.num_gpus 0 is the config's own world size.
  $("num-gpus").placeholder = rl ? "the config's" : String(DEFAULT_GPUS);
}

// The fragment holds every non-empty field, so a link reproduces the job.
function fragmentOf(state) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) if (v !== "") params.set(k, v);
  return "#" + params.toString();
}

function stateFromFragment() {
  if (location.hash.length <= 1) return null;
  const params = new URLSearchParams(location.hash.slice(1));
  const state = {};
  for (const [k, v] of params) state[k] = v;
  return state;
}

// The flags the layout form adds after the pasted arguments (the last of a
// repeated flag wins, as in Megatron-LM's argparse).
function formFlags(state) {
  const words = [];
  for (const input of document.querySelectorAll("#layout input[data-flag]")) {
    const value = state[input.id];
    if (value !== "") words.push(input.dataset.flag, value);
  }
  if (state["f-recompute"] === "selective") words.push("--recompute-granularity", "selective");
  if (state["f-recompute"] === "full") {
    words.push("--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1");
  }
  if (state["f-precision"] === "bf16") words.push("--bf16");
  if (state["f-precision"] === "fp16") words.push("--fp16");
  if (state["f-precision"] === "fp8") words.push("--bf16", "--fp8-format", "hybrid");
  return words.join(" ");
}

// A pasted sbatch script (as opposed to an argument line).
function isScript(text) {
  return /^#!/.test(text.trimStart()) || /^\s*#SBATCH/m.test(text);
}

// An empty count or GPU is the page's default for an argument line, and
// the script's own for a pasted script: the form's fields are the caller's
// values, which win over the script (CheckScriptRequest, admission.proto).
const DEFAULT_GPUS = 8;

function firstGpu() {
  const options = $("gpu").options;
  return options.length > 1 ? options[1].value : "";
}

function jobSource(state) {
  const megatron = { numGpus: state["num-gpus"] === "" ? DEFAULT_GPUS : Number(state["num-gpus"]) };
  if (state.preset) megatron.preset = state.preset;
  const args = [state.job.trim(), formFlags(state)].filter((s) => s !== "").join(" ");
  if (args) megatron.args = args;
  const source = { megatron };
  if (state["gpus-per-node"]) source.gpusPerNode = Number(state["gpus-per-node"]);
  return source;
}

// POSTs `body`; without one, a GET.
async function callApi(path, body) {
  const reply = await fetch(path, body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await reply.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch (e) {
    json = { message: text };
  }
  if (!reply.ok) throw Object.assign(new Error(json.message || reply.statusText), { status: reply.status, body: json });
  return json;
}

// ---------------------------------------------------------------------------
// Drawing.

function showError(error) {
  const box = $("error");
  box.replaceChildren();
  const fields = [];
  for (const detail of (error.body && error.body.details) || []) {
    for (const v of detail.fieldViolations || []) fields.push(v);
  }
  const reasons = ((error.body && error.body.details) || []).map((d) => d.reason);
  if (reasons.includes("JOB_NOT_MODELLED")) {
    // oomguard's own answer for a job it does not model: not judged.
    box.append(el("p", {}, `Not judged: ${error.message}`));
  } else if (fields.length === 0) {
    box.append(el("p", {}, `Error${error.status ? " " + error.status : ""}: ${error.message}`));
  } else {
    for (const v of fields) {
      box.append(el("p", {}, el("span", { class: "field" }, v.field), ": ", v.description));
    }
  }
  box.hidden = false;
  $("result").hidden = true;
}

function showVerdict(check) {
  const verdict = $("verdict");
  verdict.textContent = "oomguard: " + check.summary;
  verdict.className = "verdict " + (check.verdict || "").replace("VERDICT_", "").toLowerCase().replaceAll("_", "-");
}

function showRecommendations(check) {
  const list = $("recommendations");
  list.replaceChildren();
  for (const r of check.recommendations || []) {
    const saved = num(r, "savedBytes");
    const item = el("li", { class: "recommendation" },
      el("code", {}, r.setting), " ",
      el("span", { class: "saved" }, saved >= 0 ? `saves ${gib(saved)}` : `costs ${gib(-saved)}`),
      ` → worst rank ${comparedPeak(num(r, "peakDeviceBytesAfter"), check)}`,
      r.sufficient ? el("span", { class: "sufficient" }, " (fits)") : "",
      el("br"), r.reason);
    list.append(item);
  }
  if (list.children.length === 0) list.append(el("li", {}, "Nothing to change."));
}

// The planner's configurations on the same GPUs: those that fit, for a job
// that does not; a clearly faster one, for a job that fits.
function showAlternatives(check) {
  const list = $("alternatives");
  list.replaceChildren();
  for (const a of check.alternatives || []) {
    const speedup = a.speedup || 0;
    const speed = speedup > 0
      ? `+${Math.round(100 * (speedup - 1))}% tokens/GPU/s predicted`
      : `${Math.round(a.tokensPerGpuPerSecond || 0)} tokens/GPU/s predicted`;
    list.append(el("li", { class: "alternative" },
      a.description, ": ", el("span", { class: "saved" }, speed),
      `, worst rank ${comparedPeak(num(a, "comparedPeakBytes"), check)}`, el("br"), el("code", {}, a.megatronArgs)));
  }
  $("alternatives-title").hidden = list.children.length === 0;
  list.hidden = list.children.length === 0;
}

function rankTable(rank, check) {
  const table = el("table");
  const row = (label, bytes) => table.append(el("tr", {}, el("td", {}, label), el("td", {}, gib(bytes))));
  for (const s of SEGMENTS) {
    const bytes = s.bytes(rank);
    if (bytes > 0) row(s.label, bytes);
  }
  row("Peak on the GPU", num(rank, "peakDeviceBytes"));
  row(`At most (${coveragePercent(check)}% bound)`, num(rank, "peakDeviceUpperBytes"));
  row("Usable on the GPU", num(check, "usableBytes"));
  return el("div", {}, el("strong", {}, `PP rank ${num(rank, "ppRank")}`), table);
}

// The coverage of the upper bounds, in percent ("95").
function coveragePercent(check) {
  return String(Math.round(1000 * (check.upperBoundCoverage || 0.95)) / 10);
}

// The chart's parts both modes draw. `y` maps bytes to the SVG's y.
// The GiB gridlines up to `top` bytes, from x = left to left + plotW.
function chartAxis(top, y, left, plotW) {
  const axis = svg("g", { class: "axis" });
  const step = [8, 16, 32, 64, 128, 256].map((g) => g * GiB).find((s) => top / s <= 8) || 512 * GiB;
  for (let b = 0; b <= top; b += step) {
    axis.append(svg("line", { x1: left, x2: left + plotW, y1: y(b), y2: y(b) }));
    axis.append(svg("text", { x: left - 6, y: y(b) + 4, "text-anchor": "end" }, `${Math.round(b / GiB)} GiB`));
  }
  return axis;
}

// The peak a bar will not exceed at the stated coverage: a whisker from the
// bar's top (`base`) to a tick at `bound` (what the verdict compares, unless
// the policy says point).
function drawUpperBound(bar, x, width, base, bound, y, title) {
  if (bound <= base) return;
  const mid = x + width / 2;
  bar.append(svg("line", { class: "upper-whisker", x1: mid, x2: mid, y1: y(base), y2: y(bound) }));
  bar.append(svg("line", { class: "upper-bound", "data-bytes": bound, x1: x + width * 0.25, x2: x + width * 0.75, y1: y(bound), y2: y(bound) },
    svg("title", {}, title)));
}

// The line at the GPU's usable memory (and at its total when a margin is
// kept), from x = left to left + plotW, labelled to the right.
function drawCapacity(chart, check, y, left, plotW, lineId) {
  const usable = num(check, "usableBytes");
  const capacity = num(check, "capacityBytes");
  const right = left + plotW;
  chart.append(svg("line", { id: lineId, class: "capacity-line", x1: left, x2: right, y1: y(usable), y2: y(usable) }));
  chart.append(svg("text", { class: "capacity-label", x: right + 6, y: y(usable) + 4 }, `usable ${gib(usable)}`));
  if (capacity > usable) {
    chart.append(svg("line", { class: "capacity-total-line", x1: left, x2: right, y1: y(capacity), y2: y(capacity) }));
    chart.append(svg("text", { class: "bar-label", x: right + 6, y: y(capacity) + 4 }, `${check.gpuName || "GPU"} ${gib(capacity)}`));
  }
}

// Hovering `bar` shows `card()` (its numbers) next to the pointer.
function hoverCard(bar, card) {
  const tooltip = $("tooltip");
  bar.addEventListener("mousemove", (event) => {
    tooltip.replaceChildren(card());
    tooltip.hidden = false;
    tooltip.style.left = `${event.clientX + 14}px`;
    tooltip.style.top = `${event.clientY + 14}px`;
  });
  bar.addEventListener("mouseleave", () => { tooltip.hidden = true; });
}

function showChart(check) {
  const ranks = check.report.ranks || [];
  const capacity = num(check, "capacityBytes");
  const stacked = (r) => SEGMENTS.reduce((s, seg) => s + seg.bytes(r), 0);
  const upper = (r) => num(r, "peakDeviceUpperBytes");
  const top = Math.max(capacity, ...ranks.map((r) => Math.max(stacked(r), upper(r)))) * 1.08;
  const W = 960, H = 420, left = 64, right = 190, bottom = 34, topPad = 14;
  const plotH = H - bottom - topPad;
  const y = (bytes) => topPad + plotH - (bytes / top) * plotH;
  const slot = (W - left - right) / Math.max(ranks.length, 1);
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "Memory per pipeline rank" });

  chart.append(chartAxis(top, y, left, W - right - left));

  ranks.forEach((rank, i) => {
    const x = left + i * slot + slot * 0.18;
    const width = slot * 0.64;
    const bar = svg("g", { class: "rank-bar", "data-rank": num(rank, "ppRank") });
    let base = 0;
    for (const s of SEGMENTS) {
      const bytes = s.bytes(rank);
      if (bytes <= 0) continue;
      bar.append(svg("rect", { class: "seg-" + s.id, x, width, y: y(base + bytes), height: y(base) - y(base + bytes) },
        svg("title", {}, `PP rank ${num(rank, "ppRank")}: ${s.label} ${gib(bytes)}`)));
      base += bytes;
    }
    const bound = upper(rank);
    drawUpperBound(bar, x, width, base, bound, y, `PP rank ${num(rank, "ppRank")}: at most ${gib(bound)} at ${coveragePercent(check)}%`);
    bar.append(svg("text", { class: "peak-label", x: x + width / 2, y: y(Math.max(base, bound)) - 4, "text-anchor": "middle" }, gib(num(rank, "peakDeviceBytes"))));
    bar.append(svg("text", { class: "bar-label", x: x + width / 2, y: H - bottom + 16, "text-anchor": "middle" }, `rank ${num(rank, "ppRank")}`));
    hoverCard(bar, () => rankTable(rank, check));
    chart.append(bar);
  });

  drawCapacity(chart, check, y, left, W - right - left, "capacity-line");
  $("chart").replaceChildren(chart);

  const legend = $("legend");
  legend.replaceChildren();
  for (const s of SEGMENTS) {
    if (ranks.some((r) => s.bytes(r) > 0)) legend.append(el("li", { class: "seg-" + s.id }, s.label));
  }
  if (ranks.some((r) => upper(r) > stacked(r))) {
    legend.append(el("li", { class: "upper-bound-key" }, `Upper bound (${coveragePercent(check)}% coverage)`));
  }
}

function treeNode(node, open) {
  const repeat = num(node, "repeat") > 1 ? ` ×${num(node, "repeat")}` : "";
  const summary = el("summary", {}, `${node.name || "model"}${repeat} `, el("span", { class: "type" }, node.type || ""),
    el("span", { class: "num" }, `  ${(num(node, "parameters") / 1e6).toFixed(1)} M params, ${gib(num(node, "activationBytes"))} activations / micro-batch`));
  const details = el("details", {}, summary);
  details.open = open;
  for (const child of node.children || []) details.append(treeNode(child, false));
  return details;
}

function showTrees(estimate) {
  const trees = $("trees");
  trees.replaceChildren();
  (estimate.report.rankTrees || []).forEach((root, i) => {
    const rank = el("details", { class: "tree" }, el("summary", {}, `PP rank ${i}`));
    rank.append(treeNode(root, true));
    trees.append(rank);
  });
}

function showNotes(notes) {
  $("notes").replaceChildren(...notes.map((n) => el("li", {}, n)));
  $("notes-title").hidden = notes.length === 0;
}

// ---------------------------------------------------------------------------

async function submit() {
  const state = readForm();
  history.replaceState(null, "", fragmentOf(state));
  $("share").href = location.href;
  const button = $("check");
  button.disabled = true;
  try {
    let check;
    let job;
    let scriptNotes = [];
    // Policy.judge_unmodelled; unset: the server's --judge_unmodelled.
    const policy = state["judge-unmodelled"] ? { judgeUnmodelled: state["judge-unmodelled"] === "yes" } : undefined;
    if (state.mode === "rl") {
      job = rlJobSource(state);
      const request = { job, gpuName: state.gpu || firstGpu() };
      if (policy) request.policy = policy;
      check = await callApi("/v1/check", request);
    } else if (isScript(state.job)) {
      // Read by the server (never run), as the scheduler's hook reads it.
      const body = { script: state.job };
      if (state.gpu) body.gpu = state.gpu;
      if (state.preset) body.preset = state.preset;
      if (state["num-gpus"] !== "") body.gpus = Number(state["num-gpus"]);
      if (state["gpus-per-node"] !== "") body.gpusPerNode = Number(state["gpus-per-node"]);
      if (policy) body.policy = policy;
      const read = await callApi("/v1/check_script", body);
      check = read.response;
      job = read.request.job;
      scriptNotes = read.scriptNotes || [];
    } else {
      job = jobSource(state);
      const request = { job, gpuName: state.gpu || firstGpu() };
      if (policy) request.policy = policy;
      check = await callApi("/v1/check", request);
    }
    // An RL step's answer (the RL mode's, or Megatron-LM RL arguments the
    // server recognised as an RL loop's) is drawn phase by phase.
    const rl = Boolean(check.rlStep);
    const estimate = rl ? null : await callApi("/v1/estimate", { job, moduleTree: true }).catch(() => null);
    $("error").hidden = true;
    showVerdict(check);
    showCheckLink(check);
    showRecommendations(check);
    showAlternatives(check);
    if (rl) {
      showRlStep(check);
      showNotes([...scriptNotes, ...rlNotes(check)]);
    } else {
      showChart(check);
      if (estimate) showTrees(estimate); else $("trees").replaceChildren();
      showNotes([...scriptNotes, ...(check.report.notes || [])]);
    }
    $("rl-result").hidden = !rl;
    $("megatron-result").hidden = rl;
    $("result").hidden = false;
  } catch (error) {
    showError(error);
  } finally {
    button.disabled = false;
  }
}

async function fillChoices() {
  const [presets, gpus] = await Promise.all([fetch("/v1/presets").then((r) => r.json()), fetch("/v1/gpus").then((r) => r.json())]);
  for (const p of presets.presets || []) $("preset").append(el("option", { value: p.name, title: p.description }, p.name));
  for (const g of gpus.gpus || []) $("gpu").append(el("option", { value: g.name, title: g.description || "" }, `${g.name} (${gib(num(g, "memoryBytes"))})`));
  if (firstGpu()) $("gpu-default").textContent = `a pasted script's, else ${firstGpu()}`;
}

async function main() {
  $("job-form").addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  for (const radio of document.querySelectorAll("input[name=mode]")) radio.addEventListener("change", showMode);
  await fillChoices();
  const state = stateFromFragment();
  if (state && state.check !== undefined) {
    // A check's record (check_record.js), not a job.
    await showCheckRecord(state.check);
  } else if (state) {
    writeForm(state);
    submit();
  }
  document.body.dataset.ready = "true";
}

document.addEventListener("DOMContentLoaded", main);
