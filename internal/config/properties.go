package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// property is one key and value of a properties file, with its line.
type property struct {
	key, value string
	line       int
}

// parseProperties reads the java.util.Properties format that Spark uses for
// spark-defaults.conf (Spark loads it with Properties.load and trims the
// values):
//   - lines whose first non-blank character is '#' or '!' are comments;
//     blank lines are ignored;
//   - the key ends at the first unescaped '=', ':' or white space; white
//     space around the separator is skipped, so "k v", "k=v", "k = v" and
//     "k: v" are the same, and a key alone has the value "";
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading white space is dropped;
//   - escapes: \t \n \r \f \uXXXX, and a backslash before any other
//     character stands for that character (so "\=" and "\ " can be part of
//     a key);
//   - values are trimmed; a later line for the same key wins.
func parseProperties(text string) ([]property, error) {
	var out []property
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines. A comment line is never continued.
		for endsWithOddBackslashes(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if endsWithOddBackslashes(line) {
			line = line[:len(line)-1] // a continuation at end of file
		}
		rawKey, rawValue := splitProperty(line)
		key, err := unescapeProperty(rawKey)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		value, err := unescapeProperty(rawValue)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		out = append(out, property{key: key, value: strings.TrimSpace(value), line: lineNo})
	}
	return out, nil
}

func endsWithOddBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line into its raw (still escaped) key and
// value, as java.util.Properties.load does.
func splitProperty(line string) (key, value string) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // skip the escaped character
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	key, rest := line[:end], line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return "", fmt.Errorf("malformed \\uxxxx escape in %q", s)
			}
			i += 4
			// A UTF-16 surrogate pair is written as two escapes.
			if utf16.IsSurrogate(r) && strings.HasPrefix(s[i+1:], `\u`) {
				if r2, ok := hex4(s, i+3); ok {
					if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
						r = d
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// hex4 decodes the four hexadecimal digits of a \u escape at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s[i:i+4], 16, 16)
	return rune(n), err == nil
}
