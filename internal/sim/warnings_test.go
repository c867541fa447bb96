package sim

import "testing"

// Warnings names the mover slower than the file system and today's
// speeds beside the thesis' rsync; the thesis testbed and a consistent
// modern machine get none.
func TestWarnings(t *testing.T) {
	modern := func(c *Config) {
		c.FS.Bandwidth, c.FS.NodeBandwidth, c.RSA.Link = 20<<30, 12.5e9, 12.5e9
	}
	cases := []struct {
		name string
		edit func(*Config)
		want []string // each a warning's part, in order
	}{
		{"the defaults", func(*Config) {}, nil},
		{"the thesis testbed with a fast mover", func(c *Config) { c.RSA.StageInRate, c.RSA.StageOutRate = 1<<30, 1<<30 }, nil},
		{"modern links, the thesis' rsync", modern, []string{"--stage-in-rate", "--stage-out-rate", "--fs-bandwidth 20.0 GiB/s is today's speed"}},
		{"modern, a mover measured fast", func(c *Config) {
			modern(c)
			c.RSA.StageInRate, c.RSA.StageOutRate = 15e9, 15e9
		}, nil},
		{"modern, a slow mover measured", func(c *Config) {
			modern(c)
			c.RSA.StageInRate, c.RSA.StageOutRate = 15e9, 2e9
		}, []string{"--stage-out-rate"}},
		{"only the links modern", func(c *Config) { c.RSA.Link = 12.5e9 }, []string{"--rsa-link"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.edit(&c)
			checkWarnings(t, c.Warnings(), tc.want)
		})
	}
}
