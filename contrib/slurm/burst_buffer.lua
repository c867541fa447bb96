--[[
burst_buffer.lua: Slurm's burst_buffer/lua plugin, wired to RSA.

Every hook is one call to `rsa slurm-bb HOOK ...`; the rsa daemon does the
work and keeps the state, and this file only passes its verdict back. It
serves Slurm 22.05 (11 hooks, data_in/data_out block until done) and 23.02+
(uid, gid and a job_info table appended to most hooks; 24.05+ polls
test_data_in/test_data_out). Install it next to slurm.conf with
burst_buffer.conf saying Directive=RSA; see docs/slurm.md.

rsa prints its verdict on the first line of its output (SUCCESS, ERROR or
BUSY) and a message after it: Lua 5.1's popen():close() gives no exit code.
Only Slurm's values (job ids, numbers, paths in its state directory) and
the ARGS of 'scontrol show bbstat' reach the command line, each checked
against a strict pattern and quoted, so no user text is ever pasted into
the shell; all come after "--", so rsa never reads one as an option of its
own (as --config=/dev/zero would be).
--]]

local RSA = "/usr/local/bin/rsa"
local RSA_CONFIG = "/etc/rsa/rsa.toml"

local function rsa(hook, ...)
	local cmd = { RSA, "--config", RSA_CONFIG, "slurm-bb", "--", hook }
	for i = 1, select("#", ...) do
		local a = select(i, ...)
		-- job_info (23.02+) is not needed; 22.05 leaves uid and gid nil.
		if a ~= nil and type(a) ~= "table" then
			a = tostring(a)
			if not string.match(a, "^[%w/._:=-]*$") then
				return slurm.ERROR, "rsa: refusing unexpected argument " .. string.format("%q", a)
			end
			table.insert(cmd, "'" .. a .. "'") -- the pattern admits no quote
		end
	end
	local p = io.popen(table.concat(cmd, " ") .. " 2>&1")
	if p == nil then
		return slurm.ERROR, "rsa: cannot run " .. RSA
	end
	local out = p:read("*a")
	p:close()
	local verdict, msg = string.match(out, "^(%u+)\n?(.*)$")
	msg = string.gsub(msg or out, "%s+$", "")
	if verdict == "SUCCESS" then
		return slurm.SUCCESS, msg
	elseif verdict == "BUSY" then
		return slurm.SUCCESS, "BUSY"
	end
	return slurm.ERROR, msg
end

-- Slurm 22.05 does not pass uid and gid to most hooks: they go as "" and
-- keep their place, so every job hook is "HOOK JOB_ID UID GID [MORE]".
local function id(v)
	if v == nil then
		return ""
	end
	return v
end

-- Called inside slurmctld: rsa answers from its own state, without Slurm.
function slurm_bb_job_process(job_script, uid, gid, job_info)
	return rsa("job_process", job_script, id(uid), id(gid))
end

function slurm_bb_pools()
	return rsa("pools")
end

function slurm_bb_paths(job_id, job_script, path_file, uid, gid, job_info)
	return rsa("paths", job_id, id(uid), id(gid), path_file)
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
