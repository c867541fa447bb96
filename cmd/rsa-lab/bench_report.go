package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/report"
	"github.com/rsa-hpc/rsa/internal/bench/thesis"
	"github.com/rsa-hpc/rsa/internal/bench/tools"
)

// benchReportCmd is rsa-lab bench report: docs/evidence.md from the JSON
// lines of earlier runs.
func benchReportCmd() *cobra.Command {
	var (
		out, plots string
		commands   []string
	)
	cmd := &cobra.Command{
		Use:   "report FILE...",
		Short: "Write docs/evidence.md (and its plots) from the JSON lines of rsa-lab bench runs",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows []bench.Row
			for _, f := range args {
				r, err := readRows(f)
				if err != nil {
					return err
				}
				rows = append(rows, r...)
			}
			// Table 1's shapes span jobs and runs: they are derived here,
			// where every run's rows meet.
			rows = append(rows, tools.Shapes(rows)...)
			// E2's and E4's predictions meet their cells' measurements here,
			// where every run's rows meet.
			rows = thesis.AgainstE1(rows)
			rows, err := thesis.AgainstE4(cmd.Context(), rows)
			if err != nil {
				return err
			}
			sections, err := toolSections()
			if err != nil {
				return err
			}
			sections["thesis"] = report.Section{Intro: thesisIntro}
			sections["contention"] = report.Section{Intro: contentionIntro}
			sections["io500"] = report.Section{Intro: io500Intro}
			sections["model"] = report.Section{Intro: modelIntro}
			m := report.Meta{Machine: machine(), Commands: commands, Date: time.Now(), Sections: sections}
			if plots != "" {
				if err := os.MkdirAll(plots, 0o755); err != nil {
					return err
				}
				written, left := report.Plots(plots, rows)
				for _, f := range written {
					rel, err := filepath.Rel(filepath.Dir(out), f.Path)
					if err != nil {
						return err
					}
					m.Plots = append(m.Plots, report.Figure{Path: rel, Caption: f.Caption})
				}
				for _, err := range left {
					fmt.Fprintln(cmd.ErrOrStderr(), "rsa-lab bench report: plot left out:", err)
				}
			}
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			if err := report.Markdown(f, rows, m); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "docs/evidence.md", "the page to write")
	cmd.Flags().StringVar(&plots, "plots", "docs/evidence", "directory for the plots (empty: none)")
	cmd.Flags().StringArrayVar(&commands, "command", nil, "a command that produced the rows, for the page (repeatable)")
	return cmd
}

// toolTitles are the tools' names as their authors write them.
var toolTitles = map[tools.Tool]string{tools.IOR: "IOR", tools.Mdtest: "mdtest", tools.Fio: "fio"}

// thesisIntro says what the thesis' re-runs show and what they do not.
const thesisIntro = `The thesis' proof of concept joined its RSA nodes to the compute system by one 1 Gbit/s link, and the thesis says so itself: its RSA rates are that link's, and its gains came from the shared file system's cost per file under the job's own storm of creates, not from RAM. The rows here keep that shape and say where they differ:

- **T52 on ` + "`ram@1g`" + `** (the job on an emulated compute host, its RAMDISK on two emulated RSA hosts, through Slurm) is the row of RSA's design. **E1** ran it as a designed experiment at no injected delay: ten pairs a cell, each pair's two jobs back to back in a drawn order (the "first" param), each value the median with a bootstrap 95% interval, over the compute host's link rate (0.5, 1 and 2 Gbit/s, 2,048 files of 1 MiB; the RSA hosts are reached through that link, shared@1g through its own 1 Gbit/s one) and the file count at the same bytes (512 files of 4 MiB at 1 Gbit/s). Both sides make each file durable on shared@1g before it counts: the direct job fsyncs each file, and RSA's stage-out (` + "`rsa copy --durable`" + `) fsyncs each file it writes there; each row counts the fsyncs at shared@1g's brick, one a file on both sides. Where the compute link is the narrowest, both sides are its time for 2 GiB and the job holds its host about as long with RSA as without: hold ratio 0.99 (CI 0.99–0.99) at 0.5 Gbit/s, 0.98 (0.96–0.99) at 1, 1.00 (0.99–1.00) with 512 files. Each interval excludes 1: RSA holds the host 0.07–0.5 s (0.4–2.5%) longer than writing straight to shared@1g. At 2 Gbit/s shared@1g's own link is the narrowest for the direct job (18.8 s) while RSA's RAMDISK takes what the compute link and the FUSE client on two vCPUs give (14.5 s, about 1.2 Gbit/s): **hold ratio 1.30 (CI 1.26–1.36)**, a gain of bandwidth (a faster tier in front of the shared file system), not of RAM or of cost per file. (The same cell gave 1.54, CI 1.52–1.56, at 16:08 UTC the same day, 1.47, CI 1.43–1.49, earlier that day, and 1.59, CI 1.57–1.59, in an earlier session: where the client's CPU bounds RSA's job, an interval speaks for its session, not for the same machine a few hours on.) Output is verified on the shared file system later than the direct job has it in every cell, since the stage-out crosses shared@1g's link after the job: verified ratio 0.57 (0.57–0.58), 0.41 (0.39–0.41) and 0.46 (0.44–0.47) at 0.5, 1 and 2 Gbit/s, 0.45 (0.45–0.46) with 512 files (fewer files, less cost per file); released (RAMDISK gone) 0.55, 0.38, 0.43 and 0.43. The same cells earlier the same day (01:33–12:55 UTC), when the stage-out sent no fsync (syncfs(2) on a FUSE mount does not reach its server, so output counted as verified could still be in the server's page cache alone), gave 0.578, 0.410, 0.467 and 0.454, and at 15:18–16:19 UTC, with the fsyncs, 0.57, 0.42, 0.51 and 0.45: each file's fsync costs the stage-out about half a millisecond (E2's line, calibrated by T52's writer the same afternoon: 3.0–3.3 ms a file with the fsyncs against 2.6–2.7 without), less than one session differs from the next. So with a constant cost per create on the shared file system a benefit in time to safe output appears only where that cost exceeds what the link costs per file, a crossover set by the emulation's parameters, not by RSA (the delay rows). E2 (the model section) predicts these cells from micro-benchmarks.

  Each row carries the compute link's bytes, the machine's steal and softirq during each job (steal 0% throughout, softirq at most 7.2%), Slurm's own records of the hold: squeue's start and end (slurm_hold_s, whole seconds, as the command's clock says within a second or two) and Slurm's accounting (sacct_hold_s: ` + "`sacct --completion`" + `, the job-completion record, since the emulated cluster runs no slurmdbd), the same as squeue's in each of the 80 jobs (straight to shared@1g and with RSA: 36–37 s and 37 s at 0.5 Gbit/s, 18–19 s and 19–22 s at 1, 19 s and 14–16 s at 2, 18–19 s both with 512 files) and each emulated host's CPU seconds during each job (cpu_s_HOST, from a cpuacct cgroup per host): the direct job costs its compute host 6–8 s (4.7–5.1 s with 512 files); with RSA, from submission to release, the compute host 10–15 s (the most in a cell's first job, on a cold cluster), the RSA host that holds the mover and a brick 31–39 s and the other 10–14 s (6–7, 23–25 and 8–9 s with 512 files), so the two vCPUs are near full while RSA stages out. The rows carry both volumes' profiles (gluster volume profile): each job's file operations at shared@1g's brick (gl_OP_n calls, gl_OP_us mean latency at the brick), and the RSA job's at its RAMDISK's bricks over the RAMDISK's life (rd_OP_n, rd_OP_us; RSA writes them into the job's log at teardown with ` + "`[cluster] profile = true`" + `). The rows here ran on 2026-12-04 from 21:08 to 22:09 UTC (1 and 2 Gbit/s and 512 files, then 0.5 Gbit/s), E2 right after them. Each cell ran earlier that day too, and those rows are kept in docs/evidence/runs/retired, whose README says what differs: the 0.5 Gbit/s cell at 15:18–15:36 UTC with shared@1g's profile alone (hold ratio 0.99, CI 0.98–0.99; verified 0.57, 0.56–0.58), at 17:09–17:32, when the machine took about twice the CPU seconds per job (0.98, 0.97–1.01; 0.48, 0.46–0.49), and at 19:24–19:41 with both profiles and sacct (0.99, 0.98–0.99; 0.58, 0.57–0.58); the other three at 15:46–16:19, before Slurm's accounting was kept, which agree with these at 1 Gbit/s and with 512 files but not at 2 Gbit/s (hold ratio 1.54 then, 1.30 now). In the cells of 2,048 files, at shared@1g the direct job sends 2,048 creates, 16,384 writes of 128 KiB and 2,048 fsyncs (1.9–2.3 ms each); RSA's stage-out and verify send 2,048 creates, 2,048 renames (each file is written under a temporary name), 20,500–23,600 writes, 520–4,300 reads (the verify's re-read of 2 GiB, which the client's cache serves in part) and 2,048 fsyncs (2.6–3.6 ms each). At the RAMDISK's bricks the RSA job's whole life costs 2,048 creates (0.15–0.19 ms each), 16,384 writes (0.15–0.66 ms), 2,048 fsyncs (0.09–0.15 ms: the bricks are tmpfs), 16,900–20,600 reads (the stage-out's and the verify's passes over 2 GiB, the rest served by the mover's client cache) and 25,300–26,900 lookups (with 512 files of 4 MiB: 512 creates, fsyncs and renames a side, the fsyncs of 4 MiB at shared@1g 3.5–3.8 ms for the direct job and 7.2–8.4 ms for the stage-out). So a small file costs the RAMDISK's bricks a fraction of a millisecond; the 1.2–1.3 ms a small file costs a job through RSA (E2's mdtest) goes to the FUSE client and its round trips, not to RAM. Its "run" lasts until Slurm's COMPLETED, which comes after data_out.
- **T52, T51 and T54 on ` + "`ram`" + `** measure the local engine's tmpfs on the job's own host (node-local): they are not set beside the thesis' numbers.
- **T54** ran 1,024 ranks; the thesis ran 2,048.
- The delay rows' cost in the shared file system is constant per create (Gluster's delay-gen), whereas the thesis' cost came from contention among many clients; RSA's own stage-out pays the same delay, so its default stage-out cannot make output safe sooner than the job's own writes there. The contention section (E4) models the mechanism instead.`

// contentionIntro says what E4 (rsa-lab bench contention) models and how
// far it reaches.
const contentionIntro = `E4, the thesis' mechanism. The thesis' 30.9× came from GPFS's cost per create when many client nodes created in one directory at once (~0.52 s a file, the directory's token moving between nodes), against ~0.08 s a file from one writer (its rsync stage-out). Here shared@1g's brick loads a shim (` + "`internal/bench/contention`" + `) that serialises each directory's creates and makes each cost local + revoke × (1 − 1/n), n the creates in flight for the directory when it arrives, calibrated to those two numbers (local 80 ms, revoke 440 ms). A Linux client holds a directory's lock for each create it sends, so n counts client hosts: a job spread over K compute hosts contends K ways (the "mean contenders" the shim counted are in each row's params), RSA's stage-out, one mover on one RSA host, never does. Every cell is a Slurm job of -N K on the emulated cluster, each compute host behind its own 1 Gbit/s link, shared@1g behind one; hold is the first writer's start to the last host's end, every file fsync'd (the tar files too); RSA's safe runs until RSA released the job (output verified on shared@1g, RAMDISK gone).

What it cannot show: this machine has at most 9 emulated compute hosts (8 here), so n ≤ 8 and a create costs at most 0.465 s, not the 0.52 s of the thesis' 1,024 nodes; the model's form (the token elsewhere with probability 1 − 1/n, one revoke each time) is a defensible reading of GPFS, not GPFS; and the job writes 512 files of 4 MiB (the thesis' 2 GiB in a quarter of its files) to fit a run into an hour, which scales every create-bound time by a quarter against 2,048 files.

What it shows (five runs at 1, 2 and 4 hosts, three at 8; the medians and intervals below are of those, the single runs of the first part beside them). The direct job's hold grows with the hosts contending: 44.8 s from 1 host (95% CI 43.9–45.2), 154.5 s from 2 (154.2–154.7), 210 s from 4 (210–210) and 238 s from 8 (237–238; the shim counted n = 1.00, 2.00, 3.99 and 7.93–7.95), while RSA's hold stays bound by the links (18.4, 11.1, 7.2 s; 7.9 s at 8 hosts, where eight FUSE clients on two vCPUs bound it, not the links) and its stage-out creates at the uncontended rate (n = 1.00). So both thesis headlines come back from the mechanism once two or more hosts create in one directory: the hold ratio is 2.42× (CI 2.39–2.45), 13.9× (13.3–15.5) **29.1× (CI 27.7–31.1)** at 4 hosts and **30.0× (27.9–32.2, three runs)** at 8 (thesis 30.9×), and output is safe (verified and released) sooner without packing, **3.66× (CI 3.59–3.77)** at 4 hosts and **4.10× (4.04–4.14)** at 8 (thesis 4.3×), 2.40× (2.32–2.43) at 2. From one host it is not: RSA's output is safe later (0.62×, CI 0.61–0.64) and the job could as well aggregate. RSA holds the nodes less than one aggregated file (2.31×, 2.14–2.48, at 8 hosts; 2.56×, CI 2.41–2.72, at 4; 1.70×, 1.62–1.89, at 2; 1.08×, 1.06–1.10, at 1) and than node-local tmpfs plus tar (2.88×, CI 2.64–2.93, at 4 hosts; 2.55×, 2.34–2.70, at 8): that comes from the RSA hosts' links (each compute host has its own to them; shared@1g has one), not from RAM. The runs at each host count ran with the stage-out fsyncing each file on shared@1g, as the direct job does (2026-12-04: 4 hosts at 16:25–16:51 UTC, 1 and 2 hosts at 18:23–19:10, 8 hosts at 20:11–20:34; a first attempt at 8 hosts, 19:55–20:11, stopped when an aggregated-file job ended FAILED in its third run, its output gone with the cluster, so its cause is not known: E4's jobs now report their output's errors, and none failed in the second). The same runs before the fsyncs, whose stage-out sent none, gave at 4 hosts 33.8× (31.1–34.4) hold and 3.76× (3.73–3.84) safe, RSA's hold 6.2 s against 7.2 s now, and at 1 and 2 hosts 2.39× and 16.8× hold, 0.63× and 2.56× safe, RSA's hold at 2 hosts 9.2 s against 11.1 s (CI 9.9–11.7) now: the hold's interval moves between sessions as E1's 2 Gbit/s cell does (RSA's hold at 2 hosts is its two compute hosts' FUSE writes on two vCPUs), and the fsyncs cost the safe ratio 2–6%. The single runs of the first part predate the fsyncs. Two models predict every cell, each row beside the cell's measured median as its source: the two-term model ("E4 model", from iperf3's 956 Mbit/s and about 82 ms a create, both measured before the jobs of its run) and the simulator ("E4 sim", from the same, the shim's revoke, and E2's RAMDISK and stage-out at 1 Gbit/s); nothing in either is fitted to these jobs. The model section says how near they come.`

// modelIntro says what E2 (rsa-lab bench model) calibrates, from what,
// and how near its two models come to E1's and E4's cells.
const modelIntro = `E2, a model a site can use. ` + "`rsa-lab bench model`" + ` measures, on E1's emulated cluster at each of E1's compute link rates, on the day of E1's rows and three times in a drawn order: iperf3 from the compute host and from an RSA host to shared@1g's server; a Slurm job of IOR on the compute host, 16 ranks each writing a file of 32 MiB and fsyncing it at its close (-F -e), straight to shared@1g and into its RAMDISK through RSA (each side's bandwidth: IOR's write rate); mdtest's create phase the same two ways, 16 ranks making 32 files of 4 KiB each in one directory, each written and fsync'd (-C -F -w 4096 -y; each side's time per small file: one over mdtest's file creation rate); and RSA's stage-out of 64 and of 512 such files (mdtest with 4 and with 32 a rank) and of IOR's 32 MiB files, from the job's end until DONE_STAGING_OUT, through which a line is drawn (a fixed cost, a cost per file, a rate). Nothing of T52 goes in, and the tools are the standard ones, not T52's writer (an earlier session's calibration used that writer: 16 files of 32 MiB and 512 of 4 KiB written at once, a goroutine a file). Two models predict each of E1's cells from the calibration at its rate, and each row stands beside E1's measured median as its source:

- **the two-term model**: each side the longer of its files × the time of a small file and its bytes ÷ the stream's rate (the job's ranks create and write at once, so the two overlap); RSA's verified time is its hold plus the stage-out's line;
- **` + "`rsa-lab sim`" + `** (` + "`internal/sim`" + `, the simulator of whole workloads behind ` + "`rsa-lab sim`" + `), set from the same calibration by ` + "`thesis.SimConfig`" + `, one job alone on a machine of one compute node. Its I/O model runs a job's creates and then its bytes, and a stage-out's fixed cost, its files and its bytes, one after the other.

E4's cells get the same two (the contention section): the two-term model from each E4 run's own iperf3 and timed creates, the simulator from those, the shim's revoke, and E2's RAMDISK and stage-out at 1 Gbit/s.

What it shows. The calibration is the machine's: iperf3 gives 478 Mbit/s through a 0.5 Gbit/s compute link and 954–956 Mbit/s otherwise; IOR writes its 32 MiB files at the link's rate both ways (57 MiB/s at 0.5 Gbit/s, 113 at 1) except into the RAMDISK at 2 Gbit/s (225 MiB/s, where shared@1g's own link holds the direct job at 113); by mdtest's 16 ranks a small file costs 1.21–1.26 ms straight to shared@1g and 1.17–1.29 ms into the RAMDISK (T52's writer, a goroutine a file, took 1.35–1.53 and 2.12–2.33 ms in the session before: the RAMDISK's FUSE client does better with 16 creators than with 512); the stage-out, each file fsync'd on shared@1g, is 0.51–0.61 s + 2.9–3.3 ms a file + bytes at 102–104 MiB/s (its verify included). Against E1's medians (the "source" of each row; E2 ran at 22:09–22:19 UTC, right after E1's four cells, 21:08–22:09):

- the two-term model is within 15% in 11 of 12 cells and within 5% in 9 (every cell at 0.5 Gbit/s and with 512 files, the direct job at 1 and 2 Gbit/s, RSA's verified time at 1); RSA's hold at 1 Gbit/s is 5% under and its verified time at 2 Gbit/s 12% under; and it misses one: RSA's hold at 2 Gbit/s, by 37% (9.1 s predicted, 14.5 s measured). There neither term bounds alone: 2,048 files of 1 MiB through the FUSE client on two vCPUs cost their creates and their bytes one after the other (IOR's 32 MiB files ran at 1.9 Gbit/s, T52's 1 MiB files at 1.2);
- the simulator is within 15% in 11 of 12 cells (2–11% over, and RSA's verified time at 2 Gbit/s 6% under) and misses one: RSA's hold at 2 Gbit/s, 19% under (11.7 s against 14.5). It adds 2,048 × 1.2 ms of creates to the link's time, which the link hides where the link bounds the job.

Together, 22 of E1's 24 predictions fall within ±15%: as many as E2's calibration at 19:14 UTC gave against the afternoon's cells (where the simulator came within 4% of RSA's hold at 2 Gbit/s, 12.0 s, and missed its verified time at 1 Gbit/s by 17%), and 20 of 24 from the writer's calibration in the session before (which missed the simulator's three cells at 1 Gbit/s by 16–22% and the same two-term cell). This evening both models miss the same cell, RSA's hold at 2 Gbit/s: the one where the RAMDISK's client, not a link, bounds RSA's job, and the one that changed from the afternoon to the evening (12.0 s to 14.5 s) while the probes did not: IOR wrote into the RAMDISK at 225 MiB/s at 2 Gbit/s at 19:14 and at 22:09, mdtest's small files took 1.20 and 1.29 ms. Neither probe loads the FUSE client as 2,048 writers of 1 MiB do.

So where a link bounds a job, its creates overlap its bytes (the two-term model's max); where the client's CPU bounds it, they add (the simulator's sum); the calibration's two probes say which holds (the stream's rate against the small files'). Neither model, nor both, knows the machine's state from one session to the next: E1's 2 Gbit/s cell held RSA's job 12.1 s (CI 11.9–12.1) in an earlier session, 13.2 s (12.9–13.3) earlier this day, 12.0 s (12.0–12.3) in its afternoon and 14.5 s (14.0–14.9) in its evening, further apart than any interval.

E4 (the contention section): the two-term model predicts the contended direct holds within 2% at 1, 2, 4 and 8 hosts, the aggregated file within 9%, RSA's hold within 2% at 1 host but 2–19% short at 2, 26–37% at 4 and 72% at 8 (the hosts' FUSE writes on two vCPUs: eight hosts hold RSA's job 7.9 s where the links alone would take 2.2), RSA's verified time 7–19% short (its line there is uncontended creates or bytes, whichever is longer, without the verify), and tmpfs plus tar 43–65% short at 1 host, 19–44% at 2 and 6–10% at 4 and 8 (the tar reads and writes one after the other). The simulator, whose creates and bytes add, is 8–13% over for the direct job at 2, 4 and 8 hosts but 39–40% over at 1 (42 s of creates and 18 s of bytes that overlap), within 14% for RSA's hold at 1 and 2 hosts, 15–29% short at 4 and 64% at 8, and 21–32% over for RSA's verified time (the stage-out's 512 creates at 82 ms each and its 2 GiB overlap too). Nothing in either was fitted to T52 or E4. The simulator's stage-out comes from E2's line at 1 Gbit/s (IOR's and mdtest's output, each file fsync'd), as do E4's stage-outs but those of its single runs.`

// io500Intro says what E3 (rsa-lab bench io500) ran, what it found, and
// how its per-node rates stand beside the published systems'.
const io500Intro = `E3, IO500's phases on RSA's RAMDISK. Four ranks, two on each of two emulated compute hosts (a Slurm job, Open MPI over TCP), run IO500's twelve phases with the parameters its harness gives IOR and mdtest (ior-easy: a file per rank, 2 MiB transfers; ior-hard: one shared file, 47,008-byte records; mdtest-easy: empty files, a directory per rank; mdtest-hard: 3,901-byte files in one shared directory; find: the files newer than a timestamp, of that size and name) on: RSA's RAMDISK as the job's output directory (` + "`ram@1g`" + `, files: a Gluster volume over the two RSA hosts, each compute host behind its own 1 Gbit/s link), RSA's private output (` + "`ram@1g private`" + `, output=private: an ext4 image in the RAMDISK mounted on one compute host alone, that host's two ranks), RSA's input image (` + "`ram@1g image`" + `, input=image: the write phases run straight on shared@1g as a job of their own, then an RSA job with their directory as its input runs, on the read-only erofs image RSA built of it before the job started, the five phases a read-only file system allows; mdtest-hard-read is not among them, since this mdtest opens the files it reads read-write), ` + "`shared@1g`" + ` (one server behind one 1 Gbit/s link), and one compute host's own tmpfs with that host's two ranks, the per-node ceiling. A 10 s stonewall and caps per rank make it no valid IO500 submission (its scores compare only with each other; the input image, missing phases, has none), and find is a walker of rsa-lab's own from one host, not the harness' pfind. Five runs, the cells in a drawn order each run; each value is the median with a bootstrap 95% interval. "Per node vs tmpfs" is a cell's rate per compute host over the tmpfs' on one host.

What it shows. RSA's shared RAMDISK moves bytes 1.7× as fast as shared@1g (bandwidth score 0.173 GiB/s, CI 0.169–0.177, against 0.104, CI 0.104–0.105), because each compute host has its own link to the RSA hosts; that is the links, not RAM. On metadata it is no better: score 3.72 kIOPS (CI 3.71–3.79) against shared@1g's 3.84 (3.65–4.06), mdtest-hard-write 1.22 against 1.24 kIOPS, ior-hard-write 0.106 against 0.104 GiB/s. So the review's test (the RAMDISK at least 2× shared@1g on mdtest-hard-write and ior-hard-write, at no injected delay) fails: where every operation is a round trip through Gluster's FUSE client, the client and the network bound it, not the RAM behind them. Per node that is 1.8% of a local tmpfs for bandwidth (CI 1.7–1.9%; one host's link alone caps it at 2.4% here) and 0.23% for metadata (CI 0.21–0.25%). RSA's two image modes are its answer for metadata: the compute host's own kernel serves the namespace, and the RAMDISK sees only blocks. Through the input image, stats run at 425 kIOPS on mdtest-easy's files (CI 407–653) and 347 on mdtest-hard's (266–473), 83× and 84× the shared RAMDISK's, 13% and 9% of a tmpfs per node, and find at 2,475 kIOPS (70% of a tmpfs per node); its IOR reads (0.216 and 0.151 GiB/s) are the links', as with files, since IO500 reads each byte once. The private output image gives a metadata score of 336 kIOPS on one host (CI 324–345), 40% of the host's tmpfs (CI 39–46%), 180× the shared RAMDISK's per host; its bandwidth score (0.54 GiB/s) mixes writes at the link's rate (0.09–0.10 GiB/s) with reads from the host's page cache (2.3–4.8 GiB/s), so its reads show the host's cache, not the RAMDISK, and no other host sees its files.

Beside the published systems (per client node, across hardware 8–10 years apart and a VM's two cores, so an order of magnitude at most): GekkoFS's IO500 entry on 10 nodes (storage.bsc.es, 2018-11-20) gave 21.41 GiB/s and 728,680 metadata operations/s, about 2.1 GiB/s and 73k ops/s per node, relaxing POSIX and skipping the kernel; RSA's shared RAMDISK gives 0.086 GiB/s (its 1 Gbit/s link) and 1.9k ops/s per compute host here, about 40× fewer metadata operations per node, while its images give more than GekkoFS per node (the private output's 336k ops/s on one host, the input image's stats at 170–210k per host) because nothing of the namespace leaves the host. Cray DataWarp on Cori gave about 6.5 GB/s per burst-buffer node and 1.7 TB/s in all (NERSC); its private mode (a namespace per compute node) is the one the private output image follows. BeeOND publishes no create or IO500 rate. None of them publishes its local-tmpfs baseline, so the efficiencies above have no published peer. Not run: RSA hosts beyond two, and Darshan.`

// toolSections says, in the section of each tool of rsa-lab bench tools,
// where its jobs are and which seed tests none of them stands in for.
func toolSections() (map[string]report.Section, error) {
	set, err := tools.Load(builtinJobs())
	if err != nil {
		return nil, err
	}
	out := map[string]report.Section{}
	for _, t := range tools.Tools {
		s := report.Section{Intro: fmt.Sprintf("%s's jobs, from cmd/rsa-lab/jobs/%s.jobs (rsa-lab bench tools). "+
			"A row stands beside the seed's number where the job and the seed test are defined alike; "+
			"its note says where they differ, and a seed test without a row is listed under the table with why.", toolTitles[t], t)}
		for _, u := range set.Unmatched {
			if u.Tool == t {
				s.Unmatched = append(s.Unmatched, u.Case+": "+u.Why)
			}
		}
		out[string(t)] = s
	}
	return out, nil
}

// readRows reads a file of rsa-lab bench --json output.
func readRows(path string) ([]bench.Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []bench.Row
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r bench.Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: not a row of rsa-lab bench --json: %w", path, n, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, errors.New(path + ": no rows (was it written by rsa-lab bench --json?)")
	}
	return rows, nil
}

// machine describes this host for the page.
func machine() string {
	var u unix.Utsname
	_ = unix.Uname(&u)
	var si unix.Sysinfo_t
	_ = unix.Sysinfo(&si)
	return fmt.Sprintf("%s, %.0f GiB RAM, Linux %s", bench.CPUModel(),
		float64(si.Totalram)*float64(si.Unit)/(1<<30), unix.ByteSliceToString(u.Release[:]))
}
