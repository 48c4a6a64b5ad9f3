package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/analyzer"
)

// TestSpawn traces a job that starts more processes (testdata/apps/
// spawn.c: 2 parents spawn 2 children) under Open MPI (Debian's MPICH 4.0
// fails MPI_Comm_spawn here untraced too: "Error in spawn call"). The children's
// MPI_COMM_WORLD numbers them 0 and 1 again in the parents' directory:
// they wrote spawn.0.trc and spawn.1.trc over the parents' (a corrupt
// trace, and dtrun blamed a rank killed on another node). Each world now
// has traces of its own, the children's named after their run id, each
// analysed as a task; the program's output is unchanged. (The messages
// between the worlds have no partner in either's traces.)
func TestSpawn(t *testing.T) {
	for _, m := range impls[:1] {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "spawn")
			out := trace(t, m, dir, nil, 2, exe)
			if !strings.Contains(out, "spawn: children's ranks sum to 1") {
				t.Errorf("the program's output is missing:\n%s", out)
			}
			if strings.Contains(out, "warning") || strings.Contains(out, "corrupt") {
				t.Errorf("dtrun warns:\n%s", out)
			}
			tasks := analyzer.Tasks(dir)
			var spawned string
			for _, tk := range tasks {
				if strings.HasPrefix(tk.Name, "spawn.spawn-") {
					spawned = tk.Name
				}
			}
			if len(tasks) != 2 || tasks[0].Name != "spawn" || tasks[0].Files != 2 || spawned == "" || tasks[1].Files != 2 {
				t.Fatalf("tasks %+v, want spawn and spawn.spawn-<id>, 2 traces each", tasks)
			}
			if !strings.Contains(out, "analyse with: dtpa "+spawned) {
				t.Errorf("dtrun does not name the spawned world's task %s:\n%s", spawned, out)
			}
			// The parents' receives from the children have no partner in
			// their world's traces (docs/user-guide.md: each world is
			// analysed on its own); nothing else is amiss.
			want := map[string][]string{"spawn": {"2 receive(s) found no matching send (a missing or cut trace, or inconsistent traces); their Real Sync is not counted."}, spawned: nil}
			for _, app := range []string{"spawn", spawned} {
				r, _ := analyse(t, dir, app)
				checkInvariants(t, r, 2)
				if !slices.Equal(r.Warnings, want[app]) {
					t.Errorf("%s: warnings %q, want %q", app, r.Warnings, want[app])
				}
				if len(r.Intervals[0].Ranks) != 2 {
					t.Errorf("%s: %d ranks", app, len(r.Intervals[0].Ranks))
				}
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "*.spill")); len(m) != 0 {
				t.Errorf("spill files left: %v", m)
			}
		})
	}
}
