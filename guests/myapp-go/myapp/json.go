package myapp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// decode reads one JSON value, numbers as json.Number: an integer stays exact, and a number written
// back (resources, the annotation's template) keeps its text.
func decode(text string) (any, error) {
	decoder := json.NewDecoder(strings.NewReader(text))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil {
		return nil, err
	}
	if decoder.More() {
		return nil, &json.SyntaxError{Offset: decoder.InputOffset()}
	}
	return value, nil
}

// toJSON writes a value compactly, without escaping <, > and & (the Rust guest does not). Everything
// this package writes is plain data, which always encodes.
func toJSON(value any) string {
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(value); err != nil {
		panic("plain data always encodes: " + err.Error())
	}
	return strings.TrimSuffix(out.String(), "\n")
}

// object is a JSON object, or nil if value is anything else.
func object(value any) map[string]any {
	object, _ := value.(map[string]any)
	return object
}

// str is a JSON string, and whether value is one.
func str(value any) (string, bool) {
	text, ok := value.(string)
	return text, ok
}

// path walks nested objects by key; nil where one is missing or not an object.
func path(value any, keys ...string) any {
	for _, key := range keys {
		value = object(value)[key]
	}
	return value
}

// jsonNumber is how decode reads a number.
type jsonNumber = json.Number

// sortedKeys are the keys of an object in order: the first bad one reported is the same every time,
// as in the Rust guest (serde_json's map is sorted).
func sortedKeys(object map[string]any) []string {
	keys := make([]string, 0, len(object))
	for key := range object {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}
