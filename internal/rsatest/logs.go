package rsatest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// KeepLogs copies the directory logs to /tmp/PREFIX-UNIXTIME, where it
// stays for a closer look after its own directory is removed, and returns
// that path.
func KeepLogs(logs, prefix string) (string, error) {
	keep := fmt.Sprintf("/tmp/%s-%d", prefix, time.Now().Unix())
	if out, err := exec.Command("cp", "-a", logs, keep).CombinedOutput(); err != nil {
		return keep, fmt.Errorf("keeping %s: %w %s", logs, err, out)
	}
	return keep, nil
}

// Tail is the last n bytes of the file path (all of it if shorter;
// nothing if it cannot be read).
func Tail(path string, n int) []byte {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return b
}

// Loop is a bound loop device.
type Loop struct {
	Device  string // "loop3"
	Backing string // its backing file, as the kernel names it (sysfs backing_file)
}

// Loops lists the loop devices bound now.
func Loops() []Loop {
	var loops []Loop
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			loops = append(loops, Loop{Device: filepath.Base(filepath.Dir(filepath.Dir(f))), Backing: strings.TrimSpace(string(b))})
		}
	}
	return loops
}

// LoopsBelow lists the loop devices whose backing file is below dir, as
// "loop3 on FILE".
func LoopsBelow(dir string) []string {
	var on []string
	for _, l := range Loops() {
		if strings.HasPrefix(l.Backing, dir+"/") {
			on = append(on, l.Device+" on "+l.Backing)
		}
	}
	return on
}
