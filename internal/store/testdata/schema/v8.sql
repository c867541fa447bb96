-- Schema version 8 of RSA's state database, as a daemon left it.
-- Made from: lease table (failover).
-- How: writeSchemaFixture (fixture_test.go) filled a store through
-- that code's API (fillFixture) and dumped it (dumpSQL).
-- Never edit: TestMigrateFromEveryShippedSchema opens it with every later
-- rsa (README.md).
BEGIN;
CREATE TABLE jobs (
		id          INTEGER PRIMARY KEY AUTOINCREMENT,
		name        TEXT NOT NULL DEFAULT '',
		uid         INTEGER NOT NULL,
		gid         INTEGER NOT NULL,
		user        TEXT NOT NULL,
		job_state   TEXT NOT NULL,
		rsa_state   TEXT NOT NULL,
		record      TEXT NOT NULL,            -- job.Job as JSON
		done        INTEGER NOT NULL DEFAULT 0,
		created_at  INTEGER NOT NULL,
		updated_at  INTEGER NOT NULL,
		version     INTEGER NOT NULL
	, scheduler TEXT NOT NULL DEFAULT '');
CREATE TABLE events (
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		job_id     INTEGER NOT NULL REFERENCES jobs(id),
		at         INTEGER NOT NULL,         -- unix nanoseconds
		kind       TEXT NOT NULL,
		job_state  TEXT NOT NULL,
		rsa_state  TEXT NOT NULL,
		message    TEXT NOT NULL
	);
CREATE TABLE drains (
		node   TEXT PRIMARY KEY,
		reason TEXT NOT NULL,
		by     TEXT NOT NULL,
		since  INTEGER NOT NULL
	);
CREATE TABLE "debts" (
		node   TEXT NOT NULL,
		job_id INTEGER NOT NULL,
		build  INTEGER NOT NULL,
		bytes  INTEGER NOT NULL,
		since  INTEGER NOT NULL,
		why    TEXT NOT NULL,
		PRIMARY KEY (node, job_id, build)
	);
CREATE TABLE incarnations (
		node        TEXT PRIMARY KEY,
		incarnation TEXT NOT NULL,
		seen        INTEGER NOT NULL
	);
CREATE TABLE lease (
		id     INTEGER PRIMARY KEY CHECK (id = 1),
		epoch  INTEGER NOT NULL,
		holder TEXT NOT NULL,
		since  INTEGER NOT NULL
	);
CREATE INDEX jobs_active ON jobs(done, id);
CREATE INDEX events_job ON events(job_id, id);
CREATE INDEX jobs_name ON jobs(name, scheduler, id);
INSERT INTO "jobs"("id", "name", "uid", "gid", "user", "job_state", "rsa_state", "record", "done", "created_at", "updated_at", "version", "scheduler") VALUES(1, '4101', 1001, 1001, 'alice', 'FINISHED', 'RELEASED', CAST('{"id":1,"spec":{"name":"4101","input":"/home/alice/in","output":"/home/alice/out","delay":600000000000,"capacity":4294967296,"compute_nodes":2,"pool":"rsa","input_mode":"files"},"uid":1001,"gid":1001,"groups":[1001,100],"user":"alice","home":"/home/alice","scheduler":"slurm","job_state":"FINISHED","rsa_state":"RELEASED","alloc":[{"node":"rsa1","bytes":2147483648,"incarnation":"0b7d3c8e-52a1-4f6e-9d0c-1e2f3a4b5c6d/5f0e9a1b2c3d4e5f"},{"node":"rsa2","bytes":2147483648,"incarnation":"7c1a9e55-0d3b-4e27-8f61-a2b3c4d5e6f7/0a1b2c3d4e5f6071"}],"build":2,"ramdisk":"/run/rsa/ramdisk/1/ram","hosts":["c1","c2"],"created_at":"2026-12-03T08:01:00Z","started_at":"2026-12-03T08:05:00Z","input_at":"2026-12-03T08:06:00Z","finished_at":"2026-12-03T08:42:00Z","updated_at":"2026-12-03T08:44:00Z","version":14}' AS BLOB), 1, 1796284860000000000, 1796287440000000000, 14, 'slurm');
INSERT INTO "jobs"("id", "name", "uid", "gid", "user", "job_state", "rsa_state", "record", "done", "created_at", "updated_at", "version", "scheduler") VALUES(2, '4102', 1002, 1002, 'bob', 'RUNNING', 'INUSE_IN', CAST('{"id":2,"spec":{"name":"4102","input":"/scratch/bob/dataset","delay":0,"compute_nodes":2,"input_mode":"files"},"uid":1002,"gid":1002,"groups":[1002,100],"user":"bob","home":"/home/bob","scheduler":"slurm","job_state":"RUNNING","rsa_state":"INUSE_IN","alloc":[{"node":"rsa1","bytes":3221225472,"incarnation":"0b7d3c8e-52a1-4f6e-9d0c-1e2f3a4b5c6d/5f0e9a1b2c3d4e5f"},{"node":"rsa2","bytes":3221225472,"incarnation":"7c1a9e55-0d3b-4e27-8f61-a2b3c4d5e6f7/0a1b2c3d4e5f6071"}],"build":1,"ramdisk":"/run/rsa/ramdisk/2/ram","hosts":["c3","c4"],"capacity_wait":300000000000,"created_at":"2026-12-03T08:07:00Z","started_at":"2026-12-03T08:11:00Z","input_at":"2026-12-03T08:12:00Z","updated_at":"2026-12-03T08:12:00Z","version":6}' AS BLOB), 0, 1796285220000000000, 1796285520000000000, 6, 'slurm');
INSERT INTO "jobs"("id", "name", "uid", "gid", "user", "job_state", "rsa_state", "record", "done", "created_at", "updated_at", "version", "scheduler") VALUES(3, '', 1003, 1003, 'carol', 'ONDECK', 'INITIAL', CAST('{"id":3,"spec":{"input":"/home/carol/in","output":"/home/carol/out","delay":3600000000000,"capacity":1073741824,"sized":"1.0G: the input''s 512M + output_headroom 512M","compute_nodes":1,"input_mode":"files"},"uid":1003,"gid":1003,"groups":[1003,100],"user":"carol","home":"/home/carol","job_state":"ONDECK","rsa_state":"INITIAL","unstarted_expiry":3600000000000,"created_at":"2026-12-03T08:13:00Z","updated_at":"2026-12-03T08:13:00Z","version":1}' AS BLOB), 0, 1796285580000000000, 1796285580000000000, 1, '');
INSERT INTO "jobs"("id", "name", "uid", "gid", "user", "job_state", "rsa_state", "record", "done", "created_at", "updated_at", "version", "scheduler") VALUES(4, '4104', 1001, 1001, 'alice', 'ONDECK', 'READY', CAST('{"id":4,"spec":{"name":"4104","input":"/home/alice/in2","output":"/home/alice/out2","delay":300000000000,"compute_nodes":1,"input_mode":"files"},"uid":1001,"gid":1001,"groups":[1001,100],"user":"alice","home":"/home/alice","scheduler":"slurm","job_state":"ONDECK","rsa_state":"READY","alloc":[{"node":"rsa3","bytes":1073741824,"incarnation":"e4f5a6b7-c8d9-4a0b-9c1d-2e3f4a5b6c7d/8899aabbccddeeff"}],"build":1,"ramdisk":"/run/rsa/ramdisk/4/ram","created_at":"2026-12-03T08:14:00Z","updated_at":"2026-12-03T08:17:00Z","version":4}' AS BLOB), 0, 1796285640000000000, 1796285820000000000, 4, 'slurm');
INSERT INTO "jobs"("id", "name", "uid", "gid", "user", "job_state", "rsa_state", "record", "done", "created_at", "updated_at", "version", "scheduler") VALUES(5, '', 1003, 1003, 'carol', 'FINISHED', 'STAGE_OUT_FAILED', CAST('{"id":5,"spec":{"output":"/home/carol/results","delay":0,"capacity":2147483648,"compute_nodes":1},"uid":1003,"gid":1003,"groups":[1003,100],"user":"carol","home":"/home/carol","job_state":"FINISHED","rsa_state":"STAGE_OUT_FAILED","alloc":[{"node":"rsa3","bytes":2147483648,"incarnation":"e4f5a6b7-c8d9-4a0b-9c1d-2e3f4a5b6c7d/8899aabbccddeeff"}],"build":1,"ramdisk":"/run/rsa/ramdisk/5/ram","error":"copying results/run.log: no space left on device","unstarted_expiry":3600000000000,"created_at":"2026-12-03T08:18:00Z","started_at":"2026-12-03T08:21:00Z","finished_at":"2026-12-03T08:23:00Z","updated_at":"2026-12-03T08:24:00Z","version":7}' AS BLOB), 0, 1796285880000000000, 1796286240000000000, 7, '');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(1, 1, 1796284860000000000, 'submit', 'ONDECK', 'INITIAL', 'submitted by alice through slurm');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(2, 1, 1796284920000000000, 'assigned', 'ONDECK', 'ASSIGNED', 'rsa-state INITIAL -> ASSIGNED: RSA nodes assigned');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(3, 1, 1796284920000000000, 'assigned', 'ONDECK', 'BOOTING', 'rsa-state ASSIGNED -> BOOTING: building the RAMDISK');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(4, 1, 1796284980000000000, 'booted', 'ONDECK', 'BOOTED', 'rsa-state BOOTING -> BOOTED: RAMDISK built');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(5, 1, 1796284980000000000, 'booted', 'ONDECK', 'STAGING_IN', 'rsa-state BOOTED -> STAGING_IN: staging input in');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(6, 1, 1796285040000000000, 'staged-in', 'ONDECK', 'READY', 'rsa-state STAGING_IN -> READY: input staged in');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(7, 1, 1796285100000000000, 'started', 'RUNNING', 'READY', 'job-state ONDECK -> RUNNING: job started');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(8, 1, 1796285100000000000, 'started', 'RUNNING', 'MOUNTING_IN', 'rsa-state READY -> MOUNTING_IN: mounting at the input path');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(9, 1, 1796285160000000000, 'mounted', 'RUNNING', 'INUSE_IN', 'rsa-state MOUNTING_IN -> INUSE_IN: RAMDISK mounted at the input path');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(10, 2, 1796285220000000000, 'submit', 'ONDECK', 'INITIAL', 'submitted by bob through slurm');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(11, 2, 1796285280000000000, 'assigned', 'ONDECK', 'ASSIGNED', 'rsa-state INITIAL -> ASSIGNED: RSA nodes assigned');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(12, 2, 1796285280000000000, 'assigned', 'ONDECK', 'BOOTING', 'rsa-state ASSIGNED -> BOOTING: building the RAMDISK');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(13, 2, 1796285340000000000, 'booted', 'ONDECK', 'BOOTED', 'rsa-state BOOTING -> BOOTED: RAMDISK built');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(14, 2, 1796285340000000000, 'booted', 'ONDECK', 'STAGING_IN', 'rsa-state BOOTED -> STAGING_IN: staging input in');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(15, 2, 1796285400000000000, 'staged-in', 'ONDECK', 'READY', 'rsa-state STAGING_IN -> READY: input staged in');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(16, 2, 1796285460000000000, 'started', 'RUNNING', 'READY', 'job-state ONDECK -> RUNNING: job started');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(17, 2, 1796285460000000000, 'started', 'RUNNING', 'MOUNTING_IN', 'rsa-state READY -> MOUNTING_IN: mounting at the input path');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(18, 2, 1796285520000000000, 'mounted', 'RUNNING', 'INUSE_IN', 'rsa-state MOUNTING_IN -> INUSE_IN: RAMDISK mounted at the input path');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(19, 3, 1796285580000000000, 'submit', 'ONDECK', 'INITIAL', 'submitted by carol');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(20, 4, 1796285640000000000, 'submit', 'ONDECK', 'INITIAL', 'submitted by alice through slurm');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(21, 4, 1796285700000000000, 'assigned', 'ONDECK', 'ASSIGNED', 'rsa-state INITIAL -> ASSIGNED: RSA nodes assigned');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(22, 4, 1796285700000000000, 'assigned', 'ONDECK', 'BOOTING', 'rsa-state ASSIGNED -> BOOTING: building the RAMDISK');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(23, 4, 1796285760000000000, 'booted', 'ONDECK', 'BOOTED', 'rsa-state BOOTING -> BOOTED: RAMDISK built');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(24, 4, 1796285760000000000, 'booted', 'ONDECK', 'STAGING_IN', 'rsa-state BOOTED -> STAGING_IN: staging input in');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(25, 4, 1796285820000000000, 'staged-in', 'ONDECK', 'READY', 'rsa-state STAGING_IN -> READY: input staged in');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(26, 5, 1796285880000000000, 'submit', 'ONDECK', 'INITIAL', 'submitted by carol');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(27, 5, 1796285940000000000, 'assigned', 'ONDECK', 'ASSIGNED', 'rsa-state INITIAL -> ASSIGNED: RSA nodes assigned');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(28, 5, 1796285940000000000, 'assigned', 'ONDECK', 'BOOTING', 'rsa-state ASSIGNED -> BOOTING: building the RAMDISK');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(29, 5, 1796286000000000000, 'booted', 'ONDECK', 'BOOTED', 'rsa-state BOOTING -> BOOTED: RAMDISK built');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(30, 5, 1796286000000000000, 'booted', 'ONDECK', 'READY', 'rsa-state BOOTED -> READY: ready for output');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(31, 5, 1796286060000000000, 'started', 'RUNNING', 'READY', 'job-state ONDECK -> RUNNING: job started');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(32, 5, 1796286060000000000, 'started', 'RUNNING', 'MOUNTING', 'rsa-state READY -> MOUNTING: mounting at the output path');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(33, 5, 1796286120000000000, 'mounted', 'RUNNING', 'INUSE_OUT', 'rsa-state MOUNTING -> INUSE_OUT: RAMDISK mounted at the output path');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(34, 5, 1796286180000000000, 'finished', 'FINISHED', 'INUSE_OUT', 'job-state RUNNING -> FINISHED: job finished');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(35, 5, 1796286180000000000, 'finished', 'FINISHED', 'STAGING_OUT', 'rsa-state INUSE_OUT -> STAGING_OUT: staging output out');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(36, 5, 1796286240000000000, 'stage-out-failed', 'FINISHED', 'STAGE_OUT_FAILED', 'rsa-state STAGING_OUT -> STAGE_OUT_FAILED: stage-out failed; output kept in RAM (copying results/run.log: no space left on device)');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(40, 1, 1796287020000000000, 'tick', 'RUNNING', 'UNMOUNT_NEEDED', 'rsa-state INUSE_IN -> UNMOUNT_NEEDED: delay over: switching from input to output');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(41, 1, 1796287020000000000, 'tick', 'RUNNING', 'UNMOUNTING', 'rsa-state UNMOUNT_NEEDED -> UNMOUNTING: unmounting from the input path');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(42, 1, 1796287080000000000, 'unmounted', 'RUNNING', 'UNMOUNTED', 'rsa-state UNMOUNTING -> UNMOUNTED: RAMDISK unmounted');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(43, 1, 1796287080000000000, 'unmounted', 'RUNNING', 'TEARDOWN', 'rsa-state UNMOUNTED -> TEARDOWN: tearing down to rebuild for output');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(44, 1, 1796287140000000000, 'destroyed', 'RUNNING', 'DESTROYED', 'rsa-state TEARDOWN -> DESTROYED: RAMDISK destroyed');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(45, 1, 1796287140000000000, 'destroyed', 'RUNNING', 'BOOTING', 'rsa-state DESTROYED -> BOOTING: building the RAMDISK for output');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(46, 1, 1796287200000000000, 'booted', 'RUNNING', 'BOOTED', 'rsa-state BOOTING -> BOOTED: RAMDISK built');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(47, 1, 1796287200000000000, 'booted', 'RUNNING', 'MOUNTING', 'rsa-state BOOTED -> MOUNTING: mounting at the output path');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(48, 1, 1796287260000000000, 'mounted', 'RUNNING', 'INUSE_OUT', 'rsa-state MOUNTING -> INUSE_OUT: RAMDISK mounted at the output path');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(49, 1, 1796287320000000000, 'finished', 'FINISHED', 'INUSE_OUT', 'job-state RUNNING -> FINISHED: job finished');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(50, 1, 1796287320000000000, 'finished', 'FINISHED', 'STAGING_OUT', 'rsa-state INUSE_OUT -> STAGING_OUT: staging output out');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(51, 1, 1796287380000000000, 'staged-out', 'FINISHED', 'DONE_STAGING_OUT', 'rsa-state STAGING_OUT -> DONE_STAGING_OUT: output staged out and verified');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(52, 1, 1796287380000000000, 'staged-out', 'FINISHED', 'TEARDOWN', 'rsa-state DONE_STAGING_OUT -> TEARDOWN: tearing down');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(53, 1, 1796287440000000000, 'destroyed', 'FINISHED', 'DESTROYED', 'rsa-state TEARDOWN -> DESTROYED: RAMDISK destroyed');
INSERT INTO "events"("id", "job_id", "at", "kind", "job_state", "rsa_state", "message") VALUES(54, 1, 1796287440000000000, 'destroyed', 'FINISHED', 'RELEASED', 'rsa-state DESTROYED -> RELEASED: RSA nodes released');
INSERT INTO "drains"("node", "reason", "by", "since") VALUES('rsa4', 'DIMM errors in memtest', 'root', 1796287440000000000);
INSERT INTO "debts"("node", "job_id", "build", "bytes", "since", "why") VALUES('rsa2', 1, 2, 2147483648, 1796287440000000000, 'agent rsa2: Post "https://rsa2:7447/v1/destroy": dial tcp 10.0.0.12:7447: connect: no route to host');
INSERT INTO "incarnations"("node", "incarnation", "seen") VALUES('rsa1', '0b7d3c8e-52a1-4f6e-9d0c-1e2f3a4b5c6d/5f0e9a1b2c3d4e5f', 1796287440000000000);
INSERT INTO "incarnations"("node", "incarnation", "seen") VALUES('rsa2', '7c1a9e55-0d3b-4e27-8f61-a2b3c4d5e6f7/0a1b2c3d4e5f6071', 1796287440000000000);
INSERT INTO "incarnations"("node", "incarnation", "seen") VALUES('rsa3', 'e4f5a6b7-c8d9-4a0b-9c1d-2e3f4a5b6c7d/8899aabbccddeeff', 1796287440000000000);
INSERT INTO "lease"("id", "epoch", "holder", "since") VALUES(1, 1, 'ctl1', 1796287440000000000);
DELETE FROM sqlite_sequence;
INSERT INTO "sqlite_sequence"("name", "seq") VALUES('jobs', 6);
INSERT INTO "sqlite_sequence"("name", "seq") VALUES('events', 54);
PRAGMA user_version = 8;
COMMIT;
