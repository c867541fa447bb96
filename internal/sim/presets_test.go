package sim

import "testing"

// Every preset is a consistent machine: none draws a warning alone. A
// preset of one era with a parameter of the other does.
func TestPresetWarnings(t *testing.T) {
	for _, p := range Presets() {
		if w := p.Config().Warnings(); len(w) > 0 {
			t.Errorf("preset %s alone: warnings %q", p.Name, w)
		}
	}
	thesisRsync := Defaults().RSA.StageInRate
	cases := []struct {
		name   string
		preset string
		edit   func(*Config)
		want   []string // each a warning's part, in order
	}{
		{"modern with the thesis' rsync", "modern", func(c *Config) {
			// As the flags print it: 39.38MiB/s, rounded.
			c.RSA.StageInRate, c.RSA.StageOutRate = 39.38*mib, 39.38*mib
		}, []string{"--stage-in-rate 39.4 MiB/s", "--stage-out-rate 39.4 MiB/s", "--fs-bandwidth 20.0 GiB/s is today's speed"}},
		{"modern without a per-client limit", "modern", func(c *Config) { c.FS.NodeBandwidth = 0 },
			[]string{"--stage-in-rate 3072.0 MiB/s) copies at less than half the rate the file system serves one client (20.0 GiB/s)", "--stage-out-rate"}},
		{"thesis with a modern file system", "thesis", func(c *Config) { c.FS.Bandwidth, c.FS.NodeBandwidth = 20*gib, 100e9/8 },
			[]string{"--stage-in-rate", "--stage-out-rate", "--fs-bandwidth 20.0 GiB/s is today's speed"}},
		{"testbed with modern links", "testbed", func(c *Config) { c.RSA.Link = 100e9 / 8 }, []string{"--rsa-link 11.6 GiB/s is today's speed"}},
		{"modern with more RAM: same era", "modern", func(c *Config) { c.RSA.RAM *= 2 }, nil},
		{"measured mover on a modern file system", "measured", func(c *Config) { c.FS.Bandwidth, c.FS.NodeBandwidth = 20*gib, 5*gib },
			[]string{"--stage-in-rate 1402.7 MiB/s", "--stage-out-rate 514.6 MiB/s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PresetNamed(tc.preset)
			if err != nil {
				t.Fatal(err)
			}
			c := p.Config()
			tc.edit(&c)
			checkWarnings(t, c.Warnings(), tc.want)
		})
	}
	if thesisRsync != Defaults().RSA.StageInRate {
		t.Error("a preset changed the defaults")
	}
}

// The modern preset is the 2025 site the brief describes; the thesis
// preset is the defaults; the older --testbed names still give their
// presets.
func TestPresets(t *testing.T) {
	m := Modern()
	checks := []struct {
		what   string
		ok     bool
		detail any
	}{
		{"file system 10-40 GiB/s", m.FS.Bandwidth >= 10*gib && m.FS.Bandwidth <= 40*gib, m.FS.Bandwidth},
		{"a few GiB/s per client", m.FS.NodeBandwidth >= 1*gib && m.FS.NodeBandwidth <= 10*gib, m.FS.NodeBandwidth},
		{"100 Gbit/s RSA links", m.RSA.Link == 100e9/8, m.RSA.Link},
		{"1-2 TiB of RAM per RSA node", m.RSA.RAM >= tib && m.RSA.RAM <= 2*tib, m.RSA.RAM},
		{"a mover of GiB/s", m.RSA.StageInRate >= gib && m.RSA.StageOutRate >= gib, m.RSA.StageInRate},
		{"no shared uplink", m.RSA.Uplink == 0, m.RSA.Uplink},
		{"the thesis' workload", m.Workload == Defaults().Workload, m.Workload},
		{"RSA's policy defaults", m.RSA.Proportion == Defaults().RSA.Proportion && m.RSA.Delay == Defaults().RSA.Delay &&
			m.RSA.StageInLead == Defaults().RSA.StageInLead, m.RSA},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("modern: want %s, got %v", c.what, c.detail)
		}
	}
	if err := m.check(); err != nil {
		t.Errorf("modern: %v", err)
	}
	ps := Presets()
	if ps[0].Name != "thesis" || ps[0].Config().FS != Defaults().FS || ps[0].Config().RSA != Defaults().RSA {
		t.Errorf("the first preset is %s, want thesis, the defaults", ps[0].Name)
	}
	for old, preset := range map[string]string{"thesis": "testbed", "measured": "measured"} {
		tb, err := Testbed(old)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PresetNamed(preset)
		if err != nil {
			t.Fatal(err)
		}
		if c := p.Config(); c.RSA != tb.RSA || c.FS != tb.FS || !p.Calibrates {
			t.Errorf("--testbed %s is not preset %s", old, preset)
		}
	}
	if _, err := PresetNamed("bluegene"); err == nil || err.Error() != `preset "bluegene": want one of thesis, testbed, measured, modern` {
		t.Errorf("unknown preset: %v", err)
	}
}
