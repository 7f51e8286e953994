package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMutationFollowsItsMarker: a mutation lands wherever its marker moved,
// however the code around it was re-indented, and a stale control (marker
// gone, doubled, or its text no longer near it) is an error, not a no-op.
func TestMutationFollowsItsMarker(t *testing.T) {
	const ctl = "Control: x\nTarget: ./x ^T$\nMutate: a.go control:cp\n-\tif ok {\n+\tif !ok {\n"
	for _, tc := range []struct {
		name, src, want string // want "" = an error
	}{
		{"marker on the line", "package a\n\nfunc f() {\n\tif ok { // control:cp\n\t}\n}\n",
			"package a\n\nfunc f() {\n\tif !ok {\n\t}\n}\n"},
		{"marker above, moved and re-indented", "package a\n\n// moved\nfunc g() {}\n\nfunc f() {\n\t// control:cp\n\t\t\tif ok {\n\t}\n}\n",
			"package a\n\n// moved\nfunc g() {}\n\nfunc f() {\n\t// control:cp\n\t\t\tif !ok {\n\t}\n}\n"},
		{"no marker", "package a\n\nfunc f() {\n\tif ok {\n\t}\n}\n", ""},
		{"two markers", "package a\n// control:cp\n// control:cp\nif ok {\n", ""},
		{"a longer marker is another", "package a\n// control:cpx\nif ok {\n", ""},
		{"text gone", "package a\n// control:cp\nif done {\n", ""},
		{"text out of reach", "package a\n// control:cp\n" + strings.Repeat("\n", reach+1) + "if ok {\n", ""},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		cp := filepath.Join(dir, "c.patch")
		if err := os.WriteFile(cp, []byte(ctl), 0o644); err != nil {
			t.Fatal(err)
		}
		ms, err := parse(cp)
		if err != nil {
			t.Fatalf("%s: parse: %v", tc.name, err)
		}
		err = apply(dir, ms[0])
		got, _ := os.ReadFile(filepath.Join(dir, "a.go"))
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: applied, want an error; got\n%s", tc.name, got)
		case tc.want != "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && string(got) != tc.want:
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
