package filecycle

// B uses c.go: a function and a field.
func B() int { return C().n }
