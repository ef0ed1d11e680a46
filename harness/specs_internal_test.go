package harness

import "testing"

// lookup finds a tool by name as a map of the list would: the last of a
// name wins, and a name not on the list is unknown.
func TestToolSpecsLookup(t *testing.T) {
	specs := toolSpecs{
		{Name: "search", Description: "first"},
		{Name: "fetch"},
		{Name: "search", Description: "second"},
	}
	cases := []struct {
		name      string
		wantOK    bool
		wantDescr string
	}{
		{"search", true, "second"},
		{"fetch", true, ""},
		{"write", false, ""},
		{"", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp, ok := specs.lookup(tc.name)
			if ok != tc.wantOK || sp.Description != tc.wantDescr {
				t.Errorf("lookup(%q) = %q, %v; want %q, %v", tc.name, sp.Description, ok, tc.wantDescr, tc.wantOK)
			}
			if ok && sp.Name != tc.name {
				t.Errorf("lookup(%q) returned %q", tc.name, sp.Name)
			}
		})
	}
	if _, ok := toolSpecs(nil).lookup("search"); ok {
		t.Error("a nil list knows a tool")
	}
}
