// Package ptojit holds what belongs to the repository as a whole: the
// environment registry _environment.json, which classifies every
// environment variable ptojit's own sources read and every variable a build
// takes into account (the semantic ones go into the key, the
// tool_resolution ones must be identified by the toolchain adapters, the
// fresh_request ones bypass the cache). The file lives at the repository
// root, where the envaudit lint and CI read it; the build driver embeds it
// from here. Standard library only.
package ptojit

import _ "embed"

// EnvironmentRegistry is the text of _environment.json (read it with
// envreg.ParseRegistry).
//
//go:embed _environment.json
var EnvironmentRegistry string
