package api

import (
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/units"
)

// NewJobView is the view of j with what its states mean (Phase, InRAM,
// Terminal); the daemon adds what it knows beyond the record.
func NewJobView(j job.Job) *JobView {
	return &JobView{Job: j, Phase: lifecycle.PhaseOf(j.RSA), InRAM: lifecycle.InRAM(j.RSA), Terminal: j.Machine().Done()}
}

// ProgressLine says in one line what a job waits for or how its staging
// goes: phase, files and bytes (of the total when known), rate and ETA. It
// is "" when there is nothing to say.
func (v *JobView) ProgressLine() string {
	if v.Waiting != "" {
		return v.Waiting
	}
	p := v.Progress
	if p == nil || !lifecycle.Staging(v.RSA) {
		return ""
	}
	s := fmt.Sprintf("%s %d", p.Phase, p.Files)
	if p.TotalFiles > 0 {
		s += fmt.Sprintf("/%d", p.TotalFiles)
	}
	s += " files " + units.FormatSize(p.Bytes)
	if p.TotalBytes > 0 {
		s += "/" + units.FormatSize(p.TotalBytes)
	}
	if r := p.Rate(); r > 0 {
		s += " " + units.FormatSize(int64(r)) + "/s"
	}
	if eta := p.ETA(); eta > 0 {
		s += " ETA " + eta.Round(time.Second).String()
	}
	return s
}
