// The page's RL mode: the RL job from the form (RlJob, rl_job.proto: a
// framework's YAML config or an RL argument line split into words, the model,
// the GPU count) and the drawing of the answer's RlStepReport (rl_report.proto):
// one stacked bar per phase per pipeline rank, a bar's parts the phase's terms,
// against the GPU's usable memory, with the upper bound marked; each phase's
// terms with the keys that move them; the host memory the offloads need.
// Loaded after page.js, whose helpers ($, el, svg, num, gib, comparedPeak,
// coveragePercent) it uses.
"use strict";

// The phases' names in rl_report.proto, as the page words them.
const PHASE_TITLES = {
  generate: "generate",
  weight_sync: "weight sync",
  log_prob: "log-prob",
  ref_log_prob: "reference log-prob",
  critic: "critic",
  actor_update: "actor update",
};

function phaseTitle(phase) {
  return PHASE_TITLES[phase.phase] || phase.phase || "phase";
}

// A form field the page itself finds wrong, shown as the API's errors are
// (a google.rpc.BadRequest naming the request's field).
function fieldError(field, description) {
  return Object.assign(new Error(`${field}: ${description}`), {
    body: { details: [{ fieldViolations: [{ field, description }] }] },
  });
}

// Text with a YAML mapping line ("key:") or a JSON object is a config; any
// other text is an argument line.
function isYamlConfig(text) {
  return /^\s*\{/.test(text) || /^[ \t]*[A-Za-z_][\w.-]*[ \t]*:([ \t]|$)/m.test(text);
}

// An argument line's words, as a POSIX shell splits them, with nothing
// expanded or run: blanks separate words; '...' is literal; "..." keeps all but
// \\, \", \$, \` and a \ line end; outside quotes a \ quotes the next character
// and a \ line end joins the lines; a word starting with # comments out the
// rest of its line. RlJob.argv carries the words (nothing is split again).
function shellWords(text) {
  const words = [];
  let word = null;
  let i = 0;
  const add = (s) => { word = (word || "") + s; };
  while (i < text.length) {
    const c = text[i];
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      if (word !== null) words.push(word);
      word = null;
      i += 1;
    } else if (c === "#" && word === null) {
      while (i < text.length && text[i] !== "\n") i += 1;
    } else if (c === "\\") {
      if (text[i + 1] === "\n") {
        i += 2;
      } else {
        if (i + 1 < text.length) add(text[i + 1]);
        i += 2;
      }
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw fieldError("job.rl.argv", "a ' is not closed");
      add(text.slice(i + 1, end));
      i = end + 1;
    } else if (c === '"') {
      let j = i + 1;
      let quoted = "";
      while (j < text.length && text[j] !== '"') {
        if (text[j] === "\\" && j + 1 < text.length && '\\"$`\n'.includes(text[j + 1])) {
          if (text[j + 1] !== "\n") quoted += text[j + 1];
          j += 2;
        } else {
          quoted += text[j];
          j += 1;
        }
      }
      if (j >= text.length) throw fieldError("job.rl.argv", 'a " is not closed');
      add(quoted);
      i = j + 1;
    } else {
      add(c);
      i += 1;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

// JobSource.rl from the form.
function rlJobSource(state) {
  const rl = {};
  const text = state["rl-config"];
  if (isYamlConfig(text)) rl.configYaml = text;
  else if (text.trim() !== "") rl.argv = shellWords(text);
  if (state["rl-framework"]) rl.framework = state["rl-framework"];
  if (state["rl-hf-config"].trim() !== "") rl.hfConfigJson = state["rl-hf-config"];
  else if (state.preset) rl.preset = state.preset;
  if (state["num-gpus"] !== "") rl.numGpus = Number(state["num-gpus"]);
  return { rl };
}

// A colour class per distinct term name, in the order the report first names
// them, so a term keeps its colour in every phase (page.css: .term-0 ...).
const TERM_COLOURS = 20;

function termClasses(step) {
  const classes = new Map();
  for (const phase of step.phases || []) {
    for (const rank of phase.ranks || []) {
      for (const term of rank.terms || []) {
        if (!classes.has(term.name)) classes.set(term.name, `term-${classes.size % TERM_COLOURS}`);
      }
    }
  }
  return classes;
}

function termsTable(caption, terms, total, upper, check) {
  const table = el("table", { class: "terms" }, el("caption", {}, caption));
  table.append(el("tr", {}, el("th", { scope: "col" }, "Term"), el("th", { scope: "col" }, "Bytes"),
    el("th", { scope: "col" }, "Key that moves it"), el("th", { scope: "col" }, "Basis")));
  for (const t of terms) {
    table.append(el("tr", { class: "term" }, el("td", {}, t.name), el("td", { class: "num" }, gib(num(t, "bytes"))),
      el("td", {}, t.key ? el("code", {}, t.key) : ""), el("td", { class: "basis" }, t.basis || "")));
  }
  if (total !== undefined) {
    table.append(el("tr", { class: "total" }, el("th", { scope: "row" }, "Peak on the GPU"), el("td", { class: "num" }, gib(total)),
      el("td", {}, ""), el("td", {}, "")));
    table.append(el("tr", { class: "total" }, el("th", { scope: "row" }, `At most (${coveragePercent(check)}% bound)`),
      el("td", { class: "num" }, gib(upper)), el("td", {}, ""), el("td", {}, "")));
  }
  return table;
}

// The hover card of one bar: that rank's terms in that phase.
function rlRankCard(phase, rank, check) {
  const table = el("table");
  for (const t of rank.terms || []) {
    table.append(el("tr", {}, el("td", {}, t.name), el("td", {}, gib(num(t, "bytes"))),
      el("td", {}, t.key || "")));
  }
  const row = (label, bytes) => table.append(el("tr", {}, el("td", {}, label), el("td", {}, gib(bytes)), el("td", {}, "")));
  row("Peak on the GPU", num(rank, "peakDeviceBytes"));
  row(`At most (${coveragePercent(check)}% bound)`, num(rank, "peakDeviceUpperBytes"));
  row("Usable on the GPU", num(check, "usableBytes"));
  return el("div", {}, el("strong", {}, `${phaseTitle(phase)}, PP rank ${num(rank, "ppRank")}`), table);
}

function showRlBinding(step, check) {
  const binding = (step.phases || []).find((p) => p.phase === step.bindingPhase);
  const line = $("rl-binding");
  line.replaceChildren();
  if (!binding) return;
  line.append("Binding phase: ", el("strong", {}, phaseTitle(binding)),
    `, PP rank ${num(binding, "worstRank")}: ${gib(num(binding, "peakDeviceBytes"))}, at most ${gib(num(binding, "peakDeviceUpperBytes"))} `
    + `(${coveragePercent(check)}% bound), of ${gib(num(check, "usableBytes"))} usable.`);
  if (binding.largestTerm) {
    line.append(` Largest term: ${binding.largestTerm}`);
    if (binding.key) line.append(", moved by ", el("code", {}, binding.key));
    line.append(".");
  }
  const kv = num(step, "engineKvPoolBytes");
  if (kv > 0) line.append(` The engine's KV pool: ${gib(kv)} per GPU, ${num(step, "engineKvTokens").toLocaleString("en")} tokens.`);
}

function showRlChart(step, check, classes) {
  const phases = step.phases || [];
  const capacity = num(check, "capacityBytes");
  const bars = [];
  for (const phase of phases) for (const rank of phase.ranks || []) bars.push({ phase, rank });
  const stacked = (rank) => (rank.terms || []).reduce((s, t) => s + num(t, "bytes"), 0);
  const upper = (rank) => num(rank, "peakDeviceUpperBytes");
  const top = Math.max(capacity, ...bars.map((b) => Math.max(stacked(b.rank), upper(b.rank)))) * 1.08 || 1;
  const W = 960, H = 440, left = 64, right = 150, bottom = 52, topPad = 14, gap = 0.6;
  const plotH = H - bottom - topPad;
  const y = (bytes) => topPad + plotH - (bytes / top) * plotH;
  // Slots: one per bar, and a gap between phases.
  const slot = (W - left - right) / Math.max(bars.length + gap * Math.max(phases.length - 1, 0), 1);
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": "Memory per phase of the RL step and per pipeline rank" });

  chart.append(chartAxis(top, y, left, W - right - left));

  let position = 0;
  phases.forEach((phase, p) => {
    const group = svg("g", { class: "rl-phase" + (phase.phase === step.bindingPhase ? " binding" : ""), "data-phase": phase.phase || "" });
    const first = position;
    for (const rank of phase.ranks || []) {
      const x = left + position * slot + slot * 0.12;
      const width = slot * 0.76;
      const bar = svg("g", { class: "rl-bar", "data-phase": phase.phase || "", "data-rank": num(rank, "ppRank") });
      let base = 0;
      for (const term of rank.terms || []) {
        const bytes = num(term, "bytes");
        if (bytes <= 0) continue;
        bar.append(svg("rect", { class: classes.get(term.name), x, width, y: y(base + bytes), height: y(base) - y(base + bytes) },
          svg("title", {}, `${phaseTitle(phase)}, PP rank ${num(rank, "ppRank")}: ${term.name} ${gib(bytes)}${term.key ? " (" + term.key + ")" : ""}`)));
        base += bytes;
      }
      const bound = upper(rank);
      drawUpperBound(bar, x, width, base, bound, y,
        `${phaseTitle(phase)}, PP rank ${num(rank, "ppRank")}: at most ${gib(bound)} at ${coveragePercent(check)}%`);
      if ((phase.ranks || []).length > 1) {
        bar.append(svg("text", { class: "bar-label", x: x + width / 2, y: H - bottom + 14, "text-anchor": "middle" }, String(num(rank, "ppRank"))));
      }
      hoverCard(bar, () => rlRankCard(phase, rank, check));
      group.append(bar);
      position += 1;
    }
    const middle = left + ((first + position) / 2) * slot;
    const label = svg("text", { class: "phase-label", x: middle, y: H - bottom + 32, "text-anchor": "middle" },
      phaseTitle(phase) + (phase.failure ? " (fails)" : ""));
    // Why it fails, on hover (and in its table below).
    group.append(phase.failure ? svg("g", { class: "phase-failure" }, label, svg("title", {}, phase.failure)) : label);
    chart.append(group);
    position += p < phases.length - 1 ? gap : 0;
  });

  drawCapacity(chart, check, y, left, W - right - left, "rl-capacity-line");
  $("rl-chart").replaceChildren(chart);

  const legend = $("rl-legend");
  legend.replaceChildren();
  for (const [name, cls] of classes) legend.append(el("li", { class: cls }, name));
  if (bars.some((b) => upper(b.rank) > stacked(b.rank))) {
    legend.append(el("li", { class: "upper-bound-key" }, `Upper bound (${coveragePercent(check)}% coverage)`));
  }
}

// Each phase's worst rank, its terms with their keys; the binding phase open.
function showRlTerms(step, check) {
  const box = $("rl-terms");
  box.replaceChildren();
  for (const phase of step.phases || []) {
    const ranks = phase.ranks || [];
    const worst = ranks.find((r) => num(r, "ppRank") === num(phase, "worstRank")) || ranks[0];
    const binding = phase.phase === step.bindingPhase;
    const details = el("details", { class: "rl-phase-terms", "data-phase": phase.phase || "" },
      el("summary", {}, el("strong", {}, phaseTitle(phase)),
        `: ${gib(num(phase, "peakDeviceBytes"))} on PP rank ${num(phase, "worstRank")}, at most ${gib(num(phase, "peakDeviceUpperBytes"))}`
        + (binding ? " (binding)" : "")));
    details.open = binding || Boolean(phase.failure);
    if (phase.failure) details.append(el("p", { class: "failure" }, phase.failure));
    if (worst) {
      details.append(termsTable(`PP rank ${num(worst, "ppRank")}`, worst.terms || [], num(worst, "peakDeviceBytes"),
        num(worst, "peakDeviceUpperBytes"), check));
    }
    box.append(details);
  }
}

function showRlHost(step, check) {
  const box = $("rl-host");
  box.replaceChildren();
  const bytes = num(step, "hostBytesPerNode");
  box.append(el("p", { id: "rl-host-bytes" }, bytes > 0
    ? `The offloads and the sleeping engine need ${gib(bytes)} of host memory per node.`
    : "Nothing is offloaded to host memory."));
  const terms = step.hostTerms || [];
  if (terms.length > 0) box.append(termsTable("Host memory per node", terms, undefined, undefined, check));
}

// Draws CheckResponse.rl_step.
function showRlStep(check) {
  const step = check.rlStep || {};
  const classes = termClasses(step);
  showRlBinding(step, check);
  showRlChart(step, check, classes);
  showRlTerms(step, check);
  showRlHost(step, check);
}

// The notes of an RL answer: the step's, then the actor update's estimate's
// that the step does not already state.
function rlNotes(check) {
  const notes = [...((check.rlStep && check.rlStep.notes) || [])];
  for (const n of (check.report && check.report.notes) || []) if (!notes.includes(n)) notes.push(n);
  return notes;
}
