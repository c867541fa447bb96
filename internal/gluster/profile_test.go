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
	got := o.profile(Cumulative)
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

// ParseProfile reads the table asked for from the CLI's answer: an
// interval's (info incremental) or the cumulative one. The testdata: a
// directory and three small files, each fsync'd, made on a volume of one
// brick (rsa-lab's shared@1g), as gluster 10.3 answered; then the next
// interval, in which nothing happened.
func TestParseProfileInterval(t *testing.T) {
	got, err := ParseProfile(readXML(t, "profile-incremental.xml"), Interval)
	if err != nil {
		t.Fatal(err)
	}
	want := []FopStat{
		{"FLUSH", 9, 39969}, {"LOOKUP", 8, 83218}, {"CREATE", 3, 226195}, {"FSYNC", 3, 761492},
		{"OPEN", 3, 88407}, {"WRITE", 3, 62550}, {"MKDIR", 1, 418424},
	}
	if !slices.Equal(got, want) {
		t.Errorf("interval\n got %v\nwant %v", got, want)
	}
	for _, tc := range []struct {
		name, file string
		table      ProfileTable
	}{
		{"an interval's answer has no cumulative table", "profile-incremental.xml", Cumulative},
		{"a cumulative answer has no interval table", "profile-info.xml", Interval},
		{"an idle interval", "profile-incremental-idle.xml", Interval},
	} {
		if got, err := ParseProfile(readXML(t, tc.file), tc.table); err != nil || len(got) != 0 {
			t.Errorf("%s: %v, %v; want none", tc.name, got, err)
		}
	}
	if _, err := ParseProfile(readXML(t, "profile-off.xml"), Interval); !errors.Is(err, ErrProfileOff) {
		t.Errorf("a profile not started: %v; want ErrProfileOff", err)
	}
	if _, err := ParseProfile([]byte("Profile on Volume shared is not started"), Interval); err == nil {
		t.Error("text, not XML: no error")
	}
}
