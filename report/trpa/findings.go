package trpa

import (
	"fmt"

	"github.com/dtpa/dtpa/report"
)

// lossNames are the loss kinds as the report's tables name them.
var lossNames = map[string]string{
	report.LossRealSync:      "Real sync",
	report.LossPotentialSync: "Potential sync",
	report.LossCommunication: "Communication",
	report.LossIdle:          "Idle time",
	report.LossInsufficient:  "Insufficient parallelism",
}

// findings prints the report's findings, the first thing a reader sees:
// the verdict, then the largest losses one a line.
func (p *printer) findings(r *report.Report) {
	f := r.Findings
	if f == nil {
		return
	}
	p.printf("\nFindings:\n  %s\n", f.Verdict)
	if len(f.Losses) == 0 {
		return
	}
	where := "the whole program"
	if len(f.Interval) > 0 {
		where = "interval " + report.PathString(f.Interval)
	}
	p.printf("  Largest losses in %s (seconds, %% of its Total time):\n", where)
	for _, l := range f.Losses {
		at := ""
		if l.Function != "" {
			at = " in " + l.Function
			if l.File != "" {
				at += fmt.Sprintf(" at %s:%d", shortFile(l.File), l.Line)
			} else if l.Caller != "" {
				at += " from " + l.Caller
			}
		}
		if l.LateRank >= 0 {
			at += fmt.Sprintf(", waiting for rank %d", l.LateRank)
		}
		p.printf("    %s %7s  rank %d  %s%s\n", seconds(l.Seconds), percent(l.Share), l.Rank, lossNames[l.Kind], at)
	}
}
