--[[
burst_buffer.lua: Slurm's burst_buffer/lua plugin, wired to RSA.

Every hook is one call: the rsa daemon does the work and keeps the state,
and this file only passes its verdict back. It serves Slurm 22.05 (11
hooks, data_in/data_out block until done) and 23.02+ (uid, gid and a
job_info table appended to most hooks; 24.05+ polls test_data_in and
test_data_out). Install it next to slurm.conf with burst_buffer.conf saying
Directive=RSA; see docs/slurm.md.

Most hooks run `rsa slurm-bb HOOK ...`, which prints its verdict on the
first line (SUCCESS, ERROR or BUSY) and a message after it: Lua 5.1's
popen():close() gives no exit code. job_process, paths and pools run
inside slurmctld, under its locks, at every submission: with Debian's
lua-socket installed they ask the daemon over its socket instead, without
starting a process (about 1 ms instead of 10), and fall back to
rsa slurm-bb if the socket does not answer. A job script without "#RSA"
in it is not RSA's: job_process lets it through without asking.

Only Slurm's values (job ids, numbers, paths in its state directory) and
the ARGS of 'scontrol show bbstat' are passed on, each checked against a
strict pattern first; on the command line they are quoted and come after
"--", so no user text is pasted into the shell and rsa never reads one as
an option of its own (as --config=/dev/zero would be).
--]]

local RSA = "/usr/local/bin/rsa"
local RSA_CONFIG = "/etc/rsa/rsa.toml"
local RSA_SOCKET = "/run/rsa/rsa.sock" -- the config's socket; "": always rsa

local have_socket, unix = pcall(require, "socket.unix")

-- checked returns Slurm's arguments as strings, or nil and the one that
-- does not fit the pattern. job_info (23.02+) is not needed; 22.05 leaves
-- uid and gid nil (id() below keeps their place).
local function checked(...)
	local args = {}
	for i = 1, select("#", ...) do
		local a = select(i, ...)
		if a ~= nil and type(a) ~= "table" then
			a = tostring(a)
			if not string.match(a, "^[%w/._:=-]*$") then
				return nil, a
			end
			table.insert(args, a)
		end
	end
	return args
end

-- verdict turns rsa's answer into what Slurm takes.
local function verdict(out)
	local v, msg = string.match(out, "^(%u+)\n?(.*)$")
	msg = string.gsub(msg or out, "%s+$", "")
	if v == "SUCCESS" then
		return slurm.SUCCESS, msg
	elseif v == "BUSY" then
		return slurm.SUCCESS, "BUSY"
	end
	return slurm.ERROR, msg
end

local function rsa(hook, ...)
	local args, bad = checked(...)
	if args == nil then
		return slurm.ERROR, "rsa: refusing unexpected argument " .. string.format("%q", bad)
	end
	local cmd = { RSA, "--config", RSA_CONFIG, "slurm-bb", "--", hook }
	for _, a in ipairs(args) do
		table.insert(cmd, "'" .. a .. "'") -- the pattern admits no quote
	end
	local p = io.popen(table.concat(cmd, " ") .. " 2>&1")
	if p == nil then
		return slurm.ERROR, "rsa: cannot run " .. RSA
	end
	local out = p:read("*a")
	p:close()
	return verdict(out)
end

-- JSON string: every control character, quote and backslash escaped;
-- other bytes go as they are (the daemon reads UTF-8, as from rsa).
local function json(s)
	return '"' .. string.gsub(s, '[%c"\\]', function(c)
		return string.format("\\u%04x", string.byte(c))
	end) .. '"'
end

-- ask sends one hook over the daemon's socket and returns its plain-text
-- answer (verdict line, message line, environment lines), or nil when
-- that fails for any reason: then rsa slurm-bb asks, and says why.
local function ask(hook, script, args)
	if not have_socket or RSA_SOCKET == "" or args == nil then
		return nil
	end
	local quoted = {}
	for i, a in ipairs(args) do
		quoted[i] = json(a)
	end
	local body = '{"hook":' .. json(hook) .. ',"via":"lua-socket","args":[' .. table.concat(quoted, ",") .. "]"
	if script ~= nil then
		body = body .. ',"script":' .. json(script)
	end
	body = body .. "}"
	local c = (unix.stream or unix)()
	c:settimeout(10)
	local resp
	if c:connect(RSA_SOCKET) then
		c:send("POST /v1/hooks HTTP/1.0\r\nHost: rsa\r\nAccept: text/plain\r\nContent-Type: application/json\r\n" ..
			"Content-Length: " .. #body .. "\r\n\r\n" .. body)
		resp = c:receive("*a")
	end
	c:close()
	local status, text = string.match(resp or "", "^HTTP/1%.%d (%d+) [^\r\n]*\r\n.-\r\n\r\n(.*)$")
	if status ~= "200" then
		return nil
	end
	return text
end

-- quick is a hook slurmctld waits for under its locks: over the socket,
-- else through rsa. script is a job script's path, read here and sent.
local function quick(hook, script, ...)
	local text
	if script == nil then
		text = ask(hook, nil, checked(...))
	else
		local f = io.open(script, "r")
		if f ~= nil then
			local body = f:read(4194304) or ""
			f:close()
			if not string.find(body, "#RSA", 1, true) then
				return slurm.SUCCESS, "" -- no RSA line: not RSA's job
			end
			text = ask(hook, body, checked(script, ...))
		end
	end
	if text == nil then
		return rsa(hook, script, ...)
	end
	local v, msg = string.match(text, "^(%u+)\n([^\n]*)\n")
	return verdict((v or "ERROR") .. "\n" .. (msg or text))
end

-- Slurm 22.05 does not pass uid and gid to most hooks: they go as "" and
-- keep their place, so every job hook is "HOOK JOB_ID UID GID [MORE]".
local function id(v)
	if v == nil then
		return ""
	end
	return v
end

-- paths puts the RSA_* variables into Slurm's path file, one checked line
-- each: over the socket, else through rsa.
local function paths(job_id, uid, gid, path_file)
	local text = ask("paths", nil, checked(job_id, uid, gid, path_file))
	if text == nil then
		return rsa("paths", job_id, uid, gid, path_file)
	end
	local v, msg, env = string.match(text, "^(%u+)\n([^\n]*)\n(.*)$")
	if v == "SUCCESS" and env ~= "" then
		-- Checked again at the point of writing, as rsa does: nothing
		-- that could end a line or start another variable.
		for line in string.gmatch(env, "[^\n]+") do
			if not string.match(line, "^RSA_[%u_]+=[^%c]*$") then
				return slurm.ERROR, "rsa: paths: refusing to write " .. string.format("%q", line) .. " into the job's environment"
			end
		end
		local f = io.open(path_file, "a")
		if f == nil then
			return rsa("paths", job_id, uid, gid, path_file)
		end
		f:write(env)
		f:close()
	end
	return verdict((v or "ERROR") .. "\n" .. (msg or text))
end

-- Called inside slurmctld: rsa answers from its own state, without Slurm.
function slurm_bb_job_process(job_script, uid, gid, job_info)
	return quick("job_process", job_script, id(uid), id(gid))
end

function slurm_bb_pools()
	return quick("pools")
end

function slurm_bb_paths(job_id, job_script, path_file, uid, gid, job_info)
	return paths(job_id, id(uid), id(gid), path_file)
end

-- Called in a child of slurmscriptd, with the timeouts of burst_buffer.conf.
-- The array job of an array task (23.02+: job_info), "" otherwise: 25.11
-- hands a task's setup the path of a script that only its array job has.
local function array_job(job_info)
	if type(job_info) == "table" and tonumber(job_info.array_job_id) then
		return job_info.array_job_id
	end
	return ""
end

function slurm_bb_setup(job_id, uid, gid, pool, bb_size, job_script, job_info)
	-- pool comes from the user's #RSA line: rsa reads it from the script.
	return rsa("setup", job_id, id(uid), id(gid), bb_size, job_script, array_job(job_info))
end

function slurm_bb_data_in(job_id, job_script, uid, gid, job_info)
	return rsa("data_in", job_id, id(uid), id(gid))
end

function slurm_bb_test_data_in(job_id, job_script, uid, gid, job_info)
	return rsa("test_data_in", job_id, id(uid), id(gid))
end

function slurm_bb_real_size(job_id, uid, gid, job_info)
	return rsa("real_size", job_id, id(uid), id(gid))
end

function slurm_bb_pre_run(job_id, job_script, uid, gid, job_info)
	return rsa("pre_run", job_id, id(uid), id(gid))
end

function slurm_bb_post_run(job_id, job_script, uid, gid, job_info)
	return rsa("post_run", job_id, id(uid), id(gid))
end

function slurm_bb_data_out(job_id, job_script, uid, gid, job_info)
	return rsa("data_out", job_id, id(uid), id(gid))
end

function slurm_bb_test_data_out(job_id, job_script, uid, gid, job_info)
	return rsa("test_data_out", job_id, id(uid), id(gid))
end

function slurm_bb_job_teardown(job_id, job_script, hurry, uid, gid, job_info)
	return rsa("teardown", job_id, id(uid), id(gid), hurry)
end

-- scontrol show bbstat ARGS: 22.05 passes ARGS, 23.02+ passes uid, gid, ARGS.
function slurm_bb_get_status(...)
	return rsa("get_status", ...)
end
