package report

// indentJSON appends to dst the compact JSON value src (as json.Marshal
// writes it: no white space outside strings) indented with two spaces per
// level, exactly as json.Indent(dst, src, "", "  ") indents it: a
// newline and the indentation after '{', '[' and ',' and before the
// closing '}' or ']', a space after ':', empty objects and arrays kept
// as {} and []. json.Indent runs its validating scanner over every byte,
// which costs more than marshalling the report; a value from json.Marshal
// needs only its strings told apart.
// TestIndentJSON compares the two.
func indentJSON(dst, src []byte) []byte { return indentJSONAt(dst, src, 0) }

// indentJSONAt is indentJSON for a value (or the members of an object)
// at depth depth of the whole.
func indentJSONAt(dst, src []byte, depth int) []byte {
	newline := func(d int) {
		dst = append(dst, '\n')
		for range d {
			dst = append(dst, "  "...)
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '"':
			// A string, copied whole: up to the first quote not escaped.
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src))
			dst = append(dst, src[i:j]...)
			i = j - 1
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline(depth)
		case ',':
			dst = append(dst, c)
			newline(depth)
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			depth--
			newline(depth)
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
