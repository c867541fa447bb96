package gluster

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// A profile's answer sums its bricks, each operation's mean weighted by
// its calls, the most called first; a profile that is off is
// ErrProfileOff. The testdata: a file created, written and read on a
// volume of two bricks (TestAgentGluster's), as gluster 10.3 answered.
func TestParseProfile(t *testing.T) {
	o, err := parse(nil, readXML(t, "profile-info.xml"))
	if err != nil {
		t.Fatal(err)
	}
	got := o.profile()
	want := []FopStat{
		{"LOOKUP", 20, 66827}, {"INODELK", 4, 60743}, {"SETATTR", 4, 88489}, {"SETXATTR", 4, 49904}, {"STATFS", 4, 66226},
		{"FLUSH", 3, 31477}, {"CREATE", 1, 84620}, {"OPEN", 1, 50627}, {"READ", 1, 49939}, {"WRITE", 1, 91482},
	}
	if !slices.Equal(got, want) {
		t.Errorf("profile\n got %v\nwant %v", got, want)
	}
	if m := got[slices.IndexFunc(got, func(f FopStat) bool { return f.Op == "CREATE" })].Mean; m != 84620*time.Nanosecond {
		t.Errorf("CREATE's mean %v; want nanoseconds read as such (84.62µs)", m)
	}
	_, err = parse([]string{"volume", "profile", "rsa-job-9", "info", "cumulative"}, readXML(t, "profile-off.xml"))
	if err == nil || !errors.Is(profileError(err), ErrProfileOff) {
		t.Errorf("a profile not started: %v; want ErrProfileOff", profileError(err))
	}
	for _, f := range []string{"info-absent.xml", "set-badkey.xml"} {
		_, err := parse(nil, readXML(t, f))
		if errors.Is(profileError(err), ErrProfileOff) {
			t.Errorf("%s: %v taken for a profile that is off", f, err)
		}
	}
}
