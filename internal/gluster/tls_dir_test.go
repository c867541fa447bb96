package gluster

import "testing"

func TestGlusterCertPath(t *testing.T) {
	for _, c := range []struct {
		bin  string
		want string
	}{
		{"\x00x\x00/etc/ssl/dhparam.pem\x00/etc/ssl/glusterfs.pem\x00/etc/ssl/glusterfs.key\x00", "/etc/ssl"},
		{"junk/usr/lib/ssl/glusterfs.pem\x00", "/usr/lib/ssl"},
		{"/etc/ssl/glusterfs.pemx\x00", ""},
	} {
		got := ""
		if m := glusterCertPath.FindSubmatch([]byte(c.bin)); m != nil {
			got = string(m[1])
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.bin, got, c.want)
		}
	}
}
