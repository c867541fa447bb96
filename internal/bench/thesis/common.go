package thesis

import "strings"

// joinNote appends part to a row's note, "; " between.
func joinNote(note string, part ...string) string {
	var parts []string
	if note != "" {
		parts = append(parts, note)
	}
	for _, p := range part {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "; ")
}
