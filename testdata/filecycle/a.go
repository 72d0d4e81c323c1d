// Package filecycle is the fixture of TestFileCyclesFound: a.go, b.go and
// c.go reference each other in a cycle; so do d.go and e.go, through a
// method; f.go only uses the others, which is allowed.
package filecycle

// A uses b.go.
func A() int { return B() }
