// Package envaudit checks that every environment variable a code base reads
// is classified in its environment registry, the _environment.json file of
// docs/design.md "Environment registry". It is the static lint behind
// `ptojit envaudit`: it parses sources without importing or running them.
//
// # Registry
//
// The registry's format, its parser and its categories are in package
// envaudit/envreg, which uses no cgo, so the build driver reads the same file
// without linking the lint.
//
// # Reads
//
// A read is either a literal variable name, or a dynamic read: a name the
// scanner cannot resolve statically, or a bulk read of the whole environment.
// Each read carries the function holding it, which is what an exception
// names.
//
// Python (parsed with tree-sitter): os.getenv and os.getenvb; .get, .pop and
// .setdefault of os.environ and os.environb (first argument or key=);
// loads of os.environ[...] and os.environb[...]; any other os.environ.<method>
// call (a dynamic read); an augmented assignment to os.environ
// (`os.environ |= {...}`, a dynamic read) or to os.environ[K] (a read of K),
// which loads before it stores. Names may be reached through `import os as o`,
// `from os import environ as E, getenv` and assignments from os.* names
// (`read = os.environ.get`); `from os import *` binds getenv, getenvb,
// environ and environb. Aliases are lexically scoped: a name bound in a
// scope (assignment, parameter, import, for target, with/except alias, def,
// class, del) does not inherit the enclosing alias there, and methods see the
// module's bindings, not the class's. An argument resolves when it is a string
// literal (implicit concatenation included; an f-string without a
// placeholder is one), a bytes literal that decodes as ASCII, or a module- or
// class-level constant: a name assigned exactly once
// in that scope, at the top level of its body, from a literal or an earlier
// constant, and declared `global` nowhere. A function that binds the name
// anywhere (including a parameter) shadows the constant. Passing, iterating,
// copying or otherwise using os.environ as a value is a bulk read, and so is
// passing a reading function (os.getenv, os.environ.get, ...) as a value;
// storing either in a name makes an alias, storing it anywhere else (an
// attribute, an item, an unpacking) is a bulk read. Reflective access (getattr, __import__,
// importlib) is not recognised. The function of a read is the innermost
// enclosing def, or "<module>".
//
// Python sources are read as Python 3.10 reads them: a UTF-8 BOM is dropped,
// a PEP 263 coding cookie selects the encoding (UTF-8, Latin-1 and ASCII are
// decoded; any other is a finding), and literals decode exactly as Python
// decodes them (octal, \x, \u, \U, \N{name} with the names of
// golang.org/x/text/unicode/runenames plus the name aliases, raw and bytes
// literals, doubled braces of f-strings, universal newlines). Every file is
// parsed, and one Python would not compile is a "syntax" finding with line
// and column (PyPTO's lint fails on it): a tree-sitter error, a construct
// tree-sitter accepts and Python 3.10 rejects (Python 2 print and exec
// statements, <>, backticks, 10L, 0777, the ur prefix, except*, type
// statements and parameters), undecodable bytes, a bad escape or an unknown
// character name, bytes mixed with str, a NUL byte. Output never carries raw
// source bytes: names and messages are escaped where they hold anything but
// printable characters.
//
// C++ (a lexer of its own that skips comments, string and character
// literals, raw strings R"d(...)d" and digit separators, and splices line
// continuations): every getenv( and secure_getenv( call. Adjacent string
// literals are joined into one name; any other argument is a dynamic read.
// The line is that of the call; the function is "<cpp>".
//
// Go (go/parser): os.Getenv, os.LookupEnv, syscall.Getenv, and calls
// through any function value or method named Getenv, getenv, LookupEnv or
// lookupEnv (ptojit passes os.Getenv around as cli.Env.Getenv); os.Environ,
// syscall.Environ, os.ExpandEnv and os.Expand are bulk reads. Arguments
// resolve when they are string literals or constant expressions of them,
// including package-level constants declared in other files of the package
// and, in a whole-module audit (a go.mod at the root), exported constants of
// the module's other packages (pkg.Name).
// The function is "Name", "Type.Method", or "<package>" for package-level
// initializers; a function literal counts as its enclosing function.
// Implicit inheritance of the environment by child processes is not a read
// and is not reported.
package envaudit
