package metabench

import "slices"

// table1 returns GUPFS Table 1's aggregate rate (ops/s; GFS 5.1, eight
// dual Pentium IV clients, 20,000 files, 16 KB appends) for phase p run
// with nproc processes. The table's N is the process count, one process a
// client node: at N = 1 process 0 set up and took part, above it only set
// up, so N = 2 has one participant. The report never used -0, so a run
// with -0 and more than one process has no counterpart.
func table1(p Phase, nproc int, proc0 bool) (float64, bool) {
	if proc0 && nproc > 1 {
		return 0, false
	}
	columns := []int{1, 2, 3, 4, 6, 8}
	rows := map[Phase][6]float64{
		CreateA: {641, 529, 566, 489, 498, 500},
		CreateB: {614, 548, 988, 1295, 1362, 1562},
		CreateC: {598, 593, 76, 121, 102, 92},
		StatA:   {18019, 255, 398, 455, 472, 397},
		StatB:   {76312, 228, 406, 451, 507, 439},
		UtimeA:  {2549, 137, 217, 245, 243, 221},
		UtimeB:  {1822, 143, 208, 250, 256, 216},
		AppendA: {1232, 143, 214, 274, 263, 227},
		AppendB: {1469, 143, 215, 245, 250, 216},
		Untar:   {345, 681, 999, 1108, 1264, 1415},
	}
	col := slices.Index(columns, nproc)
	row, ok := rows[p]
	if col < 0 || !ok {
		return 0, false
	}
	return row[col], true
}
