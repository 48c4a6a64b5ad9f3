package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// GroupWarnings merges warnings that say the same of different ranks
// ("Rank 1: X", "Rank 3: X") into one line listing the ranks ("Ranks 1, 3:
// X"), at the place of the first, so that a problem every rank has is
// one line, not one per rank. Other warnings are kept once each, in
// order.
func GroupWarnings(ws []string) []string {
	type group struct {
		rest  string // the text after "Rank N: "; "" for a warning kept as is
		whole string
		ranks []int
	}
	var groups []*group
	byRest := map[string]*group{}
	seen := map[string]bool{}
	for _, w := range ws {
		rank, rest, ok := rankPrefix(w)
		if !ok {
			if !seen[w] {
				seen[w] = true
				groups = append(groups, &group{whole: w})
			}
			continue
		}
		g := byRest[rest]
		if g == nil {
			g = &group{rest: rest}
			byRest[rest] = g
			groups = append(groups, g)
		}
		g.ranks = append(g.ranks, rank)
	}
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		slices.Sort(g.ranks)
		g.ranks = slices.Compact(g.ranks)
		switch {
		case g.rest == "":
			out = append(out, g.whole)
		case len(g.ranks) == 1:
			out = append(out, fmt.Sprintf("Rank %d: %s", g.ranks[0], g.rest))
		default:
			out = append(out, fmt.Sprintf("Ranks %s: %s", Ranges(g.ranks), g.rest))
		}
	}
	return out
}

// rankPrefix splits "Rank N: rest".
func rankPrefix(w string) (rank int, rest string, ok bool) {
	s, found := strings.CutPrefix(w, "Rank ")
	if !found {
		return 0, "", false
	}
	num, rest, found := strings.Cut(s, ": ")
	if !found {
		return 0, "", false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, "", false
	}
	return n, rest, true
}

// RanksOf names ranks in words: "rank 3", "ranks 0-3, 5".
func RanksOf(ranks []int) string {
	if len(ranks) == 1 {
		return "rank " + strconv.Itoa(ranks[0])
	}
	return "ranks " + Ranges(ranks)
}

// Ranges lists ranks compactly: runs of consecutive ranks as "first-last"
// ("0-3, 5, 7, 8"), in the order given.
func Ranges(ranks []int) string {
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		switch {
		case i == j:
			parts = append(parts, strconv.Itoa(ranks[i]))
		case j == i+1:
			parts = append(parts, strconv.Itoa(ranks[i]), strconv.Itoa(ranks[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
