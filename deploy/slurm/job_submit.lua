--[[
oomguard job_submit hook for Slurm (JobSubmitPlugins=lua, Slurm 22.05+, Lua 5.1).

On sbatch, asks the oomguard service whether the job's Megatron-LM training
launch fits the GPUs it requests, and
  DOES_NOT_FIT        -> rejects the submission with the service's one-line reason
  FITS_WITH_SETTINGS  -> accepts it and tells the user which settings to add
  FITS                -> accepts it silently
  not a Megatron job  -> accepts it (not our business)
  not judged          -> accepts it (a setting oomguard does not model, e.g.
                         an unknown flag; judge_unmodelled = yes judges it
                         anyway), logs why; notify_not_judged = yes tells the
                         user
  service down/slow   -> policy=open (default): accepts and logs;
                         policy=closed: rejects with a retry message.

An accepted job that the service judged (FITS, FITS_WITH_SETTINGS) carries
the verdict's check id, when the server keeps its checks (serve --store):
"oomguard_check_id=ID" is added to its admin_comment (what else is there is
kept) and OOMGUARD_CHECK_ID=ID to its environment, so that the job-completion
script (oomguard_jobcomp.sh) and the job itself can report what it used.

Security: this runs inside slurmctld, often as root, on text any user controls.
No job text ever reaches a shell. The job is written to a file in a directory
only slurmctld's user can write (tmp_dir, 0700, checked before use), under a
name the hook makes up; the command line run through io.popen is built only
from the admin's config (validated against a strict character set) and that
file name. The oomguard client reads the file (it parses the script itself,
never runs it), and coreutils `timeout` bounds its run time. The file is
always removed.

Configuration: oomguard_slurm.conf next to this script (see deploy/slurm/README.md).
]]

local HOOK = "oomguard"
local CONF_NAME = "oomguard_slurm.conf"
local NO_VAL_MIN = 0xfffffff0  -- Slurm's NO_VAL / INFINITE and friends.

-- slurm.log_* run string.format on their arguments: messages always go
-- through "%s" (a summary holds "5%").
local function info(fmt, ...) slurm.log_info("%s", string.format(fmt, ...)) end
local function debug_log(fmt, ...) slurm.log_debug("%s", string.format(fmt, ...)) end
local function error_log(fmt, ...) slurm.log_error("%s", string.format(fmt, ...)) end
local function tell_user(msg) slurm.log_user("%s", msg) end

local DEFAULTS = {
  server = "127.0.0.1:50051",
  binary = "/usr/local/bin/oomguard",
  timeout_binary = "/usr/bin/timeout",
  deadline_ms = "2000",
  policy = "open",          -- open | closed: when the service cannot answer
  on_invalid = "reject",    -- reject | accept: when the job's Megatron settings are invalid
  max_script_bytes = "16777216",
  tmp_dir = "/run/oomguard-slurm",
  default_gpu = "",
  allow_skip = "yes",       -- honour "#OOMGUARD skip" in job scripts
  safety_margin = "",       -- overrides the server's default and the scripts' directives
  tls_ca = "",
  notify_fits = "no",       -- also tell users when a job fits
  judge_unmodelled = "",    -- yes | no | "": judge jobs with settings oomguard does not model
  notify_not_judged = "no", -- also tell users when a job is not judged, and why
  -- Read by oomguard_jobcomp.sh only (the job-completion report).
  report_token_file = "",
  report_deadline_ms = "5000",
  report_log = "",
}

-- ---------------------------------------------------------------------------
-- Configuration.

local function hook_dir()
  local source = debug.getinfo(1, "S").source
  if type(source) == "string" and source:sub(1, 1) == "@" then
    return source:sub(2):match("^(.*)/[^/]*$")
  end
  return nil
end

-- A value that may go on the command line: only these characters, so that
-- nothing needs quoting.
local function is_path(v)
  return v:match("^/[%w%._/%-]+$") ~= nil and not v:find("..", 1, true) and #v <= 4096
end
local function is_name(v)
  return v:match("^[%w%._+%-]+$") ~= nil and #v <= 128
end
local function is_server(v)
  return v:match("^[%w%.%-%[%]:]+$") ~= nil and #v <= 256
end

-- Reads the config; returns (conf, nil) or (nil, error).
local function read_config()
  local conf = { partition = {}, gres_type = {} }
  for k, v in pairs(DEFAULTS) do conf[k] = v end
  local dir = hook_dir() or "/etc/slurm"
  local path = dir .. "/" .. CONF_NAME
  local f = io.open(path, "r")
  if f then
    local n = 0
    for line in f:lines() do
      n = n + 1
      line = line:gsub("#.*$", ""):gsub("^%s+", ""):gsub("%s+$", "")
      if line ~= "" then
        local key, value = line:match("^([%w%._%-]+)%s*=%s*(.-)$")
        if not key then
          f:close()
          return nil, string.format("%s line %d: expected key = value", path, n)
        end
        local part = key:match("^partition%.(.+)$")
        local gres = key:match("^gres_type%.(.+)$")
        if part then
          conf.partition[part] = value
        elseif gres then
          conf.gres_type[gres] = value
        elseif DEFAULTS[key] ~= nil then
          conf[key] = value
        else
          f:close()
          return nil, string.format("%s line %d: unknown key %q", path, n, key)
        end
      end
    end
    f:close()
  end
  -- Validation: everything below may end up on the command line or in the job file.
  local function bad(key) return nil, string.format("%s: bad %s %q", path, key, tostring(conf[key])) end
  if not is_server(conf.server) then return bad("server") end
  if not is_path(conf.binary) then return bad("binary") end
  if not is_path(conf.timeout_binary) then return bad("timeout_binary") end
  if not is_path(conf.tmp_dir) then return bad("tmp_dir") end
  if conf.tls_ca ~= "" and not is_path(conf.tls_ca) then return bad("tls_ca") end
  if conf.report_token_file ~= "" and not is_path(conf.report_token_file) then
    return bad("report_token_file")
  end
  if conf.report_log ~= "" and not is_path(conf.report_log) then return bad("report_log") end
  if not conf.report_deadline_ms:match("^%d+$") or tonumber(conf.report_deadline_ms) < 500
      or tonumber(conf.report_deadline_ms) > 60000 then
    return bad("report_deadline_ms")
  end
  if conf.policy ~= "open" and conf.policy ~= "closed" then return bad("policy") end
  if conf.on_invalid ~= "reject" and conf.on_invalid ~= "accept" then return bad("on_invalid") end
  if conf.allow_skip ~= "yes" and conf.allow_skip ~= "no" then return bad("allow_skip") end
  if conf.notify_fits ~= "yes" and conf.notify_fits ~= "no" then return bad("notify_fits") end
  if conf.judge_unmodelled ~= "" and conf.judge_unmodelled ~= "yes" and conf.judge_unmodelled ~= "no" then
    return bad("judge_unmodelled")
  end
  if conf.notify_not_judged ~= "yes" and conf.notify_not_judged ~= "no" then
    return bad("notify_not_judged")
  end
  if conf.default_gpu ~= "" and not is_name(conf.default_gpu) then return bad("default_gpu") end
  local deadline = tonumber(conf.deadline_ms)
  if not conf.deadline_ms:match("^%d+$") or deadline < 500 or deadline > 60000 then
    return bad("deadline_ms")
  end
  conf.deadline_ms = deadline
  local max_bytes = tonumber(conf.max_script_bytes)
  if not conf.max_script_bytes:match("^%d+$") or max_bytes < 1 or max_bytes > 16777216 then
    return bad("max_script_bytes")
  end
  conf.max_script_bytes = max_bytes
  if conf.safety_margin ~= "" and not conf.safety_margin:match("^0?%.%d+$")
      and conf.safety_margin ~= "0" then
    return bad("safety_margin")
  end
  for name, gpu in pairs(conf.partition) do
    if not is_name(gpu) then return nil, string.format("%s: bad GPU %q for partition.%s", path, gpu, name) end
  end
  for name, gpu in pairs(conf.gres_type) do
    if not is_name(gpu) then return nil, string.format("%s: bad GPU %q for gres_type.%s", path, gpu, name) end
  end
  return conf
end

-- ---------------------------------------------------------------------------
-- What the job asks for.

local function valid_count(n)
  return type(n) == "number" and n >= 1 and n < NO_VAL_MIN
end

-- "gres:gpu:h100:8,gres:shard:2" / "gres/gpu:8" / "gpu" -> count, type (nil when
-- no GPU is requested; type nil when untyped or mixed).
local function parse_gpu_tres(s)
  if type(s) ~= "string" or s == "" then return nil end
  local count, gtype, mixed = nil, nil, false
  for item in s:gmatch("[^,]+") do
    item = item:gsub("^gres[:/]", "")
    local name, rest = item:match("^([^:]+):?(.*)$")
    if name == "gpu" then
      local t, n = rest:match("^([^:]+):(%d+)$")
      if not t then
        n = rest:match("^(%d+)$")
        if not n then
          if rest ~= "" then t = rest end
          n = "1"
        end
      end
      count = (count or 0) + tonumber(n)
      if t then
        if gtype and gtype ~= t then mixed = true end
        gtype = t
      end
    end
  end
  if mixed then gtype = nil end
  return count, gtype
end

-- The job's GPUs: total, per node, GRES type (each may be nil).
local function job_gpus(job_desc)
  local nodes = valid_count(job_desc.min_nodes) and job_desc.min_nodes or 1
  local count, gtype = parse_gpu_tres(job_desc.tres_per_job)
  if count then return count, nil, gtype end
  local per_node, ntype = parse_gpu_tres(job_desc.tres_per_node)
  if not per_node then per_node, ntype = parse_gpu_tres(job_desc.gres) end
  if per_node then return per_node * nodes, per_node, ntype end
  local per_task, ttype = parse_gpu_tres(job_desc.tres_per_task)
  if per_task then
    if valid_count(job_desc.num_tasks) then return per_task * job_desc.num_tasks, nil, ttype end
    if valid_count(job_desc.ntasks_per_node) then
      return per_task * job_desc.ntasks_per_node * nodes, per_task * job_desc.ntasks_per_node, ttype
    end
    return nil, nil, ttype
  end
  local _, stype = parse_gpu_tres(job_desc.tres_per_socket)
  return nil, nil, stype
end

-- The partition the job runs in: its request (all of a list must map to the
-- same GPU), else the default partition.
local function job_partition_gpu(job_desc, part_list, conf)
  local names = {}
  if type(job_desc.partition) == "string" and job_desc.partition ~= "" then
    for p in job_desc.partition:gmatch("[^,]+") do names[#names + 1] = p end
  elseif type(part_list) == "table" then
    for _, part in pairs(part_list) do
      if part.flag_default == 1 or part.flag_default == true then names[#names + 1] = part.name end
    end
  end
  local gpu = nil
  for _, p in ipairs(names) do
    local g = conf.partition[p]
    if not g then return nil, names[1] end
    if gpu and gpu ~= g then return nil, names[1] end
    gpu = g
  end
  return gpu, names[1]
end

-- ---------------------------------------------------------------------------
-- The job file.

local dir_checked_until = 0
local counter = 0
local seeded = false

-- The private directory: created 0700 if missing; must be a real directory
-- owned by us with mode 700 (so no other user can create or swap files in it).
local function check_dir(conf)
  if os.time() < dir_checked_until then return true end
  local d = conf.tmp_dir
  local p = io.popen("umask 077; mkdir -p -- " .. d .. " 2>/dev/null; test -d " .. d ..
                     " && test ! -L " .. d .. " && test -O " .. d .. " && stat -c %a -- " .. d ..
                     " 2>/dev/null")
  if not p then return false, "cannot run mkdir/stat" end
  local mode = (p:read("*a") or ""):gsub("%s+", "")
  p:close()
  if mode ~= "700" then
    return false, string.format("%s must be a directory owned by slurmctld's user with mode 700 (found %q)", d, mode)
  end
  dir_checked_until = os.time() + 60
  return true
end

local function write_job_file(conf, header, script)
  if not seeded then
    local addr = tonumber(tostring({}):match("0x(%x+)") or "0", 16) or 0
    math.randomseed(os.time() + addr % 1000003)
    seeded = true
  end
  for _ = 1, 5 do
    counter = counter + 1
    local path = string.format("%s/job.%d.%d.%06d", conf.tmp_dir, os.time(), counter,
                               math.random(0, 999999))
    local existing = io.open(path, "rb")
    if existing then
      existing:close()
    else
      local f, err = io.open(path, "wb")
      if not f then return nil, err end
      local ok, werr = f:write(header, "\n", script)
      local cok, cerr = f:close()
      if not ok or not cok then
        os.remove(path)
        return nil, werr or cerr or "write failed"
      end
      return path
    end
  end
  return nil, "no free file name"
end

-- ---------------------------------------------------------------------------
-- The check.

-- Runs the client on `path`; returns exit code, message lines, error lines,
-- notes and the verdict's check id (nil when the server gave none).
local function run_client(conf, path)
  local total_s = conf.deadline_ms / 1000
  local argv = {
    conf.timeout_binary, "-k", "0.2", string.format("%.3f", total_s - 0.2),
    conf.binary, "check", "--server", conf.server,
    "--deadline-ms", tostring(math.max(100, conf.deadline_ms - 400)),
  }
  if conf.tls_ca ~= "" then argv[#argv + 1] = "--tls-ca"; argv[#argv + 1] = conf.tls_ca end
  if conf.allow_skip == "no" then argv[#argv + 1] = "--ignore-skip" end
  if conf.judge_unmodelled == "yes" then argv[#argv + 1] = "--judge-unmodelled" end
  if conf.judge_unmodelled == "no" then argv[#argv + 1] = "--no-judge-unmodelled" end
  if conf.safety_margin ~= "" then
    argv[#argv + 1] = "--safety-margin"; argv[#argv + 1] = conf.safety_margin
  end
  argv[#argv + 1] = "--job-file"
  argv[#argv + 1] = path
  -- Every token above is validated config or the hook's own file name.
  local command = table.concat(argv, " ") .. " </dev/null 2>&1; echo oomguard-hook-exit $?"
  local p = io.popen(command)
  if not p then return nil, {}, { "cannot start the oomguard client" }, {} end
  local out = p:read("*a") or ""
  p:close()
  local exit, messages, errors, notes, check_id = nil, {}, {}, {}, nil
  for line in out:gmatch("[^\n]+") do
    local code = line:match("^oomguard%-hook%-exit (%d+)$")
    -- 32 lowercase hex digits (feedback/report_limits.h ValidateCheckId):
    -- safe in admin_comment, the environment and the jobcomp script.
    local id = line:match("^oomguard check: check%-id: (" .. string.rep("[0-9a-f]", 32) .. ")$")
    if code then
      exit = tonumber(code)
    elseif id then
      check_id = id
    elseif line:sub(1, 10) == "oomguard: " then
      messages[#messages + 1] = line
    elseif line:sub(1, 22) == "oomguard check: note: " then
      notes[#notes + 1] = line:sub(23)
    elseif line:sub(1, 16) == "oomguard check: " then
      errors[#errors + 1] = line:sub(17)
    else
      errors[#errors + 1] = line:sub(1, 300)
    end
  end
  return exit, messages, errors, notes, check_id
end

-- The admin_comment with "oomguard_check_id=ID" in it: an earlier id (a
-- resubmission's) replaced, anything else kept.
local CHECK_ID_KEY = "oomguard_check_id="
local function with_check_id(admin_comment, check_id)
  local kept = {}
  if type(admin_comment) == "string" then
    for word in admin_comment:gmatch("%S+") do
      if word:sub(1, #CHECK_ID_KEY) ~= CHECK_ID_KEY then kept[#kept + 1] = word end
    end
  end
  kept[#kept + 1] = CHECK_ID_KEY .. check_id
  return table.concat(kept, " ")
end

-- Gives an admitted job its check id: in admin_comment (the jobcomp
-- script reads it there) and as OOMGUARD_CHECK_ID in its environment (a
-- batch job's; Slurm 22.05's lua plugin sets job_desc.environment entries
-- through the table's __newindex, job_submit_lua.c _set_job_env_field).
-- A failure here only loses the report, never the admitted job.
local function carry_check_id(job_desc, check_id, submit_uid)
  if not check_id then return end
  local ok, err = pcall(function()
    job_desc.admin_comment = with_check_id(job_desc.admin_comment, check_id)
    local env = job_desc.environment
    if type(env) == "table" then env.OOMGUARD_CHECK_ID = check_id end
  end)
  if ok then
    info("%s: uid %s: check id %s in admin_comment and OOMGUARD_CHECK_ID", HOOK,
         tostring(submit_uid), check_id)
  else
    error_log("%s: uid %s: cannot give the job check id %s: %s", HOOK, tostring(submit_uid),
              check_id, tostring(err))
  end
end

-- When the check cannot be done: the admin's policy.
local function unavailable(conf, why, submit_uid)
  if conf and conf.policy == "closed" then
    info("%s: uid %s: check unavailable (%s); rejected (policy=closed)", HOOK, tostring(submit_uid), why)
    tell_user(HOOK .. ": the GPU memory check is unavailable right now; submissions that "
              .. "train Megatron-LM models are refused until it is back (policy=closed). "
              .. "Try again later.")
    return slurm.ERROR
  end
  info("%s: uid %s: check unavailable (%s); accepted (policy=open)", HOOK, tostring(submit_uid), why)
  return slurm.SUCCESS
end

local function check_job(job_desc, part_list, submit_uid)
  local script = job_desc.script
  if type(script) ~= "string" or script == "" then return slurm.SUCCESS end  -- srun/salloc
  -- Cheap filter: without a training script name or a directive it is not ours.
  if not script:find("pretrain_", 1, true) and not script:find("#OOMGUARD", 1, true) then
    return slurm.SUCCESS
  end
  local conf, cerr = read_config()
  if not conf then
    error_log("%s: %s", HOOK, cerr)
    return unavailable(nil, "configuration error", submit_uid)
  end
  if #script > conf.max_script_bytes then
    return unavailable(conf, string.format("job script is %d bytes, more than max_script_bytes=%d",
                                           #script, conf.max_script_bytes), submit_uid)
  end
  -- The envelope header: what Slurm allocates.
  local total, per_node, gtype = job_gpus(job_desc)
  local header = { "oomguard-job 1" }
  if total and total >= 1 and total <= 1048576 then header[#header + 1] = "gpus=" .. math.floor(total) end
  if per_node and per_node >= 1 and per_node <= 1048576 then
    header[#header + 1] = "gpus_per_node=" .. math.floor(per_node)
  end
  local gpu = nil
  if gtype then gpu = conf.gres_type[gtype] or gtype end
  local part_gpu, partition = job_partition_gpu(job_desc, part_list, conf)
  gpu = gpu or part_gpu
  if gpu and is_name(gpu) then header[#header + 1] = "gpu=" .. gpu end
  if conf.default_gpu ~= "" then header[#header + 1] = "default_gpu=" .. conf.default_gpu end
  if partition and is_name(partition) then header[#header + 1] = "partition=" .. partition end
  -- The submission's environment (sbatch exports it), for the variables that
  -- change memory; the script's own exports win in the client.
  local env = job_desc.environment
  if type(env) == "table" then
    for _, name in ipairs({ "PYTORCH_CUDA_ALLOC_CONF", "NCCL_GRAPH_REGISTER" }) do
      local v = env[name]
      if type(v) == "string" and #v <= 256 and v:match("^[%w%._+:,=%-]*$") then
        header[#header + 1] = "env." .. name .. "=" .. v
      end
    end
  end
  info("%s: uid %s: checking %s (script %d bytes)", HOOK, tostring(submit_uid),
       table.concat(header, " ", 2), #script)
  header[#header + 1] = ""

  local ok, derr = check_dir(conf)
  if not ok then
    error_log("%s: %s", HOOK, derr)
    return unavailable(conf, "job file directory unusable", submit_uid)
  end
  local path, werr = write_job_file(conf, table.concat(header, "\n"), script)
  if not path then
    error_log("%s: cannot write the job file: %s", HOOK, tostring(werr))
    return unavailable(conf, "cannot write the job file", submit_uid)
  end
  local run_ok, exit, messages, errors, notes, check_id = pcall(run_client, conf, path)
  os.remove(path)
  if not run_ok then
    error_log("%s: %s", HOOK, tostring(exit))
    return unavailable(conf, "client failed", submit_uid)
  end
  for _, n in ipairs(notes) do debug_log("%s: uid %s: note: %s", HOOK, tostring(submit_uid), n) end
  local first = messages[1] or ""
  if exit == 0 then
    info("%s: uid %s: FITS; accepted: %s", HOOK, tostring(submit_uid), first)
    if conf.notify_fits == "yes" and first ~= "" then tell_user(first) end
    carry_check_id(job_desc, check_id, submit_uid)
    return slurm.SUCCESS
  elseif exit == 3 then
    info("%s: uid %s: FITS_WITH_SETTINGS; accepted: %s", HOOK, tostring(submit_uid), first)
    tell_user(table.concat(messages, "\n"))
    carry_check_id(job_desc, check_id, submit_uid)
    return slurm.SUCCESS
  elseif exit == 4 then
    info("%s: uid %s: DOES_NOT_FIT; rejected: %s", HOOK, tostring(submit_uid), first)
    tell_user(first)
    return slurm.ERROR
  elseif exit == 5 then
    -- The reason names what was not judged, e.g. each flag oomguard does
    -- not model and why.
    info("%s: uid %s: not judged; accepted: %s", HOOK, tostring(submit_uid), first)
    if conf.notify_not_judged == "yes" and first ~= "" then tell_user(first) end
    return slurm.SUCCESS
  elseif exit == 2 then
    local why = errors[1] or "invalid job"
    if conf.on_invalid == "reject" then
      info("%s: uid %s: invalid job; rejected: %s", HOOK, tostring(submit_uid), why)
      tell_user(HOOK .. ": cannot check this job's GPU memory: " .. why)
      return slurm.ERROR
    end
    info("%s: uid %s: invalid job; accepted (on_invalid=accept): %s", HOOK, tostring(submit_uid), why)
    return slurm.SUCCESS
  elseif exit == 124 or exit == 137 then
    return unavailable(conf, string.format("no answer within %d ms", conf.deadline_ms), submit_uid)
  end
  return unavailable(conf, errors[1] or ("client exit " .. tostring(exit)), submit_uid)
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local ok, rc = pcall(check_job, job_desc, part_list, submit_uid)
  if ok then return rc end
  error_log("%s: hook error: %s", HOOK, tostring(rc))
  local conf = read_config()
  return unavailable(conf, "hook error", submit_uid)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return slurm.SUCCESS
