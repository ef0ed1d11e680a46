package budget

import "time"

// DefaultSetupCeiling is the most one piece of a run's setup may take when
// it asks for nothing of its own, in a run long enough that a quarter of
// its work time is more ([SetupCeiling]).
const DefaultSetupCeiling = 5 * time.Second

// SetupCeiling is the ceiling of one piece of a run's setup — a tool
// server's manifest, an MCP server's connect and tools/list — in a run
// whose work time (B − R, what its work may spend) is work: asked when the
// piece asks for its own (an MCP server's connect_timeout), else the
// smaller of [DefaultSetupCeiling] and a quarter of work. A work of zero
// or less (no run) gives asked, or DefaultSetupCeiling. The pieces of a
// run's setup go at once, so a mute server, or several, cost a run at
// most a quarter of its work time, never all of it (issue 24: a manifest
// fetch had a fixed 5s, and one mute tool server ate a 6s run). It is a
// ceiling: the lease made with it is cut shorter still by what the
// budget has left.
func SetupCeiling(work, asked time.Duration) time.Duration {
	switch {
	case asked > 0:
		return asked
	case work <= 0:
		return DefaultSetupCeiling
	}
	return min(DefaultSetupCeiling, work/4)
}

// SetupCeiling is [SetupCeiling] for a piece of b's setup: of b's work
// time, B − R.
func (b *Budget) SetupCeiling(asked time.Duration) time.Duration {
	return SetupCeiling(b.total-b.reserve, asked)
}
