package crosscheck

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeMpirun stands in for mpirun, so that the runner's tests need neither
// MPI nor a build of IOR: it writes its arguments to $FAKE_ARGS and then,
// by $FAKE_MODE, plays a finished IOR (the sample $FAKE_SAMPLE in the
// summary file), a finished mdtest (the sample on standard output), a
// failed run or a hung one.
const fakeMpirun = `#!/bin/sh
printf '%s\n' "$@" >"$FAKE_ARGS"
case $FAKE_MODE in
ior)
	for a; do
		case $a in summaryFile=*) file=${a#summaryFile=} ;; esac
	done
	cp "$FAKE_SAMPLE" "$file"
	echo "Writing output to $file"
	;;
stdout) cat "$FAKE_SAMPLE" ;;
fail)
	echo "ior: something went wrong" >&2
	exit 255
	;;
hang) exec sleep 60 ;;
esac
`

// fakeTools makes a prefix with bin/ior and bin/mdtest and puts
// fakeMpirun first in PATH. It returns the prefix and the file that will
// hold mpirun's arguments.
func fakeTools(t *testing.T, mode, sample string) (prefix, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	prefix = filepath.Join(dir, "prefix")
	bin := filepath.Join(dir, "mpibin")
	for _, d := range []string{filepath.Join(prefix, "bin"), bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(prefix, "bin", "ior"), filepath.Join(prefix, "bin", "mdtest")} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "mpirun"), []byte(fakeMpirun), 0o755); err != nil {
		t.Fatal(err)
	}
	sampleAbs, err := filepath.Abs(filepath.Join("testdata", sample))
	if err != nil {
		t.Fatal(err)
	}
	argsFile = filepath.Join(dir, "args")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_MODE", mode)
	t.Setenv("FAKE_SAMPLE", sampleAbs)
	t.Setenv("FAKE_ARGS", argsFile)
	return prefix, argsFile
}

func readArgs(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// wantArgs is how mpirun must be called: the ranks, root allowed when we
// are root, then the tool and its arguments.
func wantArgs(ranks string, tool string, args ...string) []string {
	a := []string{"--oversubscribe", "-np", ranks}
	if os.Geteuid() == 0 {
		a = append(a, "--allow-run-as-root")
	}
	return append(append(a, tool), args...)
}

func TestRunIOR(t *testing.T) {
	prefix, argsFile := fakeTools(t, "ior", "ior-fpp-wr-i3.summary.json")
	res, err := RunIOR(context.Background(), prefix, 3, "-a", "POSIX", "-F", "-w", "-r", "-i", "3")
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := res.Tests[0].Op("write"); !ok || w.MeanMiBps != 5916.8935 {
		t.Errorf(`Op("write") = %+v, %v; want the sample's mean 5916.8935 MiB/s`, w, ok)
	}
	got := readArgs(t, argsFile)
	if len(got) < 2 || !strings.HasPrefix(got[len(got)-1], "summaryFile=") {
		t.Fatalf("mpirun %q: want -O summaryFile= last", got)
	}
	summary := strings.TrimPrefix(got[len(got)-1], "summaryFile=")
	want := wantArgs("3", filepath.Join(prefix, "bin", "ior"),
		"-a", "POSIX", "-F", "-w", "-r", "-i", "3", "-O", "summaryFormat=JSON", "-O", "summaryFile="+summary)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("mpirun %q\nwant %q", got, want)
	}
	if _, err := os.Stat(filepath.Dir(summary)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the summary's directory %s is left behind (%v)", filepath.Dir(summary), err)
	}
}

// A rank 0 on another host writes the summary file there: RunIOR then
// reads standard output.
func TestRunIORStdout(t *testing.T) {
	prefix, _ := fakeTools(t, "stdout", "ior-fpp-wr-i1.json")
	res, err := RunIOR(context.Background(), prefix, 2, "-a", "POSIX")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res.Tests[0].Op("read"); !ok || r.MeanMiBps != 10308.5813 {
		t.Errorf(`Op("read") = %+v, %v; want the sample's 10308.5813 MiB/s`, r, ok)
	}
}

func TestRunMdtest(t *testing.T) {
	prefix, argsFile := fakeTools(t, "stdout", "mdtest-n100.txt")
	res, err := RunMdtest(context.Background(), prefix, 2, "-n", "100", "-d", "/dev/shm/x")
	if err != nil {
		t.Fatal(err)
	}
	if op, ok := res.Rate("File creation"); !ok || op.Mean != 388361.481 {
		t.Errorf(`Rate("File creation") = %+v, %v; want the sample's 388361.481`, op, ok)
	}
	got := readArgs(t, argsFile)
	want := wantArgs("2", filepath.Join(prefix, "bin", "mdtest"), "-n", "100", "-d", "/dev/shm/x")
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("mpirun %q\nwant %q", got, want)
	}
}

func TestRunErrors(t *testing.T) {
	t.Run("no prefix", func(t *testing.T) {
		_, err := RunIOR(context.Background(), "", 2)
		if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "scripts/build-ior.sh") {
			t.Errorf("err = %v, want ErrNotBuilt naming scripts/build-ior.sh", err)
		}
	})
	t.Run("not built", func(t *testing.T) {
		_, err := RunMdtest(context.Background(), t.TempDir(), 2)
		if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "scripts/build-ior.sh") {
			t.Errorf("err = %v, want ErrNotBuilt naming scripts/build-ior.sh", err)
		}
	})
	t.Run("no mpirun", func(t *testing.T) {
		prefix, _ := fakeTools(t, "ior", "ior-fpp-wr-i1.json")
		t.Setenv("PATH", t.TempDir())
		_, err := RunIOR(context.Background(), prefix, 2)
		if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "mpirun") {
			t.Errorf("err = %v, want ErrNotBuilt about mpirun", err)
		}
	})
	t.Run("no ranks", func(t *testing.T) {
		prefix, _ := fakeTools(t, "ior", "ior-fpp-wr-i1.json")
		if _, err := RunIOR(context.Background(), prefix, 0); err == nil {
			t.Error("0 ranks ran")
		}
	})
	t.Run("failed run", func(t *testing.T) {
		prefix, _ := fakeTools(t, "fail", "ior-fpp-wr-i1.json")
		_, err := RunIOR(context.Background(), prefix, 2)
		if err == nil || !strings.Contains(err.Error(), "exit status 255") || !strings.Contains(err.Error(), "something went wrong") {
			t.Errorf("err = %v, want the exit status and what the run said", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		prefix, _ := fakeTools(t, "hang", "mdtest-n100.txt")
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := RunMdtest(ctx, prefix, 2)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
		// SIGTERM ends the hung run at once, well before stopGrace.
		if d := time.Since(start); d > stopGrace/2 {
			t.Errorf("a cancelled run took %v to stop", d)
		}
	})
}
