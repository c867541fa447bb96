// Package sweep is rsa-lab bench sweep: the queue-depth × block-size sweep of
// the Texas Memory RAM-SAN report (TMS, "Raw I/O Test Results"), re-run on
// two block devices it makes itself.
//
// TMS wrote 1 GB to a raw AIX logical volume with dd and read it back,
// for every AIX queue_depth from 1 to 16 and every dd buffer from 1 KB to
// 32 MB, doubling. Its point was the shape: the RAM-SAN reached its top
// rate at queue depth 1 with small buffers, spinning disks (a Sun T3) only
// with deep queues and large buffers.
//
// Here the RAM-SAN is a loop device over a file in a tmpfs (ram-dev; this
// kernel has no brd) and the disk a loop device over a file on ext4 with
// direct I/O, so that no page cache sits between it and the disk
// (disk-dev). Setup makes both and its cleanup removes them.
//
// For each point, qd goroutines, each on an OS thread of its own, take the
// next bs-sized chunk of the device from a shared offset and write it with
// O_DIRECT, so that qd requests are in flight at once as queue_depth
// allowed; then they read the device back the same way. fio, run for the
// same point with libaio at iodepth qd, is the cross-check. Run returns the
// points; Grids arranges them as bs × qd tables and Rows as bench rows
// beside TMS's numbers.
package sweep
