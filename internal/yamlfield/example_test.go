package yamlfield_test

import (
	"fmt"
	"time"

	"github.com/glidepath/glidepath/internal/yamlfield"
)

// A parser walks the fields it knows and reads each value with the reader
// of its type; what is wrong is collected, every mistake with its line.
func Example() {
	file := []byte(`
servers:
  - name: a
    timeout: 5s
  - name: b
    timout: 5s
    timeout: soon
  - name: 3
`)
	type server struct {
		Name    string
		Timeout time.Duration
	}
	root, err := yamlfield.Parse(file)
	if err != nil {
		fmt.Println(err)
		return
	}
	var w yamlfield.Walker
	var servers []server
	for f := range w.Fields(yamlfield.Root(root), "servers") {
		for item := range w.Items(f) {
			var s server
			for f := range w.Fields(item, "name", "timeout") {
				switch f.Name {
				case "name":
					s.Name, _ = w.String(f)
				case "timeout":
					s.Timeout, _ = w.Duration(f)
				}
			}
			servers = append(servers, s)
		}
	}
	for _, e := range w.Errs() {
		fmt.Println(e)
	}
	fmt.Println(servers[0])
	// Output:
	// yamlfield: line 6: servers[1].timout: unknown field (known: name, timeout)
	// yamlfield: line 7: servers[1].timeout "soon": not a duration such as "1s" or "250ms"
	// yamlfield: line 8: servers[2].name "3": not a string
	// {a 5s}
}
