package sim

import (
	"math"
	"testing"
)

// The thesis test bed reproduces Table 5.2: 2,048 file-per-process writes
// take 1,109.86 s on GPFS and 35.87 s to RSA (≈ 30×), and rsync stages
// them out in 224 s. The measured test bed keeps the table's writes but
// stages out with rsa copy's rates: no per-file round trips, so faster.
func TestCalibration(t *testing.T) {
	near := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }
	tests := []struct {
		testbed         string
		fs, rsa, out    float64
		minRatio, maxRt float64
	}{
		{"thesis", 1109.86, 35.87, 224, 29, 32},
		{"measured", 1109.86, 35.87, 0, 29, 32},
	}
	for _, tt := range tests {
		t.Run(tt.testbed, func(t *testing.T) {
			cfg, err := Testbed(tt.testbed)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Calibrate(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !near(c.FSOutput, tt.fs, 0.01) || !near(c.RSAOutput, tt.rsa, 0.01) {
				t.Errorf("output %.2f s to the shared FS, %.2f s to RSA; want %.2f, %.2f (±1 %%)", c.FSOutput, c.RSAOutput, tt.fs, tt.rsa)
			}
			if c.Speedup < tt.minRatio || c.Speedup > tt.maxRt {
				t.Errorf("RSA %.1fx faster, want %g-%gx", c.Speedup, tt.minRatio, tt.maxRt)
			}
			switch {
			case tt.out > 0 && !near(c.StageOut, tt.out, 0.01):
				t.Errorf("stage-out %.1f s, want %.0f (±1 %%)", c.StageOut, tt.out)
			case tt.out == 0 && c.StageOut >= thesisStageOut/2:
				t.Errorf("stage-out with rsa copy %.1f s, want well under rsync's %.0f s", c.StageOut, thesisStageOut)
			}
		})
	}
	if _, err := Testbed("bluegene"); err == nil {
		t.Error("an unknown test bed was accepted")
	}
}
