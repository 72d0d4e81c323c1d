package worker

import _ "embed"

// subChildScript is the Python SUB child loop, run as python3 -c.
//
//go:embed subchild.py
var subChildScript string
