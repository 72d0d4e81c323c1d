package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ptojit/ptojit/registry"
)

// source is where a request came from: its file name and bytes, and the
// offset of every value by its JSON path, so that errors can point at it.
type source struct {
	file string
	doc  []byte
	locs map[string]int
	// req, once set (under checked.mu, never changed after), is the
	// valid request decoded from doc, which ParseRequestFile copies.
	req *Request
}

// position returns the 1-based line and column (in bytes) of offset off.
func position(doc []byte, off int) (line, col int) {
	off = min(max(off, 0), len(doc))
	line = 1 + bytes.Count(doc[:off], []byte("\n"))
	return line, off - bytes.LastIndexByte(doc[:off], '\n')
}

// locate fills in the file and position of a FieldError that has none:
// the value at its path, else at the nearest enclosing path present.
func (s *source) locate(fe *FieldError) {
	if s == nil || fe.File != "" {
		return
	}
	fe.File = s.file
	for p := fe.Field; ; {
		if off, ok := s.locs[p]; ok {
			fe.Line, fe.Col = position(s.doc, off)
			return
		}
		if p == "" {
			return
		}
		p = parentPath(p)
	}
}

// parentPath returns the path that encloses p: "a.b[2]" -> "a.b" -> "a" -> "".
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// Locate adds the request file and the line and column of the field to a
// *FieldError in err's chain that names no file (the errors a build finds,
// such as a missing source). Other errors are returned as they are.
func (r *Request) Locate(err error) error {
	var fe *FieldError
	if r != nil && errors.As(err, &fe) {
		r.src.locate(fe)
	}
	return err
}

// required lists the fields a request must have, by their path with
// indices replaced by "[]".
var required = []string{"platform", "runtime", "orchestration", "orchestration.source", "orchestration.function", "kernels[].source"}

var (
	rawType       = reflect.TypeFor[json.RawMessage]()
	directionType = reflect.TypeFor[registry.Direction]()
)

// checker walks a request document alongside the Request type, recording
// where every value starts, and reports the first value that does not fit
// its field in the user's terms.
type checker struct {
	dec *json.Decoder
	src *source
}

func (c *checker) fail(off int, path, format string, args ...any) *FieldError {
	line, col := position(c.src.doc, off)
	return &FieldError{Field: path, Msg: fmt.Sprintf(format, args...), File: c.src.file, Line: line, Col: col}
}

// next returns the next token and the offset where it starts.
func (c *checker) next(path string) (json.Token, int, error) {
	off := int(c.dec.InputOffset())
	for off < len(c.src.doc) && strings.IndexByte(" \t\r\n:,", c.src.doc[off]) >= 0 {
		off++
	}
	tok, err := c.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			// The decoder's offsets are not always absolute: point at
			// the token that failed.
			return nil, off, c.fail(off, path, "invalid JSON: %s", strings.TrimPrefix(se.Error(), "json: "))
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, off, c.fail(len(c.src.doc), path, "the document ends early: a value, ',' or a closing bracket is missing")
		}
		return nil, off, c.fail(off, path, "invalid JSON: %v", err)
	}
	return tok, off, nil
}

// describe names a token for people.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "a list"
		}
		return "an object"
	case string:
		return "the string " + strconv.Quote(v)
	case json.Number:
		return "the number " + v.String()
	case bool:
		return "the boolean " + strconv.FormatBool(v)
	case nil:
		return "null"
	}
	return fmt.Sprint(tok)
}

// expect says what a value of type t must be, in the user's terms.
func expect(t reflect.Type) string {
	switch {
	case t == directionType:
		return "a direction: IN, OUT, INOUT or SCALAR (or 1, 2, 3, 0)"
	case t.Kind() == reflect.Slice && t.Elem() == directionType:
		return "a list of directions: IN, OUT, INOUT, SCALAR"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Int32:
		return "an integer"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return "a list of paths (strings)"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return "a list of objects with the fields " + strings.Join(fieldNames(t.Elem()), ", ")
	case t.Kind() == reflect.Struct:
		return "an object with the fields " + strings.Join(fieldNames(t), ", ")
	}
	return t.String()
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if n := jsonName(t.Field(i)); n != "" && n != "-" {
			out = append(out, n)
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// generic replaces indices by "[]": "kernels[3].source" -> "kernels[].source".
func generic(path string) string {
	var b strings.Builder
	skip := false
	for _, r := range path {
		switch {
		case r == '[':
			skip = true
			b.WriteString("[]")
		case r == ']':
			skip = false
		case !skip:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// value checks one value of type t at path.
func (c *checker) value(t reflect.Type, path string) error {
	tok, off, err := c.next(path)
	if err != nil {
		return err
	}
	c.src.locs[path] = off
	if tok == nil {
		return nil // null: absent, as encoding/json reads it
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem() // an optional object (a compile recipe)
	}
	wrong := func() error {
		return c.fail(off, path, "must be %s, not %s", expect(t), describe(tok))
	}
	switch {
	case t == rawType:
		return c.skip(tok, path)
	case t == directionType:
		switch v := tok.(type) {
		case string:
			for _, d := range []registry.Direction{registry.Scalar, registry.In, registry.Out, registry.InOut} {
				if strings.EqualFold(v, d.String()) {
					return nil
				}
			}
			return c.fail(off, path, "unknown direction %q: want IN, OUT, INOUT or SCALAR", v)
		case json.Number:
			if n, err := v.Int64(); err == nil && registry.Direction(n).Valid() {
				return nil
			}
			return c.fail(off, path, "direction %s is out of range: want IN, OUT, INOUT or SCALAR (or 1, 2, 3, 0)", v)
		}
		return wrong()
	case t.Kind() == reflect.String:
		if _, ok := tok.(string); !ok {
			return wrong()
		}
	case t.Kind() == reflect.Int32:
		n, ok := tok.(json.Number)
		if !ok {
			return wrong()
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || i < math.MinInt32 || i > math.MaxInt32 {
			return c.fail(off, path, "must be an integer from %d to %d, not %s", math.MinInt32, math.MaxInt32, n)
		}
	case t.Kind() == reflect.Slice:
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return wrong()
		}
		for i := 0; c.dec.More(); i++ {
			if err := c.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, _, err := c.next(path)
		return err
	case t.Kind() == reflect.Struct:
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return wrong()
		}
		return c.object(t, path, off)
	default:
		return c.skip(tok, path)
	}
	return nil
}

// object checks the members of an object of struct type t, whose '{' was
// at off.
func (c *checker) object(t reflect.Type, path string, off int) error {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		if n := jsonName(t.Field(i)); n != "" && n != "-" {
			fields[n] = t.Field(i).Type
		}
	}
	seen := map[string]bool{}
	for c.dec.More() {
		tok, koff, err := c.next(path)
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		ft, ok := fields[key]
		if !ok {
			return c.fail(koff, join(path, key), "unknown field %q; the fields here are %s", key, strings.Join(fieldNames(t), ", "))
		}
		seen[key] = true
		if err := c.value(ft, join(path, key)); err != nil {
			return err
		}
	}
	if _, _, err := c.next(path); err != nil {
		return err
	}
	for _, n := range fieldNames(t) {
		p := join(path, n)
		if !seen[n] && slices.Contains(required, generic(p)) {
			return c.fail(off, p, "missing (%s)", missingHint(p, fields[n]))
		}
	}
	return nil
}

// skip consumes the rest of a value that started with tok.
func (c *checker) skip(tok json.Token, path string) error {
	d, ok := tok.(json.Delim)
	if !ok || (d != '[' && d != '{') {
		return nil
	}
	for depth := 1; depth > 0; {
		tok, _, err := c.next(path)
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// check walks the whole document.
func (c *checker) check() error {
	start := int(c.dec.InputOffset())
	for start < len(c.src.doc) && strings.IndexByte(" \t\r\n", c.src.doc[start]) >= 0 {
		start++
	}
	if start == len(c.src.doc) {
		return c.fail(start, "", "empty document: a request is a JSON object (see \"ptojit help build\")")
	}
	if bytes.HasPrefix(c.src.doc[start:], []byte("null")) {
		return c.fail(start, "", "must be %s, not null", expect(reflect.TypeFor[Request]()))
	}
	if err := c.value(reflect.TypeFor[Request](), ""); err != nil {
		return err
	}
	off := int(c.dec.InputOffset())
	for off < len(c.src.doc) && strings.IndexByte(" \t\r\n", c.src.doc[off]) >= 0 {
		off++
	}
	if off < len(c.src.doc) {
		return c.fail(off, "", "unexpected data after the request object")
	}
	return nil
}

// missingHint says what a missing field should hold.
func missingHint(path string, t reflect.Type) string {
	switch path {
	case "platform":
		return "one of " + strings.Join(registry.Platforms, ", ")
	case "runtime":
		return "the runtime's name, e.g. tensormap_and_ringbuffer"
	case "orchestration.function":
		return "the orchestration's entry symbol, a C identifier"
	}
	if strings.HasSuffix(path, "source") {
		return "the path of the source file"
	}
	return expect(t)
}
