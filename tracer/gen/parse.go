package main

import (
	"debug/elf"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
)

// Param is one parameter of an MPI prototype, renamed to a<i> so that the
// wrapper table can refer to arguments by position (positions are fixed by
// the MPI standard, names differ between implementations).
type Param struct {
	Decl string // declaration with the name a<i>, e.g. "const int a2[]"
	Type string // declaration without name, whitespace-normalized
}

// Proto is an MPI function prototype from the installed mpi.h.
type Proto struct {
	Name     string
	Ret      string
	Params   []Param
	Variadic bool
}

// preprocess runs the C preprocessor on a file including mpi.h, so that
// conditionals and macros (deprecation attributes, MPI-1 compatibility
// switches) are resolved exactly as a program compiling against it sees them.
func preprocess(cflags []string) (string, error) {
	args := append([]string{"-E", "-P", "-x", "c"}, cflags...)
	args = append(args, "-")
	cmd := exec.Command("gcc", args...)
	cmd.Stdin = strings.NewReader("#include <mpi.h>\n")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("preprocessing mpi.h (gcc %s): %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// stripAttributes removes __attribute__((...)) groups, which may nest.
func stripAttributes(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "__attribute__")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := i + len("__attribute__")
		for j < len(s) && s[j] != '(' {
			j++
		}
		depth := 0
		for ; j < len(s); j++ {
			if s[j] == '(' {
				depth++
			} else if s[j] == ')' {
				depth--
				if depth == 0 {
					j++
					break
				}
			}
		}
		s = s[j:]
	}
}

var (
	declRE  = regexp.MustCompile(`^(?:extern\s+)?([A-Za-z_][\w\s\*]*?)\s*\b(MPI_[A-Za-z0-9_]+)\s*\((.*)\)$`)
	paramRE = regexp.MustCompile(`^(.*?)([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$`)
	spaceRE = regexp.MustCompile(`\s+`)
)

// parseProtos extracts every MPI_ function declaration of preprocessed text.
func parseProtos(text string) []Proto {
	text = stripAttributes(text)
	var stmts []string
	var cur strings.Builder
	depth := 0
	for _, r := range text {
		switch {
		case r == '{':
			depth++
		case r == '}':
			depth--
		case depth > 0:
		case r == ';':
			stmts = append(stmts, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	seen := map[string]bool{}
	var protos []Proto
	for _, s := range stmts {
		s = strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
		if strings.HasPrefix(s, "typedef") {
			continue
		}
		m := declRE.FindStringSubmatch(s)
		if m == nil || seen[m[2]] {
			continue
		}
		p, ok := parseParams(m[3])
		if !ok {
			continue
		}
		p.Name, p.Ret = m[2], strings.TrimSpace(m[1])
		seen[p.Name] = true
		protos = append(protos, p)
	}
	sort.Slice(protos, func(i, j int) bool { return protos[i].Name < protos[j].Name })
	return protos
}

func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func parseParams(s string) (Proto, bool) {
	var p Proto
	s = strings.TrimSpace(s)
	if s == "" || s == "void" {
		return p, true
	}
	for i, raw := range splitTop(s) {
		raw = strings.TrimSpace(raw)
		if raw == "..." {
			p.Variadic = true
			continue
		}
		if strings.Contains(raw, "(") {
			return p, false // inline function-pointer parameter: not in mpi.h today
		}
		name := fmt.Sprintf("a%d", i)
		m := paramRE.FindStringSubmatch(raw)
		prefix := ""
		if m != nil {
			prefix = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(m[1], "const", ""), "*", ""))
		}
		var decl, typ string
		if prefix == "" {
			// Unnamed parameter: the last identifier is the type.
			decl = raw + " " + name
			typ = raw
		} else {
			decl = m[1] + name + m[3]
			typ = strings.TrimSpace(m[1]) + strings.ReplaceAll(m[3], " ", "")
		}
		typ = strings.TrimSpace(spaceRE.ReplaceAllString(strings.ReplaceAll(typ, "*", " * "), " "))
		p.Params = append(p.Params, Param{Decl: decl, Type: typ})
	}
	return p, true
}

// librarySymbols lists the dynamic symbols a shared library defines, so that
// only functions the library really exports are wrapped (a header may declare
// functions an older library lacks).
func librarySymbols(path string) (map[string]bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, err
	}
	m := make(map[string]bool, len(syms))
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF {
			m[s.Name] = true
		}
	}
	return m, nil
}
