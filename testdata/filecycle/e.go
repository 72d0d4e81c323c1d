package filecycle

// Close is declared on d.go's type, which uses it.
func (d *D) Close() { d.open = false }
