// Package yamlfield reads a configuration file written in YAML, or in JSON
// (which is YAML), one field at a time, so that every mistake in it is
// reported with the path of its field and its line, all at once.
//
// Decoding a file straight into a Go struct reports mistakes in the
// decoder's words ("cannot unmarshal !!seq into main.planFile"), locates
// some of them and not others, and takes a typo'd key for a missing one
// unless told to be strict. A person who wrote the file deserves each
// mistake named as they wrote it, "tools[2].ceiling" at line 7, and every
// one of them in one pass. So a parser takes the document's node tree from
// [Parse] (go.yaml.in/yaml/v3 nodes) and walks it with a [Walker]:
// [Walker.Fields] yields the fields of a mapping in the order written,
// [Walker.Items] the items of a list, and [Walker.String], [Walker.Scalar],
// [Walker.Int], [Walker.Int64], [Walker.Bool] and [Walker.Duration] read
// values. Fields and Items yield [Field] values, each carrying its own path
// and line, so that a parser never builds a path or looks up a line. What is
// wrong is collected as [*Error] values, which the parser turns into its
// own error type, with its own wording around the walker's. Glidepath's tool
// config (package tools), its scenario files (package sim) and harness
// plan's files are read this way, so one mistake reads the same in each.
//
// # Rules
//
// Every file read with this package shares these rules:
//
//   - A file holds one document. An empty one, one of only comments and a
//     null one are all empty: Parse returns a nil root. A second document
//     is an error ([ErrSecondDocument]).
//   - A key is a scalar ([ErrKey]), is given once ([ErrRepeated], naming
//     the line of the first), and is one the parser knows
//     ([*UnknownFieldError], listing those it knows).
//   - A null value (key:, key: ~, "key": null) is a field left out. Its key
//     is checked as any other, then the field is not yielded.
//   - Values have YAML's types, as JSON has them: a string is a string
//     ("12" is one, 12 is not), an integer an integer, a boolean true or
//     false (not yes or no). Where the text as written is what matters,
//     a header value, an argv item, [Walker.Scalar] takes any of them.
//   - A duration is a Go duration string ("250ms", "1m30s") and is never
//     negative ([ErrNegative]); 0 is one too.
//
// # Aliases
//
// Aliases (*name, and so the merge key "<<: *name") are refused: Parse
// reports the first one as an [ErrAlias] naming its line and the line of
// its anchor, before any field is read. Following them is not worth what
// it costs, and a rule that follows them partly (one step, or in scalars
// only) is one nobody remembers:
//
//   - JSON, the format the tool config is specified in (SPEC §5), has no
//     aliases, so refusing them loses nothing a specified file can say.
//     These files are small enough to write out.
//   - A value reached through an alias stands at two lines, where it was
//     anchored and where it is used. An error about it could name only one,
//     and the wrong one for half of its uses.
//   - A walk that follows aliases can be made exponential by a dozen lines
//     ("billion laughs"), and free-form values (a tool's JSON Schema, a
//     scenario's tool-call arguments) are decoded whole with
//     [yaml.Node.Decode]. With no alias anywhere in the tree, the walk and
//     every decode are linear in the size of the file.
//
// Anchors alone (&name with no alias) are harmless and allowed.
//
// # Errors
//
// Parse fails with one [*Error]: the YAML library's syntax error restated
// with the line of the fault, a second document, or an alias. The library
// numbers some syntax errors by the line where the enclosing list or
// mapping began, counted from 0 (a misindented key on line 5 comes back
// "line 1"); Parse finds the line again as the first one at which the
// document, cut there, fails with the same problem (issue 18), for
// documents of up to 2000 lines. A [Walker] collects an
// [*Error] for each mistake, in the order the walk meets them; its Err is
// one of this package's sentinels, a [*UnknownFieldError], or the parser's
// own error passed to [Walker.Fail] or [Walker.Report]. Nothing here panics
// on any input.
package yamlfield
