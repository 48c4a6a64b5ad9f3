package reporttest

import (
	"testing"

	"github.com/dtpa/dtpa/report"
)

// TestFixturesConsistent: every fixture passes the invariant check the
// analyzer's reports pass, so golden reports hold only figures the
// analyzer can produce.
func TestFixturesConsistent(t *testing.T) {
	for name, r := range map[string]*report.Report{"Full": Full(), "Minimal": Minimal(), "Wide(12)": Wide(12)} {
		for _, err := range report.Check(r) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
