package srcchar

import (
	"os"
	"strings"
)

// pyFuncs are the enclosing functions of a Python source file's lines
// (pyFunctions), read once per file; nil when the file cannot be read.
type pyFuncs []string

// pyFunction names the function whose body holds line of the Python
// source file, as CPython's qualified names do ("Class.method",
// "outer.<locals>.inner", "<module>"), for a frame the tracer recorded as
// file and line (a source-file module): the trace holds no function name.
// The file is read where the analysis runs; "" when it cannot be, or the
// line is not in it. A lambda's or comprehension's line reads as the
// function around it.
func (s *Symbolizer) pyFunction(file string, line int) string {
	if !strings.HasSuffix(file, ".py") {
		return ""
	}
	if s.py == nil {
		s.py = map[string]pyFuncs{}
	}
	f, ok := s.py[file]
	if !ok {
		if b, err := os.ReadFile(file); err == nil {
			f = pyFunctions(string(b))
		}
		s.py[file] = f
	}
	if line < 1 || line > len(f) {
		return ""
	}
	return f[line-1]
}

// pyFunctions maps each line of Python source src to the qualified name of
// the function or class body holding it, by indentation: a line belongs to
// the innermost def or class above it that is indented less. Lines of a
// triple-quoted string are the string's; lines inside brackets spanning
// lines count by their own indentation (a heuristic, not a parser).
func pyFunctions(src string) pyFuncs {
	type scope struct {
		indent int
		name   string // qualified
		def    bool   // a function (nested names get .<locals>.)
	}
	var stack []scope
	lines := strings.Split(src, "\n")
	out := make(pyFuncs, len(lines))
	str := "" // the quotes of a string a line before left open
	for i, l := range lines {
		body := strings.TrimLeft(l, " \t")
		indent := len(l) - len(body)
		open := str
		for _, q := range []string{`"""`, `'''`} {
			if (str == "" || str == q) && strings.Count(l, q)%2 == 1 {
				if str == "" {
					str = q
				} else {
					str = ""
				}
			}
		}
		if open == "" && body != "" && !strings.HasPrefix(body, "#") {
			for len(stack) > 0 && indent <= stack[len(stack)-1].indent {
				stack = stack[:len(stack)-1]
			}
		}
		name := "<module>"
		if len(stack) > 0 {
			name = stack[len(stack)-1].name
		}
		out[i] = name
		if open != "" {
			continue
		}
		kw := strings.TrimPrefix(body, "async ")
		var def bool
		switch {
		case strings.HasPrefix(kw, "def "):
			def, kw = true, kw[4:]
		case strings.HasPrefix(kw, "class "):
			kw = kw[6:]
		default:
			continue
		}
		kw = strings.TrimLeft(kw, " \t")
		n := strings.IndexFunc(kw, func(r rune) bool {
			return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 127)
		})
		if n <= 0 {
			continue
		}
		q := kw[:n]
		if len(stack) > 0 {
			p := stack[len(stack)-1]
			q = p.name + "." + q
			if p.def {
				q = p.name + ".<locals>." + kw[:n]
			}
		}
		stack = append(stack, scope{indent: indent, name: q, def: def})
	}
	return out
}
