// Package envreg reads and validates an environment registry, the
// _environment.json file that classifies every environment variable a code
// base reads. It uses the standard library only: the build driver and the
// lint (package envaudit) both read registries through it, and neither
// needs cgo for that.
//
// A registry is a JSON object:
//
//	{"schema": 1,
//	 "variables": {NAME: {"category": CATEGORY, "reason": TEXT[, "secret": true]}, ...},
//	 "dynamic_reads": [{"path": PATH, "function": FUNCTION, "reason": TEXT}, ...]}
//
// NAME matches [A-Z][A-Z0-9_]*, CATEGORY is one of semantic,
// tool_resolution, fresh_request, nonsemantic, and every reason is
// non-empty. "secret": true marks a credential (a nonsemantic variable
// only): ptojit never prints its value, never puts it in a key and never
// passes it to the tools. A dynamic-read exception names one exact file (a clean path
// relative to the repository root, no leading "/", no "*") and one function
// in it; it allows the dynamic reads of that function only and never hides a
// literal name. Unknown keys are ignored; a name or exception listed twice is
// an error. The build driver (package jit) reads its registry through
// ParseRegistry, the lint (package envaudit) through LoadRegistry.
//
// A Registry is immutable once built and safe for concurrent use.
package envreg
