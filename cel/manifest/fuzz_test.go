package manifest

import (
	"testing"
)

// FuzzParse feeds arbitrary bytes to the manifest reader and asks for positions of fields and
// expression characters: it must never panic, whatever the input.
func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: X\nspec:\n  expression: |\n    a &&\n      b.c\n"))
	f.Add([]byte("apiVersion: v1\nkind: X\nspec: {expression: \"a \\\" \\u00e9 b\"}\n---\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("- 1\n"))
	f.Add([]byte("{\"apiVersion\": \"v1\", \"kind\": \"X\", \"spec\": {\"expression\": 'x'}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, _ := Parse("fuzz.yaml", data)
		for _, d := range docs {
			_ = d.FieldPos("spec.expression")
			_ = d.KeyPos("spec.validations[0].expression")
			for line := 0; line < 3; line++ {
				for col := -1; col < 40; col += 3 {
					_ = d.ExprPos("spec.expression", line, col)
				}
			}
			var v map[string]any
			_ = d.Decode(&v)
		}
	})
}
