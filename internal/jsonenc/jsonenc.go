// Package jsonenc appends JSON to byte slices by hand, for the few
// documents Mandate writes on every admission (the response's patch, the
// decision log's arrays): strings escaped as encoding/json decodes them
// back, and decoded JSON values (objects with sorted keys, arrays,
// strings, numbers, booleans, null) without reflection.
package jsonenc

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json writes it.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				b = append(append(b, s[start:i]...), `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				b = append(append(b, s[start:i]...), `\u202`...)
				b = append(b, hex[r&0xf])
			default:
				i += size
				continue
			}
			i += size
			start = i
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// AppendValue appends v, a decoded JSON value, as JSON: object keys
// sorted, as encoding/json writes them. A value of another type is
// encoded by encoding/json.
func AppendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, fmt.Errorf("unable to encode %v as JSON", x)
		}
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.AppendInt(b, int64(x), 10), nil
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		var err error
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(AppendString(b, k), ':')
			if b, err = AppendValue(b, x[k]); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		var err error
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = AppendValue(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case map[string]string:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(append(AppendString(b, k), ':'), x[k])
		}
		return append(b, '}'), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return b, fmt.Errorf("unable to encode a %T as JSON: %w", v, err)
	}
	return append(b, raw...), nil
}
