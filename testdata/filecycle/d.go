package filecycle

// D is a type whose method lives in e.go.
type D struct{ open bool }

func useD(d *D) { d.Close() }
