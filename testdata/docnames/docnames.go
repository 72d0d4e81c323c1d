// Package docnames is the fixture of TestDocCommentsCatchAMisnamedDoc:
// the docs of startChild and collector start with the names of other
// declarations; the others are right, or start with a word that names
// nothing in the package.
package docnames

// startEndpoint starts a child and its endpoint.
func startChild() {}

// startEndpoint starts an endpoint.
func startEndpoint() {}

// gather collects results.
type collector struct{}

// gather adds one result.
func (c *collector) gather() {}

// collector.reset empties c.
func (c *collector) reset() {}

// A helper that does nothing.
func helper() {}
