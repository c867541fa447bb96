package config

import (
	"fmt"

	"github.com/rsa-hpc/rsa/internal/units"
)

// CheckLocalCapacity refuses RSA nodes served by this host's RAM (the
// local engine) that promise more than the host has: a RAMDISK that grows
// past the RAM left is swapped out or meets the OOM killer, and the jobs
// waiting for it would wait for RAM that never comes.
func CheckLocalCapacity(nodes []Node) error {
	var sum int64
	for _, n := range nodes {
		if n.Engine == "" || n.Engine == "local" {
			sum += n.Capacity
		}
	}
	total, err := MemTotal()
	if err != nil {
		return err
	}
	if sum > total {
		return fmt.Errorf("the RSA nodes of this host promise %s of RAMDISK, but the host has %s of RAM in all: lower nodes[].capacity (a size such as 16G, or a share such as 50%%) in the config", units.FormatSize(sum), units.FormatSize(total))
	}
	return nil
}
